package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The catch-up reads only what changed: the changed sessions by their
// stamps and each one's changed steps by theirs, never every session or
// step of the store, so a live push's catch-up costs the same in a store
// of a million steps as in an empty one (BenchmarkCatchUp100). SQLite
// left to choose walked all of steps_by_change.
func TestCatchUpReadsOnlyWhatChanged(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range append([]string{indexPlanSQL}, indexChangesSQL...) {
		var plan []string
		opts := &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			plan = append(plan, st.ColumnText(3))
			return nil
		}}
		if strings.Contains(q, ":through") {
			opts.Named = map[string]any{":through": int64(1)}
		}
		err := s.read(context.Background(), func(conn *sqlite.Conn) error {
			return sqlitex.Execute(conn, "EXPLAIN QUERY PLAN "+q, opts)
		})
		if err != nil {
			t.Fatalf("EXPLAIN QUERY PLAN %s: %v", q, err)
		}
		for _, step := range plan {
			if scan, ok := strings.CutPrefix(step, "SCAN "); ok && !strings.HasPrefix(scan, "idx.search_state") && scan != "changed" {
				t.Errorf("%s\nreads a whole table: %q (plan: %q)", q, step, plan)
			}
		}
	}
}
