package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
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
