package store

import (
	"context"
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// errBudgetSpent stops a step read once it holds its budget of bytes.
var errBudgetSpent = errors.New("budget spent")

// TurnSteps reads the steps of one turn of session id whose seq is above
// after, in seq order, and stops once they hold budget bytes of payload:
// it always returns at least one step when one is left. Each call is one
// short read transaction, so a long session can be read a few steps at a
// time, in memory bounded by budget plus one step, without holding the
// store's log open. An empty result means the turn has no more steps;
// ErrNotFound means the session is gone.
func (s *Store) TurnSteps(ctx context.Context, id, turnID string, after int64, budget int) ([]Step, error) {
	out := []Step{}
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		var pk int64
		err := sqlitex.Execute(conn, `SELECT pk FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
			Args:       []any{id},
			ResultFunc: func(st *sqlite.Stmt) error { pk = st.ColumnInt64(0); return nil },
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		held := 0
		err = sqlitex.Execute(conn, `SELECT `+stepColumns(false)+` FROM steps
			WHERE session_pk = ? AND turn_id = ? AND seq > ? ORDER BY seq`, &sqlitex.ExecOptions{
			Args: []any{pk, turnID, after},
			ResultFunc: func(st *sqlite.Stmt) error {
				if len(out) > 0 && held >= budget {
					return errBudgetSpent
				}
				r := scanStepRow(st)
				s, err := r.Step(id)
				if err != nil {
					return err
				}
				held += r.Bytes()
				out = append(out, s)
				return nil
			},
		})
		if errors.Is(err, errBudgetSpent) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read steps of session %s turn %s: %w", id, turnID, err)
	}
	return out, nil
}
