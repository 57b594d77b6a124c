package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Delete removes a session for good: its records are overwritten on disk
// (secure_delete), the write-ahead log is truncated so no copy stays there,
// and only a tombstone with the id is kept so the session is never
// recorded again. It returns ErrNotFound for an unknown or deleted id.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		pk, err := sessionPK(conn, id)
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		stamp, err := nextStamp(conn)
		if err != nil {
			return err
		}
		// Child rows go with the session (ON DELETE CASCADE).
		if err := sqlitex.Execute(conn, `DELETE FROM sessions WHERE pk = ?`, &sqlitex.ExecOptions{Args: []any{pk}}); err != nil {
			return err
		}
		return sqlitex.Execute(conn, `INSERT INTO tombstones (id, deleted_at) VALUES (?, ?)`, &sqlitex.ExecOptions{Args: []any{id, stamp}})
	})
	if err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	return s.conn(ctx, func(conn *sqlite.Conn) error {
		if err := sqlitex.ExecuteTransient(conn, `PRAGMA wal_checkpoint(TRUNCATE)`, nil); err != nil {
			return fmt.Errorf("store: delete session %s: truncate the write-ahead log: %w", id, err)
		}
		return nil
	})
}
