// Package postgres is the team server's store: the store contract
// (store.Backend) on PostgreSQL, for several stateless server processes in
// front of one database. The local service never uses it.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Advisory lock keys of this store (pg_advisory_lock): one process
// migrates at a time, one transaction writes at a time (stampLock,
// migrations/001_init.sql), and one process rebuilds the indexes after
// deletes at a time (cleanLock, delete.go).
const (
	migrationLock int64 = 0x5e55104e
	stampLock     int64 = 0x5e55104f
	cleanLock     int64 = 0x5e551050
)

// Store is a PostgreSQL database shared by every team server process. It is
// safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// tallies remembers each session's whole-session results by block of
	// steps (read.go), as the SQLite store does.
	tallies store.Tallies
	// summaries remembers each listed session by change stamp (list.go).
	summaries store.ListSummaries
	// cleaner rebuilds the indexes that held a deleted session's text
	// (delete.go).
	cleaner cleaner
}

// Open connects to the database at dsn (postgres://...) and brings its
// schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	// PostgreSQL compiles a query whose estimated cost is high (the list's
	// summaries of every session: a subquery per session) with JIT, and
	// the compiling took 335 of the 366 ms of that query at 1,000,000
	// steps; every query here reads few rows by an index, so it is off,
	// unless the DSN sets jit (docs/performance.md, "Counts kept").
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	s := &Store{pool: pool}
	s.startCleaner()
	return s, nil
}

// Close stops the index clean-up (one cut short is finished by the next
// clean-up of any process) and closes every connection.
func (s *Store) Close() error {
	s.stopCleaner()
	s.pool.Close()
	return nil
}

// migrate applies, in order of their numbers, the migration files not yet
// recorded in schema_migrations, each in its own transaction, then brings
// the search words to this build's text rule (rewriteSearchDocs), while
// holding a session lock so that two processes starting together migrate
// once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	for _, name := range names {
		sql, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `INSERT INTO schema_migrations (name) VALUES ($1) ON CONFLICT DO NOTHING`, name)
			if err != nil || tag.RowsAffected() == 0 {
				return err // applied already
			}
			_, err = tx.Exec(ctx, string(sql))
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return rewriteSearchDocs(ctx, conn)
}

// migrationNames are the migration files in the order they apply.
func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	slices.Sort(names) // numbered: 001_..., 002_...
	return names, err
}

var _ store.Backend = (*Store)(nil)
