package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The search index (table search, migration 006) changes in the write's
// own transaction: Apply calls indexChanges, Delete calls unindexSession.
// Each runs a few whole statements, never one per step: FTS5 writes a new
// segment at the end of every statement.

// indexChanges (re)indexes the session's own row and the steps that the
// write stamped with stamp. created says the session is new, so it has
// nothing in the index yet.
func indexChanges(conn *sqlite.Conn, pk, stamp int64, created bool) error {
	args := []any{pk, stamp}
	if !created {
		err := sqlitex.Execute(conn, `DELETE FROM search WHERE rowid = -?1
			OR rowid IN (SELECT pk FROM steps WHERE session_pk = ?1 AND updated_at = ?2)`, &sqlitex.ExecOptions{Args: args})
		if err != nil {
			return err
		}
	}
	err := sqlitex.Execute(conn, `INSERT INTO search (rowid, body)
		SELECT -session_pk, body FROM search_session_docs WHERE session_pk = ?1
		UNION ALL
		SELECT step_pk, body FROM search_step_docs
		WHERE step_pk IN (SELECT pk FROM steps WHERE session_pk = ?1 AND updated_at = ?2)`, &sqlitex.ExecOptions{Args: args})
	return err
}

// unindexSession removes the session's rows from the index, before its
// own rows go: with the secure-delete option the terms leave the index
// b-trees at once, and secure_delete overwrites the freed pages.
func unindexSession(conn *sqlite.Conn, pk int64) error {
	return sqlitex.Execute(conn, `DELETE FROM search WHERE rowid = -?1
		OR rowid IN (SELECT pk FROM steps WHERE session_pk = ?1)`, &sqlitex.ExecOptions{Args: []any{pk}})
}

// Reindex rebuilds the search index from every stored session and step in
// one transaction, and returns how many rows it indexed.
func (s *Store) Reindex(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		for _, sql := range []string{
			`DELETE FROM search`,
			`INSERT INTO search (rowid, body) SELECT -session_pk, body FROM search_session_docs`,
			`INSERT INTO search (rowid, body) SELECT step_pk, body FROM search_step_docs`,
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
