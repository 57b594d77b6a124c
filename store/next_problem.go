package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// nextProblemSQL finds the first failed or flagged step of a session after
// a seq (or, with max and <, the last before it) by the two partial
// indexes of those steps, a seek each: a session's page that leaves steps
// out steps through every problem with it (the e and E keys).
const nextProblemSQL = `SELECT %[1]s(seq) FROM (
	  SELECT %[1]s(seq) AS seq FROM steps INDEXED BY steps_failed WHERE session_pk = :pk AND outcome = 'failed' AND seq %[2]s :seq
	  UNION ALL
	  SELECT %[1]s(seq) FROM steps INDEXED BY steps_flagged WHERE session_pk = :pk AND flag_count > 0 AND seq %[2]s :seq)`

var (
	problemAfterSQL  = fmt.Sprintf(nextProblemSQL, "min", ">")
	problemBeforeSQL = fmt.Sprintf(nextProblemSQL, "max", "<")
)

// NextProblem returns the seq of the first failed or flagged step of
// session id after seq, or with back the last before it; ok is false when
// there is none. ErrNotFound for a session not stored.
func (s *Store) NextProblem(ctx context.Context, id string, seq int64, back bool) (next int64, ok bool, err error) {
	query := problemAfterSQL
	if back {
		query = problemBeforeSQL
	}
	err = s.read(ctx, func(conn *sqlite.Conn) error {
		pk, err := sessionPK(conn, id)
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		return sqlitex.Execute(conn, query, &sqlitex.ExecOptions{
			Named: map[string]any{":pk": pk, ":seq": seq},
			ResultFunc: func(st *sqlite.Stmt) error {
				ok = st.ColumnType(0) != sqlite.TypeNull
				next = st.ColumnInt64(0)
				return nil
			},
		})
	})
	if err != nil {
		return 0, false, fmt.Errorf("store: next problem of %s: %w", id, err)
	}
	return next, ok, nil
}
