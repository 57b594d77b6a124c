package store

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite"
)

// A page of filters alone walks the sessions in page order and the steps
// of each by seq, so it reads only as far as its last hit: no query of a
// search reads every step of the store or sorts its hits. SQLite left to
// choose read every step and sorted every hit (0.8-1.5 s a page at
// 1,000,000 steps, BenchmarkSearch); without migration 015's index it
// sorted the steps of the sessions that start at the same time. path:
// reads its paths off an index of them (migration 017).
func TestFilterPageWalksInOrder(t *testing.T) {
	s := mustOpenInternal(t)
	queries := []string{walkSessionsSQL(nil)}
	for _, text := range []string{"agent:claude-code", "type:command", "type:edit|read", "status:failed",
		"flag:dangerous_command", "path:handlers/", "workspace:svc", "verdict:needs_attention",
		"after:2026-11-01", "before:2026-11-02", "owner:ana", "type:command status:failed path:x"} {
		q, err := parseQuery(SearchQuery{Q: text})
		if err != nil {
			t.Fatalf("parseQuery(%q) = %v", text, err)
		}
		queries = append(queries, filterPageSQL(q.where), filterPageSQL(append(q.where, afterCursor)), walkSessionsSQL(q.sessions))
	}
	one, err := parseQuery(SearchQuery{Q: "type:command", Session: "s-1"}) // one session's
	if err != nil {
		t.Fatal(err)
	}
	queries = append(queries, filterPageSQL(one.where), walkSessionsSQL(one.sessions))
	for _, q := range queries {
		plan := queryPlan(t, s, q)
		if strings.Contains(q, "$.path") && !strings.Contains(strings.Join(plan, "\n"), "INDEX steps_paths") {
			t.Errorf("%s\nreads the payload of every step with a path: %q; want steps_paths (migration 017)", q, plan)
		}
		for _, step := range plan {
			scan, isScan := strings.CutPrefix(step, "SCAN ")
			if strings.Contains(step, "TEMP B-TREE") ||
				isScan && !strings.Contains(scan, "INDEX sessions_search_order") && !strings.HasPrefix(scan, "json_each") {
				t.Errorf("%s\nreads or sorts more than its page: %q (plan: %q)", q, step, plan)
			}
		}
	}
}

// A page's snippets read its rows' texts, payloads and errors by their
// keys, never a scan of the steps or the sessions.
func TestRowSnippetsReadByKey(t *testing.T) {
	plan := queryPlan(t, mustOpenInternal(t), rowSnippetsSQL)
	for _, step := range plan {
		if scan, ok := strings.CutPrefix(step, "SCAN "); ok && !strings.HasPrefix(scan, "json_each") {
			t.Errorf("rowSnippetsSQL reads more than its page's rows: %q (plan: %q)", step, plan)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(plan), func(s string) bool { return !strings.Contains(s, "USING INTEGER PRIMARY KEY") })); n < 3 {
		t.Errorf("rowSnippetsSQL looks up %d tables by key; want the step's doc, the step and the session's doc (plan: %q)", n, plan)
	}
}

// mustOpenInternal opens a store in a temporary folder, closed at the
// end of the test.
func mustOpenInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// queryPlan is the detail column of SQLite's EXPLAIN QUERY PLAN of q, its
// arguments left NULL.
func queryPlan(t *testing.T, s *Store, q string) []string {
	t.Helper()
	var plan []string
	err := s.read(context.Background(), func(conn *sqlite.Conn) error {
		st, _, err := conn.PrepareTransient("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			return err
		}
		defer st.Finalize()
		for {
			if more, err := st.Step(); err != nil || !more {
				return err
			}
			plan = append(plan, st.ColumnText(3))
		}
	})
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", q, err)
	}
	return plan
}

// The filters IsSessionFilter names are those whose condition names no
// step column: a walk of the sessions may leave out the sessions they do
// not keep.
func TestSessionFilters(t *testing.T) {
	for _, key := range append(slices.Clone(SearchFilterKeys), "session") {
		if got, want := IsSessionFilter(key), !strings.Contains(searchFilters[key], "st."); got != want {
			t.Errorf("IsSessionFilter(%s) = %v; its condition %q says %v", key, got, searchFilters[key], want)
		}
	}
}
