package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// NextProblem returns the seq of the first failed or flagged step of
// session id after seq, or with back the last before it, by the partial
// index of those steps (migration 016); ok is false when there is none.
// store.ErrNotFound for a session not stored.
func (s *Store) NextProblem(ctx context.Context, id string, seq int64, back bool) (next int64, ok bool, err error) {
	query := `SELECT seq FROM steps WHERE session_pk = $1 AND (outcome = 'failed' OR flag_count > 0) AND seq > $2 ORDER BY seq LIMIT 1`
	if back {
		query = `SELECT seq FROM steps WHERE session_pk = $1 AND (outcome = 'failed' OR flag_count > 0) AND seq < $2 ORDER BY seq DESC LIMIT 1`
	}
	err = s.read(ctx, func(tx pgx.Tx) error {
		var pk int64
		if !storable(id) {
			return store.ErrNotFound
		}
		err := tx.QueryRow(ctx, `SELECT pk FROM sessions WHERE id = $1`, id).Scan(&pk)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, query, pk, seq).Scan(&next)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("store: next problem of %s: %w", id, err)
	}
	return next, ok, nil
}
