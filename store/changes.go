package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Change says a session was written or deleted at a change stamp. Any
// process writing the store produces one.
type Change struct {
	SessionID string
	Stamp     int64
	Deleted   bool // the session was deleted at Stamp
}

// ChangesSince returns the sessions written or deleted after stamp, oldest
// first, and the latest stamp in the store (stamp itself if none is later).
func (s *Store) ChangesSince(ctx context.Context, stamp int64) ([]Change, int64, error) {
	var out []Change
	latest := stamp
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT id, updated_at, false FROM sessions WHERE updated_at > :stamp
			UNION ALL SELECT id, deleted_at, true FROM tombstones WHERE deleted_at > :stamp
			ORDER BY 2`, &sqlitex.ExecOptions{
			Named: map[string]any{":stamp": stamp},
			ResultFunc: func(st *sqlite.Stmt) error {
				c := Change{SessionID: st.ColumnText(0), Stamp: st.ColumnInt64(1), Deleted: st.ColumnBool(2)}
				out = append(out, c)
				latest = max(latest, c.Stamp)
				return nil
			},
		})
	})
	if err != nil {
		return nil, stamp, fmt.Errorf("store: changes since %d: %w", stamp, err)
	}
	return out, latest, nil
}

// LatestStamp returns the newest change stamp in the store (0 when empty).
func (s *Store) LatestStamp(ctx context.Context) (int64, error) {
	var latest int64
	err := s.conn(ctx, func(conn *sqlite.Conn) (err error) {
		latest, err = latestStamp(conn)
		return err
	})
	return latest, err
}
