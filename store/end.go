package store

import (
	"context"
	"fmt"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// EndSession sets a stored session's ended_at to at, unless it already
// ends at or after at, and stamps the session so the live stream tells of
// it. For writers that learn of the end apart from the records (Claude
// Code's SessionEnd hook); a later push or import without ended_at keeps
// it (see Apply). It reports whether it wrote; it returns ErrNotFound for
// an unknown session and a *DeletedError for a deleted one.
func (s *Store) EndSession(ctx context.Context, id string, at time.Time) (changed bool, err error) {
	ended := at.UTC().Format(time.RFC3339Nano)
	err = s.write(ctx, func(conn *sqlite.Conn) error {
		if deleted, err := isDeleted(conn, id); err != nil || deleted {
			if deleted {
				return &DeletedError{SessionID: id}
			}
			return err
		}
		var pk int64
		var stored string
		err := sqlitex.Execute(conn, `SELECT pk, coalesce(ended_at, '') FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
			Args:       []any{id},
			ResultFunc: func(st *sqlite.Stmt) error { pk, stored = st.ColumnInt64(0), st.ColumnText(1); return nil },
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		if t, ok := ParseTimestamp(stored); ok && !at.After(t) {
			return nil
		}
		stamp, err := nextStamp(conn)
		if err != nil {
			return err
		}
		changed = true
		return sqlitex.Execute(conn, `UPDATE sessions SET ended_at = ?, updated_at = ? WHERE pk = ?`,
			&sqlitex.ExecOptions{Args: []any{ended, stamp, pk}})
	})
	if err != nil {
		return false, fmt.Errorf("store: end session %s: %w", id, err)
	}
	return changed, nil
}
