package store

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// MaxChangeBytes bounds the edit text FileChanges reads for one session;
// edits past it are listed without their text, and their files' content
// is not known.
const MaxChangeBytes = 4 << 20

// FileChange is what a session did to one file: every edit in order, and,
// where the edits tell it, the whole content before the first edit and
// after the last.
type FileChange struct {
	Path string `json:"path"`
	// Known is set when Before and After are the file's whole content:
	// the session created it (its first step on it is a full write) and
	// every later edit that succeeded applies to the content so far.
	Known  bool   `json:"known"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Created by the session; DeletedAt is the seq of a command that
	// removed it (rm or git rm naming it), if any.
	Created   bool       `json:"created"`
	DeletedAt *int64     `json:"deleted_at,omitempty"`
	Edits     []FileEdit `json:"edits"`
	Failed    bool       `json:"failed"` // an edit of it failed or was rejected
}

// FileEdit is one edit step on a file. Old and New are left out when the
// session's edits are longer than MaxChangeBytes (Cut).
type FileEdit struct {
	Seq       int64   `json:"seq"`
	FullWrite bool    `json:"full_write"`
	Failed    bool    `json:"failed"` // failed or rejected: the file was not changed
	Old       *string `json:"old,omitempty"`
	New       *string `json:"new,omitempty"`
	Cut       bool    `json:"cut,omitempty"`
}

// FileChanges returns the files a session created, edited, or removed
// after reading or editing them, in order of the first such step, or
// ErrNotFound.
func (s *Store) FileChanges(ctx context.Context, id string) ([]FileChange, error) {
	var out []FileChange
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		var pk, stamp int64
		var root string
		err := sqlitex.Execute(conn, `SELECT pk, workspace_root, updated_at FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
			Args: []any{id},
			ResultFunc: func(st *sqlite.Stmt) error {
				pk, root, stamp = st.ColumnInt64(0), st.ColumnText(1), st.ColumnInt64(2)
				return nil
			},
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		if out = s.changes.get(pk, stamp); out != nil {
			return nil
		}
		if out, err = readFileChanges(conn, pk, root); err != nil {
			return err
		}
		s.changes.put(pk, stamp, out)
		out = cloneChanges(out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: file changes of %s: %w", id, err)
	}
	return out, nil
}

func readFileChanges(conn *sqlite.Conn, pk int64, root string) ([]FileChange, error) {
	files := map[string]*FileChange{}
	var order []string
	read := map[string]bool{} // paths read before any edit of them
	budget := MaxChangeBytes
	file := func(p string) *FileChange {
		f := files[p]
		if f == nil {
			f = &FileChange{Path: p, Edits: []FileEdit{}}
			files[p] = f
			order = append(order, p)
		}
		return f
	}
	err := sqlitex.Execute(conn, `SELECT seq, type, outcome = 'failed' OR decision = 'rejected',
		  json_extract(payload, '$.path'), coalesce(json_extract(payload, '$.is_full_write'), 0),
		  old_string, new_string, coalesce(length(old_string), 0) + coalesce(length(new_string), 0),
		  json_extract(payload, '$.command'), json_extract(payload, '$.cwd')
		FROM steps WHERE session_pk = ? AND (type IN ('edit', 'read')
		  OR (type = 'command' AND outcome != 'failed' AND json_extract(payload, '$.command') LIKE '%rm %'))
		ORDER BY seq`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			seq, typ, failed, p := st.ColumnInt64(0), st.ColumnText(1), st.ColumnBool(2), st.ColumnText(3)
			switch typ {
			case TypeRead:
				if files[p] == nil {
					read[p] = true
				}
			case TypeCommand:
				// Only files the session read or edited: rm -rf of a build
				// folder is not a change to review here.
				for _, gone := range removedPaths(st.ColumnText(8), st.ColumnText(9), root) {
					if files[gone] == nil && !read[gone] {
						continue
					}
					if f := file(gone); f.DeletedAt == nil {
						f.DeletedAt = &seq
					}
				}
			case TypeEdit:
				f := file(p)
				e := FileEdit{Seq: seq, FullWrite: st.ColumnBool(4), Failed: failed}
				if n := st.ColumnInt(7); n <= budget {
					budget -= n
					e.Old, e.New = columnText(st, 5), columnText(st, 6)
				} else {
					budget, e.Cut = 0, true
				}
				f.Edits = append(f.Edits, e)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]FileChange, 0, len(order))
	for _, p := range order {
		f := files[p]
		f.net(read[p])
		out = append(out, *f)
	}
	return out, nil
}

func columnText(st *sqlite.Stmt, col int) *string {
	if st.ColumnIsNull(col) {
		return nil
	}
	s := st.ColumnText(col)
	return &s
}

// net works out the content before the first edit and after the last,
// when the session created the file and each later edit that succeeded
// applies: a full write replaces the content, a string edit replaces the
// first place its old string is at. Failed and rejected edits changed
// nothing.
func (f *FileChange) net(readFirst bool) {
	for _, e := range f.Edits {
		f.Failed = f.Failed || e.Failed
	}
	if len(f.Edits) == 0 || !f.Edits[0].FullWrite || f.Edits[0].Failed {
		return
	}
	f.Created = !readFirst
	if !f.Created {
		return
	}
	content := ""
	for _, e := range f.Edits {
		switch {
		case e.Failed:
			continue
		case e.Cut:
			return
		case e.FullWrite:
			content = deref(e.New)
		default:
			old := deref(e.Old)
			i := strings.Index(content, old)
			if old == "" || i < 0 {
				return
			}
			content = content[:i] + deref(e.New) + content[i+len(old):]
		}
	}
	f.Known, f.After = true, content
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// removedPaths are the files a command line removes with rm or git rm,
// made absolute against its working directory (else the workspace root).
// Lines with quoting, globs or substitutions name no file for certain and
// give none.
func removedPaths(command, cwd, root string) []string {
	if strings.ContainsAny(command, "'\"`$*?{}<>|\\") {
		return nil
	}
	if cwd == "" {
		cwd = root
	}
	var out []string
	for _, part := range strings.FieldsFunc(command, func(r rune) bool { return r == ';' || r == '&' || r == '\n' }) {
		args := strings.Fields(part)
		switch {
		case len(args) > 0 && args[0] == "rm":
			args = args[1:]
		case len(args) > 1 && args[0] == "git" && args[1] == "rm":
			args = args[2:]
		default:
			continue
		}
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if !path.IsAbs(a) {
				a = path.Join(cwd, a)
			}
			out = append(out, path.Clean(a))
		}
	}
	return out
}

// rememberedChangeBytes bounds the edit text changesCache holds.
const rememberedChangeBytes = 32 << 20

// changesCache remembers FileChanges per session and change stamp, as
// wholeSession does the counts and report: the stamp changes with every
// write, so a remembered value is never stale, and a page view or live
// refresh of a long session that did not change costs no scan of its
// edits. Nothing is stored on disk.
type changesCache struct {
	mu    sync.Mutex
	byPK  map[int64]changesEntry
	bytes int
}

type changesEntry struct {
	stamp int64
	files []FileChange
	bytes int
}

// get returns a copy of the remembered changes, or nil.
func (c *changesCache) get(pk, stamp int64) []FileChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byPK[pk]; ok && e.stamp == stamp {
		return cloneChanges(e.files)
	}
	return nil
}

func (c *changesCache) put(pk, stamp int64, files []FileChange) {
	n := 0
	for _, f := range files {
		n += len(f.Path) + len(f.Before) + len(f.After)
		for _, e := range f.Edits {
			n += len(deref(e.Old)) + len(deref(e.New))
		}
	}
	if n > rememberedChangeBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byPK[pk]; ok {
		c.bytes -= old.bytes
	}
	if c.byPK == nil || c.bytes+n > rememberedChangeBytes || len(c.byPK) >= rememberedSessions {
		c.byPK, c.bytes = map[int64]changesEntry{}, 0 // simplest eviction: start over
	}
	c.byPK[pk] = changesEntry{stamp: stamp, files: files, bytes: n}
	c.bytes += n
}

// cloneChanges copies the slices callers may change; the strings are
// shared, as Go strings cannot change.
func cloneChanges(files []FileChange) []FileChange {
	out := slices.Clone(files)
	if out == nil {
		out = []FileChange{}
	}
	for i := range out {
		out[i].Edits = slices.Clone(out[i].Edits)
	}
	return out
}
