package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// openFiles opens the store file at path read-only, as another process
// would, with its search index's file attached as idx.
func openFiles(tb testing.TB, path string) *sqlite.Conn {
	tb.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		tb.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	err = sqlitex.ExecuteTransient(conn, `ATTACH DATABASE ? AS idx`, &sqlitex.ExecOptions{Args: []any{store.IndexPath(path)}})
	if err == nil {
		err = store.RegisterSearchText(conn) // the views of what a row indexes call them
	}
	if err != nil {
		conn.Close()
		tb.Fatalf("open the files of %s: %v", path, err)
	}
	return conn
}

// indexState reads, from the files themselves, how many index rows match
// word and whether the index holds the newest write.
func indexState(t *testing.T, path, word string) (hits int64, current bool) {
	t.Helper()
	conn := openFiles(t, path)
	defer conn.Close()
	err := sqlitex.Execute(conn, `SELECT (SELECT count(*) FROM search WHERE search MATCH ?),
		  indexed_through = (SELECT max(updated_at) FROM sessions) FROM search_state`, &sqlitex.ExecOptions{
		Args: []any{word},
		ResultFunc: func(st *sqlite.Stmt) error {
			hits, current = st.ColumnInt64(0), st.ColumnBool(1)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("read the index of %s: %v", path, err)
	}
	return hits, current
}

// A push leaves the index to the background: with no search to catch it
// up, the store's own catch-up indexes the write.
func TestIndexFollowsWritesInBackground(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, searchBatch("x"))
	// Not a speed bound: the test only waits for the catch-up to happen.
	deadline := time.Now().Add(10 * time.Second)
	for {
		hits, current := indexState(t, s.Path(), "rawvaluex")
		if hits == 1 && current {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index after Apply: %d hits for rawvaluex, current %v; want 1 and true", hits, current)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A short-lived writer (import, capture, hook) leaves the index holding
// its writes when it closes the store.
func TestCloseLeavesIndexCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	for _, sid := range []string{"a", "b", "c"} {
		mustApply(t, s, searchBatch(sid))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	for _, word := range []string{"promptworda", "stdoutwordb", "rawvaluec", "wsrootc"} {
		if hits, current := indexState(t, path, word); hits != 1 || !current {
			t.Errorf("index after Close: %d hits for %s, current %v; want 1 and true", hits, word, current)
		}
	}
}

// Close catches up at once: it does not wait out the pause the
// background waits for after a write (indexQuiet), as an import once
// did for up to 200 ms at its end. Here that pause is an hour.
func TestCloseDoesNotWaitForQuiet(t *testing.T) {
	store.SetIndexWait(t, time.Hour)
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	mustApply(t, s, searchBatch("q"))
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Not a speed bound: an hour against a minute.
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close() = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close() still waits after a minute, for the hour's pause after the last write")
	}
	if hits, current := indexState(t, path, "promptwordq"); hits != 1 || !current {
		t.Errorf("index after Close: %d hits for promptwordq, current %v; want 1 and true", hits, current)
	}
}

// indexSegments reads, from the index file itself, how many segments
// FTS5's structure record (row 10 of search_data: a 4-byte cookie, then
// the number of levels and of segments as SQLite varints) counts.
func indexSegments(t *testing.T, path string) int64 {
	t.Helper()
	conn := openFiles(t, path)
	defer conn.Close()
	var rec []byte
	err := sqlitex.Execute(conn, `SELECT block FROM idx.search_data WHERE id = 10`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error {
			rec = make([]byte, st.ColumnLen(0))
			st.ColumnBytes(0, rec)
			return nil
		},
	})
	if err != nil || len(rec) < 6 {
		t.Fatalf("the index's structure record = %x, %v", rec, err)
	}
	// Both counts are under 128 here: one byte each.
	if rec[4] >= 0x80 || rec[5] >= 0x80 {
		t.Fatalf("the index's structure record %x: more than 127 levels or segments", rec)
	}
	return int64(rec[5])
}

// A catch-up of many sessions' writes adds one segment to the index.
// FTS5 writes out what it holds as a segment whenever a row's rowid is
// below the one before; session rows (rowid -pk) taken in pk order once
// made a segment per session, and merging them cost an import of many
// small sessions a quarter of the index's CPU.
func TestCatchUpOfManySessionsAddsOneSegment(t *testing.T) {
	store.SetIndexWait(t, time.Hour)
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	const sessions = 12 // under crisismerge's 16: FTS5 merges none of them at once
	for i := range sessions {
		mustApply(t, s, searchBatch(fmt.Sprint("m", i)))
	}
	if err := s.Close(); err != nil { // one catch-up of all of them
		t.Fatalf("Close() = %v", err)
	}
	if hits, current := indexState(t, path, "promptwordm7"); hits != 1 || !current {
		t.Fatalf("index after Close: %d hits for promptwordm7, current %v; want 1 and true", hits, current)
	}
	if n := indexSegments(t, path); n != 1 {
		t.Errorf("the index holds %d segments after one catch-up of %d sessions; want 1", n, sessions)
	}
}

// indexShare reads, from the file itself, the bytes of the search tables'
// pages (dbstat) and of the text the index holds (the views of what a row
// indexes).
func indexShare(tb testing.TB, path string) (index, text float64) {
	tb.Helper()
	conn := openFiles(tb, path)
	defer conn.Close()
	err := sqlitex.ExecuteTransient(conn, `SELECT (SELECT sum(pgsize) FROM dbstat('idx') WHERE name LIKE 'search%'),
		(SELECT sum(length(CAST(body AS BLOB))) FROM search_step_docs) + (SELECT sum(length(CAST(body AS BLOB))) FROM search_session_docs)`,
		&sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error { index, text = st.ColumnFloat(0), st.ColumnFloat(1); return nil },
		})
	if err != nil {
		tb.Fatalf("read the index size of %s: %v", path, err)
	}
	return index, text
}

// The index keeps no copy of the text it indexes, only its terms: issue
// 13 bounds it at the size of the text (a copy alone is that much).
func TestIndexSmallerThanText(t *testing.T) {
	s := mustOpen(t)
	if _, err := s.Apply(context.Background(), storetest.Batch("a", 0, 2000)); err != nil {
		t.Fatalf("Apply = %v", err)
	}
	if err := s.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	index, text := indexShare(t, s.Path())
	if index > text {
		t.Errorf("search index is %.0f bytes for %.0f bytes of text (%.2fx); want at most 1x", index, text, index/text)
	}
	t.Logf("search index %.0f bytes for %.0f bytes of text: %.2fx", index, text, index/text)
}

// Text a write replaced leaves the index when it is replaced, and the
// session's text when it is deleted: no term of either stays in a segment
// of the index file, in the store file or in a log.
func TestIndexForgetsReplacedText(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s := mustOpenPath(t, path)
	marker := func() string {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(b[:])
	}
	first, second, kept := marker(), marker(), marker()
	mustApply(t, s, searchBatch("keep")) // in the same segments
	b := searchBatch("gone")
	set(b, "steps[1].payload.stdout", "first "+first)
	set(b, "session.workspace.root", "/home/"+first)
	mustApply(t, s, b)
	k := searchBatch("keep2")
	set(k, "steps[1].payload.stdout", kept)
	mustApply(t, s, k)
	if got := hitKeys(mustSearch(t, s, first)); len(got) != 2 { // the step and the session
		t.Fatalf("Search(first) = %v; want the step and the session", got)
	}
	set(b, "steps[1].payload.stdout", "second "+second)
	set(b, "session.workspace.root", "/home/"+second)
	mustApply(t, s, b)
	mustDelete(t, s, "gone")

	// The Delete truncates both files' logs at once, or, when a reader
	// holds one past scrubWait (a busy machine), in the background
	// (TestDeleteWhileReading): wait for that before reading the files.
	held := func(b []byte) bool {
		return bytes.Contains(b, []byte(first[8:])) || bytes.Contains(b, []byte(second[8:]))
	}
	deadline := time.Now().Add(5 * time.Second)
	for held(storeFiles(t, path)) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	all := storeFiles(t, path)
	for name, mk := range map[string]string{"first": first, "second": second} {
		if n := bytes.Count(all, []byte(mk[8:])); n != 0 {
			t.Errorf("the %s text of the deleted session is %d times in the store files; want 0", name, n)
		}
		if got := hitKeys(mustSearch(t, s, mk)); len(got) != 0 {
			t.Errorf("Search(%s) after Delete = %v; want none", name, got)
		}
	}
	if !bytes.Contains(all, []byte(kept[8:])) {
		t.Errorf("the kept session's text is missing from the store files; the check above proves nothing")
	}
	if got := hitKeys(mustSearch(t, s, kept)); len(got) != 1 {
		t.Errorf("Search(kept) = %v; want one hit", got)
	}
}

// indexDump reads, from the file itself, the rows the index holds, the
// sessions' spans, whether it is current and the hits of words.
func indexDump(t *testing.T, path string, words ...string) string {
	t.Helper()
	conn := openFiles(t, path)
	defer conn.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT 'rows ' || coalesce(group_concat(id, ','), '') FROM (SELECT id FROM search_docsize ORDER BY id)`,
		`SELECT 'spans ' || coalesce(group_concat(session_pk || ':' || lo || '-' || hi, ','), '') FROM (SELECT * FROM search_spans ORDER BY session_pk)`,
		`SELECT 'current ' || (indexed_through = (SELECT max(updated_at) FROM sessions)) FROM search_state`,
	} {
		err := sqlitex.ExecuteTransient(conn, q, &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			b.WriteString(st.ColumnText(0) + "\n")
			return nil
		}})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, w := range words {
		hits, _ := indexState(t, path, w)
		fmt.Fprintf(&b, "%s %d\n", w, hits)
	}
	return b.String()
}

// The background catch-up indexes in chunks of a few writes each, so a
// waiting push goes between them; the index it leaves is the one a
// rebuild makes: every row, span and replaced text as in one transaction.
func TestIndexInChunksAsRebuilt(t *testing.T) {
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), store.IndexInChunks())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for k := range 6 { // 600 steps: several chunks
		if _, err := s.Apply(ctx, storetest.Batch("a", k, 100)); err != nil {
			t.Fatalf("Apply(a, push %d) = %v", k, err)
		}
	}
	mustApply(t, s, searchBatch("x"))
	if _, err := s.Apply(ctx, storetest.Batch("b", 0, 300)); err != nil {
		t.Fatalf("Apply(b) = %v", err)
	}
	x := searchBatch("x")
	set(x, "steps[1].payload.stdout", "replacedword")
	mustApply(t, s, x) // replaces indexed text or text not indexed yet
	y := searchBatch("y")
	mustApply(t, s, y)
	set(y, "session.workspace.root", "/home/dev/movedroot")
	mustApply(t, s, y) // the session row only
	s.WaitIndexLater()
	words := []string{"stdoutwordx", "replacedword", "wsrooty", "movedroot", "promptwordx", "promptwordy"}
	got := indexDump(t, s.Path(), words...)
	if _, err := s.Reindex(ctx); err != nil {
		t.Fatalf("Reindex() = %v", err)
	}
	if want := indexDump(t, s.Path(), words...); got != want {
		t.Errorf("index after the background catch-up:\n%s\nwant, as rebuilt:\n%s", got, want)
	}
	if !strings.Contains(got, "current 1") || !strings.Contains(got, "replacedword 1") || !strings.Contains(got, "stdoutwordx 0") {
		t.Errorf("index after the background catch-up:\n%s\nwant it current, with replacedword and without stdoutwordx", got)
	}
}

// oldStore makes, at path, a store as a build with the first version
// migrations left it (7: before migration 008), holding what writes to a current store put in
// sessions and steps: 3 sessions of 4 pushes of 40 steps and searchBatch
// "x", 15 writes in all. It returns how many steps it holds and the
// current store the rows came from, its index current.
func oldStore(t *testing.T, path string, version int) (steps int64, src string) {
	t.Helper()
	ctx := context.Background()
	from := mustOpenPath(t, filepath.Join(t.TempDir(), "src.db"))
	for k := range 4 {
		for _, sid := range []string{"a", "b", "c"} {
			b := storetest.Batch(sid, k, 40)
			if _, err := from.Apply(ctx, b); err != nil {
				t.Fatalf("Apply(%s, push %d) = %v", sid, k, err)
			}
			steps += int64(len(b.Steps))
		}
	}
	x := mustParse(t, searchBatch("x"))
	if _, err := from.Apply(ctx, x); err != nil {
		t.Fatalf("Apply(x) = %v", err)
	}
	steps += int64(len(x.Steps))
	if err := from.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	if err := store.CreateAtVersion(ctx, path, version); err != nil {
		t.Fatalf("CreateAtVersion(%s, %d) = %v", path, version, err)
	}
	conn := mustExec(t, path, "ATTACH '"+from.Path()+"' AS src", "INSERT INTO sessions SELECT * FROM src.sessions")
	// The columns of the old version's steps (a later migration adds one).
	var cols string
	err := sqlitex.ExecuteTransient(conn, "SELECT group_concat(name, ', ') FROM pragma_table_info('steps', 'main')", &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { cols = st.ColumnText(0); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"INSERT INTO steps (" + cols + ") SELECT " + cols + " FROM src.steps", "DETACH src"} {
		if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	return steps, from.Path()
}

// progressLog records what OnIndexProgress reports.
type progressLog struct {
	mu    sync.Mutex
	calls [][2]int64
}

func (p *progressLog) report(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, [2]int64{done, total})
}

// check wants the calls of one catch-up of total steps in chunks of
// about chunk: (0, total) first, done strictly increasing to total.
func (p *progressLog) check(t *testing.T, total, chunk int64) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	if len(c) < 3 || c[0] != [2]int64{0, total} || c[len(c)-1] != [2]int64{total, total} {
		t.Fatalf("progress = %v; want (0 %d) first, (%[2]d %[2]d) last and more between", c, total)
	}
	for i := 1; i < len(c); i++ {
		if c[i][1] != total || c[i][0] <= c[i-1][0] {
			t.Fatalf("progress = %v; want done strictly increasing, total %d", c, total)
		}
	}
	if min := total / chunk; int64(len(c)-1) < min/2 {
		t.Errorf("progress = %v: %d chunks; want about %d (chunks of about %d steps)", c, len(c)-1, min, chunk)
	}
}

// indexHoldsAll wants the index of the store at path to hold every
// session row and step, with each session's span of step pks, read from
// the tables themselves.
func indexHoldsAll(t *testing.T, path string) {
	t.Helper()
	conn := openFiles(t, path)
	defer conn.Close()
	for _, q := range []string{
		`SELECT count(*) FROM (SELECT pk FROM steps UNION ALL SELECT -pk FROM sessions) FULL JOIN search_docsize ON id = pk WHERE id IS NULL OR pk IS NULL`,
		`SELECT count(*) FROM (SELECT session_pk, min(pk) lo, max(pk) hi FROM steps GROUP BY session_pk) w FULL JOIN search_spans s USING (session_pk) WHERE s.lo IS NOT w.lo OR s.hi IS NOT w.hi`,
		`SELECT indexed_through <> (SELECT max(updated_at) FROM sessions) FROM search_state`,
	} {
		var wrong int64
		err := sqlitex.ExecuteTransient(conn, q, &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			wrong = st.ColumnInt64(0)
			return nil
		}})
		if err != nil || wrong != 0 {
			t.Errorf("%s = %d, %v; want 0", q, wrong, err)
		}
	}
}

// findWords are words of every field of searchBatch("x") and words of
// storetest's steps.
var findWords = []string{"promptwordx", "stdoutwordx", "stderrwordx", "oldwordx", "newwordx", "errormessagex",
	"flagreasonx", "wsrootx", "reporepox", "timeout", "claude", "widget"}

// Migration 008 leaves an existing store's index to the Open that
// migrated, which builds it in chunks, reporting progress, before it
// returns: every row and span, the same index the writes built in the
// store the rows came from, each field's word findable.
func TestMigrationBuildsIndexWithProgress(t *testing.T) {
	const chunk = 20
	store.SetBuildChunk(t, chunk)
	path := filepath.Join(t.TempDir(), "old.db")
	steps, src := oldStore(t, path, 7)
	var p progressLog
	s, err := store.Open(context.Background(), path, store.OnIndexProgress(p.report))
	if err != nil {
		t.Fatalf("Open(old store) = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	p.check(t, steps, chunk)
	indexHoldsAll(t, path)
	if got, want := indexDump(t, path, findWords...), indexDump(t, src, findWords...); got != want {
		t.Errorf("index built by Open:\n%s\nwant, as the writes built it:\n%s", got, want)
	}
	for _, w := range findWords[:9] {
		got := hitKeys(mustSearch(t, s, w))
		if len(got) == 0 || slices.ContainsFunc(got, func(k hitKey) bool { return k.Session != "x" }) {
			t.Errorf("Search(%s) after the build = %v; want hits in session x only", w, got)
		}
	}
}

// A build cut off in the middle (its context cancelled after the first
// chunk, as a crash would leave it) keeps the chunks it committed: the
// next Open builds only the rest, and the index is whole.
func TestIndexBuildResumes(t *testing.T) {
	const chunk = 20
	store.SetBuildChunk(t, chunk)
	path := filepath.Join(t.TempDir(), "old.db")
	steps, src := oldStore(t, path, 7)
	ctx, cancel := context.WithCancel(context.Background())
	var first progressLog
	_, err := store.Open(ctx, path, store.OnIndexProgress(func(done, total int64) {
		first.report(done, total)
		if done > 0 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with the build cancelled = %v; want context.Canceled", err)
	}
	if len(first.calls) != 2 || first.calls[1][0] <= 0 || first.calls[1][0] >= steps {
		t.Fatalf("progress of the cancelled build = %v; want (0 %d) and one chunk", first.calls, steps)
	}
	built := first.calls[1][0]
	var p progressLog
	s, err := store.Open(context.Background(), path, store.OnIndexProgress(p.report))
	if err != nil {
		t.Fatalf("Open after the cancelled build = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	p.check(t, steps-built, chunk)
	indexHoldsAll(t, path)
	if got, want := indexDump(t, path, findWords...), indexDump(t, src, findWords...); got != want {
		t.Errorf("index built in two Opens:\n%s\nwant, as the writes built it:\n%s", got, want)
	}
}

// Reindex empties the index and builds it again in chunks, reporting
// progress, to the index the writes built.
func TestReindexReportsProgress(t *testing.T) {
	const chunk = 20
	store.SetBuildChunk(t, chunk)
	path := filepath.Join(t.TempDir(), "old.db")
	steps, src := oldStore(t, path, 7)
	var p progressLog
	s, err := store.Open(context.Background(), path, store.OnIndexProgress(p.report))
	if err != nil {
		t.Fatalf("Open(old store) = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	p.calls = nil
	n, err := s.Reindex(context.Background())
	if err != nil {
		t.Fatalf("Reindex() = %v", err)
	}
	p.check(t, steps, chunk)
	if sessions := int64(4); n != steps+sessions {
		t.Errorf("Reindex() = %d rows; want %d steps and %d sessions", n, steps, sessions)
	}
	indexHoldsAll(t, path)
	if got, want := indexDump(t, path, findWords...), indexDump(t, src, findWords...); got != want {
		t.Errorf("index after Reindex:\n%s\nwant, as the writes built it:\n%s", got, want)
	}
}

// Two processes that open a store left by a build before migration 008
// at the same moment: one migrates, and both build the index, chunk by
// chunk, each indexing what the other has not; the index holds every row
// once, their own writes too.
func TestTwoProcessesBuildTheIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("STORE_TEST_BUILD_CHUNK", "20") // read by TestOpenProcess
	path := filepath.Join(t.TempDir(), "old.db")
	oldStore(t, path, 7)
	mustRunOpenProcesses(t, path, []string{"p0", "p1"})
	indexHoldsAll(t, path)
	s := mustOpenPath(t, path)
	for _, w := range findWords[:9] {
		if got := hitKeys(mustSearch(t, s, w)); len(got) == 0 {
			t.Errorf("Search(%s) after the build = no hits; want session x", w)
		}
	}
	for _, sid := range []string{"p0", "p1"} {
		mustDetail(t, s, sid)
	}
}

// randomWord is a word of 48 hex digits that no other text holds.
func randomWord(t *testing.T) string {
	t.Helper()
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// A write begins by taking the store file's write lock, before it reads
// anything: while another process holds that lock, Apply waits, and when
// that process commits a change of its own, Apply then writes on top of
// it. (Were Apply to read first, its snapshot would predate the other
// commit, and SQLite would refuse it the lock: SQLITE_BUSY at once.)
func TestWriteTakesTheStoreLockFirst(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.Apply(ctx, storetest.Batch("a", 0, 20)); err != nil {
		t.Fatalf("Apply(a) = %v", err)
	}
	other := mustExec(t, s.Path(), "BEGIN IMMEDIATE",
		"INSERT INTO tombstones (id, deleted_at) VALUES ('elsewhere', 1)")
	next := storetest.Batch("a", 1, 20)
	applied := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := s.Apply(wctx, next)
		applied <- err
	}()
	select {
	case err := <-applied:
		t.Fatalf("Apply while another process holds the store's write lock = %v before that process ended; want it to wait", err)
	case <-time.After(300 * time.Millisecond): // not a bound: Apply is waiting by now
	}
	if err := sqlitex.ExecuteTransient(other, "COMMIT", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatalf("Apply after the other process committed = %v; want it written", err)
	}
	if got, want := len(mustDetail(t, s, "a").Steps), 40; got != want {
		t.Errorf("Detail(a) has %d steps; want %d", got, want)
	}
}

// A push of new steps to a stored session and an import's group of new
// sessions commit while the search index's write lock is held, by another
// process or by this store's catch-up: the index is a file of its own, and
// they do not take its lock. A batch that replaces text the index holds
// does take it: it waits, and once it has the lock the index ends with
// the new text only.
func TestWritesDoNotWaitForTheIndex(t *testing.T) {
	for _, holder := range []struct {
		name string
		hold func(t *testing.T, s *store.Store) (release func())
	}{
		{"another process", func(t *testing.T, s *store.Store) func() {
			conn := mustExec(t, store.IndexPath(s.Path()), "BEGIN IMMEDIATE")
			return func() {
				if err := sqlitex.ExecuteTransient(conn, "ROLLBACK", nil); err != nil {
					t.Error(err)
				}
			}
		}},
		{"this store's catch-up", func(t *testing.T, s *store.Store) func() {
			held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() { done <- s.CatchUpPaused(context.Background(), held, release) }()
			<-held
			return func() {
				close(release)
				if err := <-done; err != nil {
					t.Errorf("CatchUpPaused = %v", err)
				}
			}
		}},
	} {
		t.Run(holder.name, func(t *testing.T) {
			s := mustOpen(t)
			ctx := context.Background()
			mustApply(t, s, searchBatch("x"))
			if _, err := s.Apply(ctx, storetest.Batch("live", 0, 50)); err != nil {
				t.Fatalf("Apply(live) = %v", err)
			}
			if err := s.CatchUpIndex(); err != nil {
				t.Fatalf("CatchUpIndex() = %v", err)
			}
			replaced := searchBatch("x")
			set(replaced, "steps[1].payload.stdout", "replacedword")
			x := mustParse(t, replaced)

			release := holder.hold(t, s)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := s.Apply(wctx, storetest.Batch("live", 1, 50))
			if err != nil {
				t.Errorf("Apply(new steps to a stored session) while the index's lock is held = %v; want it written", err)
			}
			res, err := s.ApplyGroup(wctx, "testagent", []store.SessionWrite{
				{Batches: []*store.Batch{storetest.Batch("imported1", 0, 50)}},
				{Batches: []*store.Batch{storetest.Batch("imported2", 0, 50), storetest.Batch("imported2", 1, 50)}},
			})
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				t.Errorf("ApplyGroup(new sessions) while the index's lock is held = %+v, %v; want them written", res, err)
			}
			short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancelShort()
			if _, err := s.Apply(short, x); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Apply(replacing indexed text) while the index's lock is held = %v; want it to wait until its deadline", err)
			}
			release()

			if _, err := s.Apply(ctx, x); err != nil {
				t.Fatalf("Apply(replacing indexed text) after the lock was let go = %v", err)
			}
			for _, sid := range []string{"live", "imported1", "imported2"} {
				mustDetail(t, s, sid)
			}
			if got := hitKeys(mustSearch(t, s, "replacedword")); len(got) != 1 {
				t.Errorf("Search(replacedword) = %v; want one hit", got)
			}
			if got := hitKeys(mustSearch(t, s, "stdoutwordx")); len(got) != 0 {
				t.Errorf("Search(stdoutwordx), the replaced text = %v; want none", got)
			}
		})
	}
}

// A step the index holds, changed, then changed again while a catch-up
// that read the first change from its snapshot is pending: the second
// write waits for that catch-up (it holds the index's lock), then removes
// the text the catch-up indexed, and the index ends with the newest text
// only, as a rebuild makes it. Without the wait, the catch-up would index
// the first change after the write looked, and keep it for good.
func TestIndexReplacedWhileCatchingUp(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustApply(t, s, searchBatch("x"))
	if err := s.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	x := searchBatch("x")
	set(x, "steps[1].payload.stdout", "firstchange")
	mustApply(t, s, x)
	s.WaitIndexLater()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() { done <- s.CatchUpPaused(ctx, held, release) }()
	<-held
	set(x, "steps[1].payload.stdout", "secondchange")
	second := mustParse(t, x)
	applied := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, second)
		applied <- err
	}()
	select {
	case err := <-applied:
		t.Errorf("Apply(second change) = %v while a catch-up held the index's lock; want it to wait", err)
	case <-time.After(300 * time.Millisecond): // not a bound: Apply is waiting by now
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("CatchUpPaused = %v", err)
	}
	if err := <-applied; err != nil {
		t.Fatalf("Apply(second change) = %v", err)
	}
	if err := s.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	words := []string{"stdoutwordx", "firstchange", "secondchange", "promptwordx"}
	got := indexDump(t, s.Path(), words...)
	if _, err := s.Reindex(ctx); err != nil {
		t.Fatalf("Reindex() = %v", err)
	}
	if want := indexDump(t, s.Path(), words...); got != want {
		t.Errorf("index after the change during a catch-up:\n%s\nwant, as rebuilt:\n%s", got, want)
	}
	if !strings.Contains(got, "secondchange 1") || !strings.Contains(got, "firstchange 0") {
		t.Errorf("index after the change during a catch-up:\n%s\nwant secondchange and not firstchange", got)
	}
}

// A process that stops between the two commits of a Delete (the store
// file's committed, the index file's not) leaves the index holding the
// deleted session's text, and the epochs of the two files differ. The
// next Open empties the index with secure delete and builds it again:
// every stored row is found, none of the deleted text, and the deleted
// text is in no file.
func TestIndexRebuiltAfterCrashBetweenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	gone := randomWord(t)
	g := searchBatch("gone")
	set(g, "steps[1].payload.stdout", gone)
	mustApply(t, s, g)
	mustApply(t, s, searchBatch("keep"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	index, err := os.ReadFile(store.IndexPath(path))
	if err != nil || !bytes.Contains(index, []byte(gone[8:])) {
		t.Fatalf("the index file holds no term of the session to delete (%v); this test would prove nothing", err)
	}
	// What Delete writes to the store file, committed alone.
	mustExec(t, path, "PRAGMA secure_delete = ON", "PRAGMA foreign_keys = ON", "BEGIN IMMEDIATE",
		"DELETE FROM sessions WHERE id = 'gone'",
		"INSERT INTO tombstones (id, deleted_at) SELECT 'gone', max(updated_at) + 1 FROM sessions",
		"INSERT INTO scrubs (id) VALUES ('gone')",
		"UPDATE search_epoch SET epoch = epoch + 1",
		"COMMIT").Close()

	s, err = store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open after the crash = %v", err)
	}
	indexHoldsAll(t, path)
	for _, w := range findWords[:9] {
		word := strings.TrimSuffix(w, "x") + "keep"
		if got := hitKeys(mustSearch(t, s, word)); len(got) == 0 {
			t.Errorf("Search(%s) after the rebuild = no hits; want session keep", word)
		}
	}
	if got := hitKeys(mustSearch(t, s, gone)); len(got) != 0 {
		t.Errorf("Search(the deleted text) after the rebuild = %v; want none", got)
	}
	// The Delete's clean-up (its scrubs row) truncates both files' logs in
	// the background, as after any Delete (TestDeleteWhileReading).
	for deadline := time.Now().Add(5 * time.Second); bytes.Contains(storeFiles(t, path), []byte(gone[8:])); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("5 s after the rebuild, the deleted session's text is still in the store's files; want it overwritten")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if bytes.Contains(storeFiles(t, path), []byte(gone[8:])) {
		t.Errorf("the deleted session's text is in the store's files after Close; want it overwritten")
	}
}

// An index file of another version (an older build's layout or text,
// indexVersion) is dropped and built again by Open, from the views of
// this build: text only the old index held is found nowhere, not in the
// files either.
func TestIndexOfAnotherVersionRebuilt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	mustApply(t, s, searchBatch("keep"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	// Text the views no longer give, as an older build's index may hold.
	stale := randomWord(t)
	mustExec(t, store.IndexPath(path), "BEGIN IMMEDIATE",
		"INSERT INTO search (rowid, body) SELECT max(id), 'fix "+stale+"' FROM search_docsize",
		"PRAGMA user_version = 1",
		"COMMIT").Close()

	s, err = store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open of the old index = %v", err)
	}
	indexHoldsAll(t, path)
	if got := hitKeys(mustSearch(t, s, stale)); len(got) != 0 {
		t.Errorf("Search(the old index's text) = %v; want none", got)
	}
	for _, w := range findWords[:9] {
		word := strings.TrimSuffix(w, "x") + "keep"
		if got := hitKeys(mustSearch(t, s, word)); len(got) == 0 {
			t.Errorf("Search(%s) after the rebuild = no hits; want session keep", word)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if bytes.Contains(storeFiles(t, path), []byte(stale)) {
		t.Errorf("the old index's text is in the store's files after the rebuild; want it overwritten")
	}
}

// A store of the layout before migration 013 (the index in the store
// file), opened by this build: the migration drops the index from the
// store file, overwriting its pages, and Open builds it in the index
// file. Every row is found, as the writes built it, and text only the
// old index held is in no file.
func TestOpenMovesTheIndexToItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	_, src := oldStore(t, path, 12)
	orphan := randomWord(t)
	mustExec(t, path, "BEGIN IMMEDIATE",
		"INSERT INTO search (rowid, body) SELECT step_pk, body FROM search_step_docs",
		"INSERT INTO search (rowid, body) SELECT -session_pk, body FROM search_session_docs",
		"INSERT INTO search (rowid, body) VALUES (1000000000, 'only in the index "+orphan+"')",
		"INSERT INTO search_spans SELECT session_pk, min(pk), max(pk) FROM steps GROUP BY session_pk",
		"UPDATE search_state SET indexed_through = (SELECT max(updated_at) FROM sessions)",
		"COMMIT").Close()
	if !bytes.Contains(storeFiles(t, path), []byte(orphan[8:])) {
		t.Fatal("the old index's text is not in the store file; this test would prove nothing")
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(old store) = %v", err)
	}
	indexHoldsAll(t, path)
	if got, want := indexDump(t, path, findWords...), indexDump(t, src, findWords...); got != want {
		t.Errorf("index built by Open:\n%s\nwant, as the writes built it:\n%s", got, want)
	}
	for _, w := range findWords[:9] {
		if got := hitKeys(mustSearch(t, s, w)); len(got) == 0 {
			t.Errorf("Search(%s) after the move = no hits; want session x", w)
		}
	}
	conn := mustExec(t, path)
	var tables string
	err = sqlitex.ExecuteTransient(conn, `SELECT group_concat(name) FROM sqlite_schema WHERE type = 'table' AND name LIKE 'search%'`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { tables = st.ColumnText(0); return nil }})
	conn.Close()
	if err != nil || tables != "search_epoch" {
		t.Errorf("the store file's search tables after the move = %q, %v; want only search_epoch", tables, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if bytes.Contains(storeFiles(t, path), []byte(orphan[8:])) {
		t.Errorf("the old index's text is in the store's files after the move; want it overwritten")
	}
}

// The same crash in another process while this store is open: its next
// catch-up (here a search's) finds the epochs differ and builds the index
// again, so a search never answers from text the store no longer has.
func TestIndexRebuiltWhenEpochsDifferWhileOpen(t *testing.T) {
	s := mustOpen(t)
	gone := randomWord(t)
	g := searchBatch("gone")
	set(g, "steps[1].payload.stdout", gone)
	mustApply(t, s, g)
	mustApply(t, s, searchBatch("keep"))
	if got := hitKeys(mustSearch(t, s, gone)); len(got) != 1 {
		t.Fatalf("Search(the text to delete) = %v; want one hit", got)
	}
	mustExec(t, s.Path(), "PRAGMA secure_delete = ON", "PRAGMA foreign_keys = ON", "BEGIN IMMEDIATE",
		"DELETE FROM sessions WHERE id = 'gone'",
		"INSERT INTO tombstones (id, deleted_at) SELECT 'gone', max(updated_at) + 1 FROM sessions",
		"UPDATE search_epoch SET epoch = epoch + 1",
		"COMMIT").Close()
	if got := hitKeys(mustSearch(t, s, gone)); len(got) != 0 {
		t.Errorf("Search(the deleted text) after the other process's crash = %v; want none", got)
	}
	if got := hitKeys(mustSearch(t, s, "promptwordkeep")); len(got) != 1 {
		t.Errorf("Search(promptwordkeep) after the rebuild = %v; want one hit", got)
	}
	indexHoldsAll(t, s.Path())
}

// With IndexAtLowPriority the background catch-up runs on a thread at
// nice 10, and without it on none: seen from /proc while the catch-up
// waits for the index's write lock, which another connection holds.
func TestBackgroundCatchUpAtLowPriority(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a thread's own priority is set on Linux only")
	}
	for _, low := range []bool{true, false} {
		t.Run(fmt.Sprintf("low priority %v", low), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			var opts []store.Option
			if low {
				opts = append(opts, store.IndexAtLowPriority())
			}
			s, err := store.Open(context.Background(), path, opts...)
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			defer s.Close()
			earlier := nicedThreads(t) // of other stores' catch-ups, ending
			holder := mustExec(t, store.IndexPath(path), "BEGIN IMMEDIATE")
			mustApply(t, s, searchBatch("x")) // its catch-up waits for holder
			// Not a speed bound: the test only waits for the catch-up to start.
			found := false
			for deadline := time.Now().Add(3 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				for tid := range nicedThreads(t) {
					found = found || !earlier[tid]
				}
			}
			if err := sqlitex.ExecuteTransient(holder, "ROLLBACK", nil); err != nil {
				t.Fatal(err)
			}
			if found != low {
				t.Errorf("a new thread at nice 10 while the catch-up waits: %v; want %v", found, low)
			}
		})
	}
}

// nicedThreads is the threads of this process at nice 10, by id.
func nicedThreads(t *testing.T) map[string]bool {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	niced := map[string]bool{}
	for _, name := range stats {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // the thread ended
		}
		// Fields after the command's closing parenthesis: state is the
		// first (field 3 of proc(5)), nice field 19.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if fields[19-3] == "10" {
			niced[filepath.Base(filepath.Dir(name))] = true
		}
	}
	return niced
}
