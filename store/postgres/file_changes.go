package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// FileChanges returns the files a session created, edited, or removed
// after reading or editing them, in order of the first such step, or
// store.ErrNotFound: the SQLite store's answer, put together by the same
// code (store.Tallies.FileChanges).
func (s *Store) FileChanges(ctx context.Context, id string) ([]store.FileChange, error) {
	var out []store.FileChange
	err := s.read(ctx, func(tx pgx.Tx) error {
		var pk int64
		var root string
		if !storable(id) {
			return store.ErrNotFound
		}
		err := tx.QueryRow(ctx, `SELECT pk, workspace_root FROM sessions WHERE id = $1`, id).Scan(&pk, &root)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		out, _, err = s.tallies.FileChanges(pgBlocks{ctx, tx}, pk, root, func(pks []int64, into map[int64][2]*string) error {
			rows, _ := tx.Query(ctx, `SELECT pk, old_string, new_string FROM steps WHERE pk = ANY($1)`, pks)
			var (
				pk       int64
				old, new *string
			)
			_, err := pgx.ForEachRow(rows, []any{&pk, &old, &new}, func() error {
				into[pk] = [2]*string{old, new}
				old, new = nil, nil // the next row scans into new values
				return nil
			})
			return err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: file changes of %s: %w", id, err)
	}
	return out, nil
}
