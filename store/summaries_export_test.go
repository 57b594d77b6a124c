package store

import (
	"context"
	"strings"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// RememberedListJSON is the list item encoding List remembers for session
// id (nil if none) and the bytes its summaries count against their bound.
func (s *Store) RememberedListJSON(id string) (encoding []byte, bytes int) {
	encoding = s.summaries.encoding(id)
	s.summaries.mu.Lock()
	defer s.summaries.mu.Unlock()
	return encoding, s.summaries.bytes
}

// ListPagePlan is SQLite's plan of List's page query for q.
func (s *Store) ListPagePlan(q ListQuery) (string, error) {
	b, err := q.Bounds()
	if err != nil {
		return "", err
	}
	where, args := listFilter(q, b, "")
	args[":limit"] = max(q.Limit, -1)
	if b.After {
		args[":ns"], args[":id"] = 1, "a"
	}
	var plan []string
	err = s.read(context.Background(), func(conn *sqlite.Conn) error {
		return sqlitex.ExecuteTransient(conn, "EXPLAIN QUERY PLAN "+listPage(where, b.After), &sqlitex.ExecOptions{
			Named: args,
			ResultFunc: func(st *sqlite.Stmt) error {
				plan = append(plan, st.ColumnText(3))
				return nil
			},
		})
	})
	return strings.Join(plan, "\n"), err
}

// UsageDayPlan is the query plan of a daily usage report's read.
func (s *Store) UsageDayPlan() (string, error) {
	var plan []string
	err := s.read(context.Background(), func(conn *sqlite.Conn) error {
		return sqlitex.ExecuteTransient(conn, "EXPLAIN QUERY PLAN "+usageHoursQuery("''", "", ""), &sqlitex.ExecOptions{
			Named: map[string]any{":since": 0, ":until": 1 << 62},
			ResultFunc: func(st *sqlite.Stmt) error {
				plan = append(plan, st.ColumnText(3))
				return nil
			},
		})
	})
	return strings.Join(plan, "\n"), err
}

// SessionRowPlan is SQLite's plan of the read of a session's row with its
// summary, as Detail reads it.
func (s *Store) SessionRowPlan() (string, error) {
	var plan []string
	err := s.read(context.Background(), func(conn *sqlite.Conn) error {
		return sqlitex.ExecuteTransient(conn, `EXPLAIN QUERY PLAN SELECT `+sessionColumns+`, `+summaryColumns+` FROM sessions s WHERE s.id = ?`, &sqlitex.ExecOptions{
			Args: []any{"a"},
			ResultFunc: func(st *sqlite.Stmt) error {
				plan = append(plan, st.ColumnText(3))
				return nil
			},
		})
	})
	return strings.Join(plan, "\n"), err
}
