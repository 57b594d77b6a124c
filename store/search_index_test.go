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
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// indexState reads, from the file itself, how many index rows match
// word and whether the index holds the newest write.
func indexState(t *testing.T, path, word string) (hits int64, current bool) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	err = sqlitex.Execute(conn, `SELECT (SELECT count(*) FROM search WHERE search MATCH ?),
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
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		tb.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	err = sqlitex.ExecuteTransient(conn, `SELECT (SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'search%'),
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

	var all []byte
	for _, name := range []string{"s.db", "s.db-wal", "s.db-shm"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read %s: %v", name, err)
		}
		all = append(all, data...)
	}
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
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
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
