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
			if _, err = tx.Exec(ctx, string(sql)); err != nil || migrationsInGo[name] == nil {
				return err
			}
			return migrationsInGo[name](ctx, tx)
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return rewriteSearchDocs(ctx, conn)
}

// migrationsInGo are the parts of migrations SQL cannot do, each run in
// its migration's transaction after its SQL.
var migrationsInGo = map[string]func(context.Context, pgx.Tx) error{
	"migrations/012_step_command_files.sql": fillCommandFiles,
	"migrations/014_step_tools.sql":         fillToolNames,
	"migrations/015_notes_folded.sql":       fillNotesFolded,
}

// fillCommandFiles fills the command_files column of the command steps
// stored before migration 012 (store.StoredCommandFiles). Without the
// statistics of the new column fillFromPayload gathers, the planner took
// the path: filter to match most steps and read every step of each
// session (1.4 s a page at 1,000,000 steps, against 0.8 s with them,
// docs/performance.md).
func fillCommandFiles(ctx context.Context, tx pgx.Tx) error {
	return fillFromPayload(ctx, tx, store.TypeCommand, "command_files", store.StoredCommandFiles)
}

// fillToolNames fills the tool_name column of the steps of type other
// stored before migration 014 (store.ToolNameOf, as the writer's
// StepColumns.ToolName).
func fillToolNames(ctx context.Context, tx pgx.Tx) error {
	return fillFromPayload(ctx, tx, store.TypeOther, "tool_name", store.ToolNameOf)
}

// fillNotesFolded fills the folded column of the notes written before
// migration 015 (store.FoldNote, as the writer does). Notes are written by
// hand: a store holds few enough to read in one statement.
func fillNotesFolded(ctx context.Context, tx pgx.Tx) error {
	rows, _ := tx.Query(ctx, `SELECT id, text FROM notes`)
	var ids []int64
	var folded []string
	var id int64
	var text string
	_, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error {
		ids, folded = append(ids, id), append(folded, store.FoldNote(text))
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the notes: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE notes SET folded = f.folded
		FROM unnest($1::bigint[], $2::text[]) AS f(id, folded) WHERE notes.id = f.id`, ids, folded)
	return err
}

// fillFromPayload fills a column a migration added to the steps of one
// type with what the writer's rule makes of each one's payload (of),
// rewriteSpan step pks a statement, writing only the rows where it is not
// empty; then gathers the table's statistics, so the planner knows the new
// column.
func fillFromPayload(ctx context.Context, tx pgx.Tx, stepType, column string, of func(payload string) string) error {
	var last int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(pk), 0) FROM steps`).Scan(&last); err != nil {
		return err
	}
	for lo := int64(0); lo < last; lo += rewriteSpan {
		rows, _ := tx.Query(ctx, `SELECT pk, payload FROM steps WHERE type = $1 AND pk > $2 AND pk <= $3`, stepType, lo, lo+rewriteSpan)
		var pks []int64
		var values []string
		var pk int64
		var payload string
		_, err := pgx.ForEachRow(rows, []any{&pk, &payload}, func() error {
			if v := of(payload); v != "" {
				pks, values = append(pks, pk), append(values, v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the steps of type %s: %w", stepType, err)
		}
		if len(pks) == 0 {
			continue
		}
		_, err = tx.Exec(ctx, `UPDATE steps SET `+column+` = f.value
			FROM unnest($1::bigint[], $2::text[]) AS f(pk, value) WHERE steps.pk = f.pk`, pks, values)
		if err != nil {
			return fmt.Errorf("write %s: %w", column, err)
		}
	}
	_, err := tx.Exec(ctx, `ANALYZE steps`)
	return err
}

// migrationNames are the migration files in the order they apply.
func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	slices.Sort(names) // numbered: 001_..., 002_...
	return names, err
}

var _ store.Backend = (*Store)(nil)
