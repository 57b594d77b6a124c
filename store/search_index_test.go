package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
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
	if err != nil {
		conn.Close()
		tb.Fatalf("attach the index of %s: %v", path, err)
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

// Text a write replaced, still in the index when its session is deleted,
// leaves the store files with the rest: no term of it stays in a segment,
// in the kept text of replaced rows or in the log.
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

// oldStore makes, at path, a store as a build before migration 008 left
// it (user_version 7), holding what writes to a current store put in
// sessions and steps: 3 sessions of 4 pushes of 40 steps and searchBatch
// "x", 15 writes in all. It returns how many steps it holds and the
// current store the rows came from, its index current.
func oldStore(t *testing.T, path string) (steps int64, src string) {
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
	if err := store.CreateAtVersion(ctx, path, 7); err != nil {
		t.Fatalf("CreateAtVersion(%s, 7) = %v", path, err)
	}
	mustExec(t, path, "ATTACH '"+from.Path()+"' AS src",
		"INSERT INTO sessions SELECT * FROM src.sessions",
		"INSERT INTO steps SELECT * FROM src.steps",
		"DETACH src")
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
	steps, src := oldStore(t, path)
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
	steps, src := oldStore(t, path)
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
	steps, src := oldStore(t, path)
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
	oldStore(t, path)
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
