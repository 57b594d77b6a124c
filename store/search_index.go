package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The search index (table search, migration 006) is kept current by
// triggers on steps and sessions, in each write's own transaction, so every
// writer (ingest, import, capture, hook) and Delete keep it without a call
// of their own. Reindex rebuilds it from the stored rows.

// Reindex rebuilds the search index from every stored session and step in
// one transaction, and returns how many rows it indexed.
func (s *Store) Reindex(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		for _, sql := range []string{
			`DELETE FROM search`,
			`INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_session_docs`,
			`INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_step_docs`,
			`INSERT INTO search (search) VALUES ('optimize')`,
		} {
			if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
				return err
			}
		}
		return sqlitex.ExecuteTransient(conn, `SELECT count(*) FROM search`, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error { n = st.ColumnInt64(0); return nil },
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store: reindex: %w", err)
	}
	return n, nil
}
