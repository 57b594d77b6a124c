package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// Image returns image n (from 1) of the step with seq in session id, as
// the SQLite store's Image: store.ErrNotFound when the session, the step or
// the image is not there, an error that is store.ErrNotImage when its bytes
// are not an image served.
func (s *Store) Image(ctx context.Context, id string, seq int64, n int) (store.Image, error) {
	var (
		stamp   int64
		payload string
	)
	if !storable(id) {
		return store.Image{}, store.ErrNotFound
	}
	err := s.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT s.updated_at, p.payload FROM sessions s
			JOIN steps p ON p.session_pk = s.pk WHERE s.id = $1 AND p.seq = $2`, id, seq).Scan(&stamp, &payload)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Image{}, store.ErrNotFound
	}
	if err != nil {
		return store.Image{}, fmt.Errorf("store: read image %d of step %d of session %s: %w", n, seq, id, err)
	}
	return store.StepImage(stamp, id, seq, payload, n)
}
