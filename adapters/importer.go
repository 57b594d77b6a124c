package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/agentreview/service/store"
)

// Importer writes the sessions found in an agent's files to the store,
// through the same Apply as HTTP ingest.
//
// Import is incremental: after a session is written, the size and
// modification time of each of its files are recorded in the store
// (store.RecordImportedFiles). A later run skips a session whose files all
// still have the recorded size and time, without opening them. When any
// file of a session changed, or a new one appeared (a subagent, say), the
// whole session is read again and applied; Apply writes only the records
// that differ, so unchanged steps cost nothing and send no change event.
// Files with a problem, or whose last line was still being written, are not
// recorded, so they are read (and reported) again on the next run. A unit
// with Stamps (sessions of one database) is judged and recorded by those
// instead, and not recorded when any of its files had a problem.
type Importer struct {
	Store *store.Store
	// Rescan reads every file, even those unchanged since the last run.
	Rescan bool
	// Progress, when set, is called after each session is read; its
	// Sessions and Steps are those written, a group behind.
	Progress func(Progress)

	// group holds small sessions parsed but not yet written (ApplyGroup).
	group     []groupedSession
	groupSize int64 // the bytes of their files
	// writing is the group being written while the next is parsed.
	writing *groupWrite
}

// groupWrite is a group of small sessions written on a goroutine of its
// own, so the import parses on one core while SQLite writes on the other
// (docs/performance.md, "Parsed while the last group is written").
type groupWrite struct {
	group   []groupedSession
	done    chan struct{} // closed when written
	results []store.SessionResult
	err     error
}

// groupedSession is a small session waiting to be written with others:
// one commit per small session cost an import of many small files more
// than their steps (docs/performance.md).
type groupedSession struct {
	id    string
	write store.SessionWrite
}

// A session of at most groupFileBytes of files is written with others in
// one transaction, up to groupBytes of files at a time; so a group's
// batches in memory stay a small multiple of a few MB.
const (
	groupFileBytes = 1 << 20
	groupBytes     = 4 << 20
)

// Progress is how far an import run is.
type Progress struct {
	Files, FilesTotal int
	Sessions          int
	Steps             int
}

// Summary is what an import run did.
type Summary struct {
	Files          int // files found
	FilesUnchanged int // files skipped because they had not changed
	Sessions       int // sessions found: new, updated and unchanged
	New            int
	Updated        int
	Unchanged      int
	Deleted        int // sessions deleted in the service, so not written (nor counted above)
	Steps          int // steps written this run: new, or differing from what was stored
	Problems       []Problem
	Failed         []error // sessions the store refused; the run's error names them
}

// Run imports every session of one agent found under roots.
func (im *Importer) Run(ctx context.Context, a Agent, roots []string) (Summary, error) {
	var sum Summary
	units, problems := a.Discover(roots)
	sum.Problems = append(sum.Problems, problems...)
	known, err := im.Store.ImportedFiles(ctx, a.Kind)
	if err != nil {
		return sum, err
	}
	// A file is counted once, also when it holds several sessions.
	files := map[string]bool{}
	newFiles := func(u Unit) (n int) {
		for _, p := range u.Paths {
			if !files[p] {
				files[p] = true
				n++
			}
		}
		return n
	}
	for _, u := range units {
		sum.Files += newFiles(u)
	}
	clear(files)
	done := 0
	for _, u := range units {
		if err := ctx.Err(); err != nil {
			im.wait(&sum)
			return sum, err
		}
		im.importUnit(ctx, a, u, known, &sum)
		done += newFiles(u)
		if im.groupSize >= groupBytes {
			im.flush(ctx, a.Kind, &sum)
		}
		if im.Progress != nil {
			im.Progress(Progress{Files: done, FilesTotal: sum.Files, Sessions: sum.Sessions, Steps: sum.Steps})
		}
	}
	im.flush(ctx, a.Kind, &sum)
	im.wait(&sum)
	if len(sum.Failed) > 0 {
		return sum, fmt.Errorf("%d sessions not imported: %w", len(sum.Failed), errors.Join(sum.Failed...))
	}
	return sum, nil
}

func (im *Importer) importUnit(ctx context.Context, a Agent, u Unit, known map[string]store.ImportedFile, sum *Summary) {
	var states []store.ImportedFile
	var paths []string
	unchanged := !im.Rescan
	for _, p := range u.Paths {
		fi, err := os.Stat(p)
		if err != nil {
			sum.Problems = append(sum.Problems, Problem{Path: p, Message: err.Error()})
			continue
		}
		st := store.ImportedFile{Path: p, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
		if fi.ModTime().After(u.ModTime) {
			u.ModTime = fi.ModTime()
		}
		if known[p] != st {
			unchanged = false
		}
		states = append(states, st)
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return
	}
	if len(u.Stamps) > 0 {
		unchanged, states = !im.Rescan, u.Stamps
		for _, st := range states {
			unchanged = unchanged && known[st.Path] == st
		}
	}
	if unchanged {
		sum.Sessions++
		sum.Unchanged++
		sum.FilesUnchanged += len(paths)
		return
	}
	u.Paths = paths
	u.Stored = func(sid string) (Stored, error) { return im.stored(ctx, a.Kind, sid, sum) }
	sess, bad := parseUnit(a, u)
	if sess != nil {
		defer sess.Close()
		bad = append(bad, sess.Problems...)
	}
	sum.Problems = append(sum.Problems, bad...)
	if sess == nil || len(sess.Batches) == 0 {
		// No session in these files (yet): not recorded, so they are not
		// counted as an unchanged session next time.
		return
	}
	skip := map[string]bool{}
	for _, p := range bad {
		skip[p.Path] = true
	}
	for _, p := range sess.Incomplete {
		skip[p] = true
	}
	var record []store.ImportedFile
	var size int64
	for _, st := range states {
		if !skip[st.Path] && (len(u.Stamps) == 0 || len(skip) == 0) {
			record = append(record, st)
		}
		size += st.Size
	}
	if sess.Spilled == nil && size <= groupFileBytes {
		im.group = append(im.group, groupedSession{id: sess.ID, write: store.SessionWrite{Batches: sess.Batches, Files: record}})
		im.groupSize += size
		return
	}
	var results []store.ApplyResult
	err := sess.Each(func(b *store.Batch) error {
		res, err := im.Store.Apply(ctx, b)
		results = append(results, res)
		return err
	})
	if !im.tally(sess.ID, results, err, sum) {
		return
	}
	sum.Sessions++
	if err := im.Store.RecordImportedFiles(ctx, a.Kind, record); err != nil {
		sum.Failed = append(sum.Failed, err)
	}
}

// flush starts writing the grouped small sessions in one transaction
// (store.ApplyGroup, which records each one's files with it), beside the
// parse of the next ones; wait counts them. One group is written at a
// time, so at most two are held.
func (im *Importer) flush(ctx context.Context, kind string, sum *Summary) {
	im.wait(sum)
	group := im.group
	im.group, im.groupSize = nil, 0
	if len(group) == 0 {
		return
	}
	writes := make([]store.SessionWrite, len(group))
	for i, g := range group {
		writes[i] = g.write
	}
	w := &groupWrite{group: group, done: make(chan struct{})}
	im.writing = w
	go func() {
		defer close(w.done)
		w.results, w.err = im.Store.ApplyGroup(ctx, kind, writes)
	}()
}

// wait waits for the group being written, if any, and counts its
// sessions. A session the store refused was rolled back alone and is
// reported.
func (im *Importer) wait(sum *Summary) {
	w := im.writing
	if w == nil {
		return
	}
	<-w.done
	im.writing = nil
	for i, g := range w.group {
		if w.err != nil {
			sum.Failed = append(sum.Failed, fmt.Errorf("session %s: %w", g.id, w.err))
			continue
		}
		if im.tally(g.id, w.results[i].Results, w.results[i].Err, sum) {
			sum.Sessions++
		}
	}
}

// tally counts a written session (its batches' results) as new, updated
// or unchanged, a deleted one as deleted, and a refused one as failed;
// written says whether it was written.
func (im *Importer) tally(id string, results []store.ApplyResult, err error, sum *Summary) (written bool) {
	var del *store.DeletedError
	switch {
	case errors.As(err, &del):
		// Not recorded, so every run says it was skipped.
		sum.Deleted++
		return false
	case err != nil:
		// Not recorded: tried again next run.
		sum.Failed = append(sum.Failed, fmt.Errorf("session %s: %w", id, err))
		return false
	}
	created, changed := false, false
	for i, r := range results {
		created = created || (i == 0 && r.Created)
		changed = changed || r.Changed
		sum.Steps += r.StepsWritten
	}
	switch {
	case created:
		sum.New++
	case changed:
		sum.Updated++
	default:
		sum.Unchanged++
	}
	return true
}

// parseUnit opens a unit's files and parses them. Files that cannot be
// opened are reported and left out.
func parseUnit(a Agent, u Unit) (*Session, []Problem) {
	var files []File
	var problems []Problem
	var paths []string
	for _, p := range u.Paths {
		f, err := Open(p)
		if err != nil {
			problems = append(problems, Problem{Path: p, Message: err.Error()})
			continue
		}
		defer f.Close()
		files = append(files, File{Path: p, Body: f})
		paths = append(paths, p)
	}
	if len(files) == 0 {
		return nil, problems
	}
	u.Paths = paths
	return a.Parse(u, files), problems
}

// stored is what the store holds of a session, for the builder to join
// before it splits the session (Unit.Stored). A session of the same id
// waiting in the group, or being written, is written first.
func (im *Importer) stored(ctx context.Context, kind, sid string, sum *Summary) (Stored, error) {
	for _, g := range im.group {
		if g.id == sid {
			im.flush(ctx, kind, sum)
			break
		}
	}
	if w := im.writing; w != nil {
		for _, g := range w.group {
			if g.id == sid {
				im.wait(sum)
				break
			}
		}
	}
	seqs, err := im.Store.StepSeqs(ctx, sid)
	if err != nil {
		return Stored{}, err
	}
	tel, err := im.Store.Telemetry(ctx, sid)
	return Stored{Seqs: seqs, Telemetry: tel}, err
}

// String is the one-line summary the import command prints.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported %d %s: %d %s (%d new, %d updated, %d unchanged), %d %s written",
		s.Files, plural(s.Files, "file", "files"), s.Sessions, plural(s.Sessions, "session", "sessions"),
		s.New, s.Updated, s.Unchanged, s.Steps, plural(s.Steps, "step", "steps"))
	if s.Deleted > 0 {
		fmt.Fprintf(&b, "; %d deleted %s skipped", s.Deleted, plural(s.Deleted, "session", "sessions"))
	}
	if n := len(s.Problems); n > 0 {
		fmt.Fprintf(&b, "; %d %s skipped: ", n, plural(n, "problem", "problems"))
		const shown = 5
		for i, p := range s.Problems {
			if i == shown {
				fmt.Fprintf(&b, "; and %d more", n-shown)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.String())
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ImportMemoryLimit is the soft memory limit an import runs under
// (LimitMemory). A session's outlines stay well below it even for a
// 500 MB transcript; the limit makes the garbage collector return the
// garbage of reading it before the heap doubles. It bounds the Go
// runtime's memory only: SQLite's page caches come on top, and so does
// the mapped binary, so the process peaks at about this plus 60 MB. 56 MB,
// not 80: a 210 MB transcript's import peaks 16-18 MB lower (130 -> 114
// MB) for +1-7% CPU time (not significant in four sets of alternated
// runs); 48 MB costs +50% in the collector, since the parse holds up to
// ~37 MB live near its end (docs/performance.md, "Peak memory of one
// 210 MB transcript").
const ImportMemoryLimit = 56 << 20

// ImportGCPercent is the garbage collector's percentage during an import
// (LimitMemory): the collector runs when the heap has grown by four times
// what was live after the last one, not by once, and the memory limit
// still bounds it. An import of many small sessions keeps little live, so
// with Go's default 100 it collected every few MB: the 96 MB corpus took
// 7-11% less time at 200-400 (peak RSS 62-65 -> 85-89 MB at 400), and one 210 MB
// transcript, whose heap meets the limit, the same time and peak
// (docs/performance.md, "The collector of an import").
const ImportGCPercent = 400

// LimitMemory sets the Go runtime's soft memory limit to
// ImportMemoryLimit and its collector's percentage to ImportGCPercent,
// each unless GOMEMLIMIT or GOGC says otherwise, and returns a function
// that puts the previous settings back.
func LimitMemory() (restore func()) {
	var undo []func()
	if os.Getenv("GOMEMLIMIT") == "" {
		prev := debug.SetMemoryLimit(ImportMemoryLimit)
		undo = append(undo, func() { debug.SetMemoryLimit(prev) })
	}
	if os.Getenv("GOGC") == "" {
		prev := debug.SetGCPercent(ImportGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}
