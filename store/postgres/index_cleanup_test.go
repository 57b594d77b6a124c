package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentreview/service/store/postgres/pgtest"
)

// One process cleans the indexes at a time: while another holds the lock a
// clean-up is refused and the delete stays due; once it is free, the
// background clean-up of the deleting process runs, and a clean-up cut
// short leaves no index behind.
func TestCleanIndexesOneAtATime(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, other := mustOpenDSN(t, dsn), mustOpenDSN(t, dsn) // two server processes
	mustApply(t, s, gen("a", 0, 50))
	mustApply(t, s, gen("b", 0, 50))

	holder, err := other.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, cleanLock); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.cleanIndexes(ctx); !errors.Is(err, errCleanBusy) {
		t.Errorf("cleanIndexes while another process cleans = %v; want errCleanBusy", err)
	}
	time.Sleep(cleanDelay + 200*time.Millisecond) // the background clean-up tried, and was refused too
	var due int64
	if err := s.pool.QueryRow(ctx, `SELECT due FROM index_cleanup`).Scan(&due); err != nil || due == 0 {
		t.Errorf("due while the lock is held = %d, %v; want the delete's stamp", due, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, cleanLock); err != nil {
		t.Fatal(err)
	}
	took := waitCleaned(t, s, cleanRetry+time.Minute)
	t.Logf("cleaned %v after the lock was freed (the retry is every %v)", took, cleanRetry)

	// A clean-up cut short (a process stopping mid-REINDEX) leaves an
	// invalid ..._ccnew index: the next clean-up drops it. A writer's open
	// transaction on actors holds the first REINDEX (actors_pkey) after it
	// made its new index, where the clean-up is cut short. Both background
	// clean-ups are stopped meanwhile: one of them taking the lock first, or
	// dropping the leftover before it is counted, would be no cut-short at all.
	s.stopCleaner()
	other.stopCleaner()
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	writer, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(ctx, `LOCK TABLE actors IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	// The cut: the REINDEX is cancelled on the server once its new index
	// exists. (Cancelling the clean-up's context would not do: pgx then
	// closes the connection, and PostgreSQL, not told, finishes the
	// REINDEX once the writer is gone, so sometimes nothing was left.)
	watched := make(chan struct{})
	short, giveUp := context.WithCancel(ctx) // only if the watch fails
	defer giveUp()
	go func() {
		defer close(watched)
		for {
			var n int
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname ~ '_ccnew'`).Scan(&n); err != nil {
				t.Errorf("watching for the new index: %v", err)
				giveUp()
				return
			}
			if n > 0 {
				s.pool.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND query LIKE 'REINDEX INDEX CONCURRENTLY%'`)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	cutShort := other.cleanIndexes(short)
	<-watched
	writer.Rollback(ctx)
	var left int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`).Scan(&left); err != nil || left == 0 {
		t.Fatalf("after a clean-up cut short (%v): %d invalid indexes, %v; want its ..._ccnew", cutShort, left, err)
	}
	s.startCleaner()
	s.cleanSoon()
	waitCleaned(t, s, cleanRetry+time.Minute) // s's background clean-up
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`).Scan(&left); err != nil || left != 0 {
		t.Errorf("invalid indexes after the next clean-up: %d, %v; want 0", left, err)
	}
}
