package postgres

import (
	"context"
	"fmt"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// TurnSteps reads the steps of one turn of session id whose seq is above
// after, in seq order, and stops once they hold budget bytes
// (store.StepRow.Bytes), as the SQLite store's TurnSteps: at least one
// step when one is left, none when the turn has no more, store.ErrNotFound
// when the session is gone.
func (s *Store) TurnSteps(ctx context.Context, id, turnID string, after int64, budget int) ([]store.Step, error) {
	out := []store.Step{}
	err := s.read(ctx, func(tx pgx.Tx) error {
		pk, err := sessionPK(ctx, tx, id)
		if err != nil {
			return err
		}
		if pk == 0 {
			return store.ErrNotFound
		}
		if !storable(turnID) {
			return nil // no such turn
		}
		rows, _ := tx.Query(ctx, `SELECT `+stepColumns("")+` FROM steps
			WHERE session_pk = $1 AND turn_id = $2 AND seq > $3 ORDER BY seq`, pk, turnID, after)
		defer rows.Close()
		held := 0
		for rows.Next() {
			if len(out) > 0 && held >= budget {
				return nil
			}
			r, err := scanStepRow(rows)
			if err != nil {
				return err
			}
			st, err := r.Step(id)
			if err != nil {
				return err
			}
			held += r.Bytes()
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: read steps of session %s turn %s: %w", id, turnID, err)
	}
	return out, nil
}
