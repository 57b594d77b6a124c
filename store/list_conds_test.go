package store

import "testing"

// Every filter ListQuery.Filters can name has a condition in SQLite; the
// PostgreSQL store checks its own map the same way.
func TestListFilterConditions(t *testing.T) {
	since, until := int64(1), int64(2)
	q := ListQuery{Agent: "a", Verdict: "v", Unreviewed: true, Owner: "o", Workspace: "w", Failed: true, Flagged: true, Noted: true, Cost: "recorded"}
	for _, f := range q.Filters(ListBounds{Since: &since, Until: &until}, "") {
		if sqliteListConds[f.Name] == "" {
			t.Errorf("filter %q has no SQLite condition", f.Name)
		}
	}
	if n := len(q.Filters(ListBounds{Since: &since, Until: &until}, "")); n != len(sqliteListConds) {
		t.Errorf("Filters names %d filters, SQLite has %d conditions", n, len(sqliteListConds))
	}
}
