package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

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

// FileEdit is one edit step on a file, or a command whose line writes it
// (Command; CommandFiles): its New is what the line says it wrote, when
// it says (cat or tee given a here-document), else New is left out and
// what the file holds after it is not known. Old and New are left out
// when the session's edits are longer than MaxChangeBytes (Cut).
type FileEdit struct {
	Seq       int64   `json:"seq"`
	FullWrite bool    `json:"full_write"`
	Failed    bool    `json:"failed"` // failed or rejected: the file was not changed
	Old       *string `json:"old,omitempty"`
	New       *string `json:"new,omitempty"`
	Cut       bool    `json:"cut,omitempty"`
	Command   bool    `json:"command,omitempty"`
}

// FileChanges returns the files a session created, edited (commands that
// wrote them included), or removed after reading or editing them, in
// order of the first such step, each by its path placed in the workspace
// root (inRoot), or ErrNotFound.
func (s *Store) FileChanges(ctx context.Context, id string) ([]FileChange, error) {
	var out []FileChange
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		var pk int64
		var root string
		err := sqlitex.Execute(conn, `SELECT pk, workspace_root FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
			Args: []any{id},
			ResultFunc: func(st *sqlite.Stmt) error {
				pk, root = st.ColumnInt64(0), st.ColumnText(1)
				return nil
			},
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		out, _, err = s.whole.FileChanges(sqliteBlocks{conn}, pk, root, func(pks []int64, texts map[int64][2]*string) error {
			ids, _ := json.Marshal(pks)
			return sqlitex.Execute(conn, `SELECT pk, old_string, new_string FROM steps WHERE pk IN (SELECT value FROM json_each(?))`, &sqlitex.ExecOptions{
				Args: []any{string(ids)},
				ResultFunc: func(st *sqlite.Stmt) error {
					texts[st.ColumnInt64(0)] = [2]*string{columnText(st, 1), columnText(st, 2)}
					return nil
				},
			})
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: file changes of %s: %w", id, err)
	}
	return out, nil
}

// FileChanges returns session pk's file changes (Backend.FileChanges),
// root being its workspace root, from the remembered ones when the session
// has not changed since; ok is false when it is not stored. readTexts reads
// the old_string and new_string of the edit steps with the given rows into
// the map.
func (w *Tallies) FileChanges(r BlockReader, pk int64, root string, readTexts func(pks []int64, into map[int64][2]*string) error) ([]FileChange, bool, error) {
	e, ok, err := w.entry(r, pk) // whole.go
	if err != nil || !ok {
		return nil, ok, err
	}
	if e.changes != nil {
		return cloneChanges(e.changes), true, nil
	}
	out, texts, err := changesOf(e.changeRows(), root, e.texts, readTexts)
	if err != nil {
		return nil, true, err
	}
	w.rememberChanges(pk, e, out, texts)
	return cloneChanges(out), true, nil
}

// changesOf puts the changes together from the session's rows in seq
// order: edits within MaxChangeBytes, in seq order, come with their
// strings: from known (by pk), else read by readTexts (into the map it is
// given). It returns the strings it used, by pk.
func changesOf(rows []changeRow, root string, known map[int64][2]*string, readTexts func(pks []int64, into map[int64][2]*string) error) ([]FileChange, map[int64][2]*string, error) {
	budget := MaxChangeBytes
	withText := make([]bool, len(rows))
	texts := make(map[int64][2]*string, len(known))
	var pks []int64
	for i, r := range rows {
		if r.typ == TypeCommand {
			// What a command wrote is in its line, already read.
			n := 0
			for _, f := range r.files {
				if f.Content != nil {
					n += len(*f.Content)
				}
			}
			if n <= budget {
				budget -= n
				withText[i] = true
			} else {
				budget = 0
			}
			continue
		}
		if r.typ != TypeEdit {
			continue
		}
		if r.textLen <= budget {
			budget -= r.textLen
			withText[i] = true
			if t, ok := known[r.pk]; ok {
				texts[r.pk] = t
			} else {
				pks = append(pks, r.pk)
			}
		} else {
			budget = 0
		}
	}
	if err := readTexts(pks, texts); err != nil {
		return nil, nil, err
	}
	files := map[string]*FileChange{}
	var order []string
	read := map[string]bool{}          // paths read before any edit of them
	place := newRootPlacer(root).place // inRoot, bounded
	file := func(p string) *FileChange {
		f := files[p]
		if f == nil {
			f = &FileChange{Path: p, Edits: []FileEdit{}}
			files[p] = f
			order = append(order, p)
		}
		return f
	}
	for i, r := range rows {
		switch r.typ {
		case TypeRead:
			if p := place(r.path); files[p] == nil {
				read[p] = true
			}
		case TypeCommand:
			for _, cf := range r.files {
				p := place(cf.Path)
				switch {
				case cf.Removed:
					continue
				case !cf.Write:
					if files[p] == nil {
						read[p] = true
					}
					continue
				}
				e := FileEdit{Seq: r.seq, FullWrite: cf.Whole, Command: true}
				switch {
				case cf.Content == nil: // not in its line
				case withText[i]:
					e.New = cf.Content
				default:
					e.Cut = true
				}
				f := file(p)
				f.Edits = append(f.Edits, e)
			}
			// Only files the session read or edited: rm -rf of a build
			// folder is not a change to review here.
			for _, cf := range r.files {
				gone := place(cf.Path)
				if !cf.Removed || (files[gone] == nil && !read[gone]) {
					continue
				}
				if f := file(gone); f.DeletedAt == nil {
					f.DeletedAt = &r.seq
				}
			}
		case TypeEdit:
			f := file(place(r.path))
			e := FileEdit{Seq: r.seq, FullWrite: r.full, Failed: r.failed}
			if withText[i] {
				t := texts[r.pk]
				e.Old, e.New = t[0], t[1]
			} else {
				e.Cut = true
			}
			f.Edits = append(f.Edits, e)
		}
	}
	out := make([]FileChange, 0, len(order))
	for _, p := range order {
		f := files[p]
		f.net(read[p])
		out = append(out, *f)
	}
	return out, texts, nil
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
		case e.Cut, e.Command && e.New == nil: // not known
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

// inRoot places a relative path in the workspace root, when that is a
// path of this kind (/...): an agent that records some paths relative to
// it (Gemini CLI reads README.md, writes its whole path), or a command
// whose working folder was not recorded. So a file recorded both ways is
// one entry of Changes, and its removal is found. Any other path is as
// recorded.
func inRoot(root, p string) string {
	if path.IsAbs(p) || !path.IsAbs(root) {
		return p
	}
	return path.Join(root, p)
}

// rootPlacer is inRoot for the paths of one session's Changes, with a
// bound: the paths it places in the root hold at most rootRoom bytes for
// each path it is given and twice that path, and 1 KiB; past that a
// relative path stays as recorded. Each is joined to the root, and a
// session of many short relative names in a long root would make Changes
// many times the rows it reads.
type rootPlacer struct {
	root string
	room int
}

// rootRoom is what each path given to a rootPlacer adds to its room
// beyond twice its own length: a session whose root is no longer than
// this has every relative path placed.
const rootRoom = 256

func newRootPlacer(root string) *rootPlacer { return &rootPlacer{root: root, room: 1024} }

func (r *rootPlacer) place(p string) string {
	r.room += rootRoom + 2*len(p)
	if len(r.root)+1+len(p) > r.room { // the joined path's length before it is cleaned
		return p
	}
	placed := inRoot(r.root, p)
	if placed != p {
		r.room -= len(placed)
	}
	return placed
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
