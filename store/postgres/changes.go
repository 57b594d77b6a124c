package postgres

import (
	"context"
	"fmt"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// notifyChannel is the LISTEN/NOTIFY channel every committing write
// signals with its change stamp (Listen).
const notifyChannel = "service_changes"

// write runs fn in one transaction that first takes the write lock
// (pg_advisory_xact_lock(stampLock), released at commit or rollback), so
// writers of every server process go one at a time, as on SQLite, and
// change stamps commit in the order they were given out.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, stampLock); err != nil {
			return err
		}
		return fn(tx)
	})
}

// nextStamp returns the change stamp a write would take: later than every
// stamp given out, and not before now (the database's clock, one for every
// server process), in unix microseconds. It moves nothing: a write that
// changes something calls commitStamp.
func nextStamp(ctx context.Context, tx pgx.Tx) (int64, error) {
	var stamp int64
	err := tx.QueryRow(ctx, `SELECT greatest(last + 1, (extract(epoch FROM clock_timestamp()) * 1e6)::bigint) FROM clock`).Scan(&stamp)
	return stamp, err
}

// commitStamp moves the clock on to stamp and signals the write to every
// listener (Listen); PostgreSQL delivers the signal when the transaction
// commits, and drops it if it rolls back.
func commitStamp(ctx context.Context, tx pgx.Tx, stamp int64) error {
	_, err := tx.Exec(ctx, `WITH moved AS (UPDATE clock SET last = $1)
		SELECT pg_notify('`+notifyChannel+`', $1::text)`, stamp)
	return err
}

// ChangesSince returns the sessions written or deleted after stamp, oldest
// first, and the latest stamp among them (stamp itself if none is later).
// Writers commit stamps in order (write), so a stamp seen here is never
// followed by an earlier one.
func (s *Store) ChangesSince(ctx context.Context, stamp int64) ([]store.Change, int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, updated_at, false FROM sessions WHERE updated_at > $1
		UNION ALL SELECT id, deleted_at, true FROM tombstones WHERE deleted_at > $1
		ORDER BY 2`, stamp)
	var out []store.Change
	latest := stamp
	var c store.Change
	_, err := pgx.ForEachRow(rows, []any{&c.SessionID, &c.Stamp, &c.Deleted}, func() error {
		out = append(out, c)
		latest = max(latest, c.Stamp)
		return nil
	})
	if err != nil {
		return nil, stamp, fmt.Errorf("store: changes since %d: %w", stamp, err)
	}
	return out, latest, nil
}

// LatestStamp returns the newest change stamp in the store (0 when empty).
func (s *Store) LatestStamp(ctx context.Context) (int64, error) {
	var latest int64
	if err := s.pool.QueryRow(ctx, `SELECT last FROM clock`).Scan(&latest); err != nil {
		return 0, fmt.Errorf("store: latest stamp: %w", err)
	}
	return latest, nil
}
