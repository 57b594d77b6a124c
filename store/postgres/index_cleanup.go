package postgres

// The index clean-up after a delete: VACUUM leaves a deleted session's
// words as keys of the search index's GIN and key copies in B-tree pages,
// so the indexes whose keys hold text are rebuilt (migrations/005).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The index clean-up's timing: how long a deleted session's text may stay
// in an index (docs/team.md, "Delete on PostgreSQL").
const (
	// cleanDelay gathers the deletes of a burst into one clean-up: it
	// starts at most this long after the first of them.
	cleanDelay = time.Second
	// cleanRetry is how soon a process tries again while another one
	// holds cleanLock, in case that one finished before this delete.
	cleanRetry = 5 * time.Second
	// cleanEvery is how often each process looks for a delete left to
	// clean by a process that stopped first: the admin's `service delete
	// --db`, a crash, a clean-up cut short.
	cleanEvery = time.Minute
)

// errCleanBusy is cleanIndexes's answer while another process cleans.
var errCleanBusy = errors.New("another process is cleaning the indexes")

// cleaner runs a store's index clean-up in the background, one goroutine
// per Store (per server process).
type cleaner struct {
	poke chan struct{} // a delete to clean; holds one
	stop context.CancelFunc
	done chan struct{}
}

func (s *Store) startCleaner() {
	ctx, stop := context.WithCancel(context.Background())
	s.cleaner = cleaner{poke: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go s.cleanLoop(ctx)
}

// stopCleaner stops the clean-up, cutting short one under way.
func (s *Store) stopCleaner() {
	s.cleaner.stop()
	<-s.cleaner.done
}

// cleanSoon asks for a clean-up within cleanDelay.
func (s *Store) cleanSoon() {
	select {
	case s.cleaner.poke <- struct{}{}:
	default: // one is asked for already
	}
}

// cleanLoop cleans the indexes cleanDelay after a delete of this process
// (not later: more deletes do not postpone it), every cleanEvery for the
// deletes of others, and again after cleanRetry while another process
// holds the lock.
func (s *Store) cleanLoop(ctx context.Context) {
	defer close(s.cleaner.done)
	next := time.Now().Add(cleanEvery)
	t := time.NewTimer(cleanEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cleaner.poke:
			if soon := time.Now().Add(cleanDelay); soon.Before(next) {
				next = soon
				t.Reset(cleanDelay)
			}
		case <-t.C:
			wait := cleanEvery
			if err := s.cleanIndexes(ctx); errors.Is(err, errCleanBusy) {
				wait = cleanRetry
			} // another failure: the next look in cleanEvery tries again
			next = time.Now().Add(wait)
			t.Reset(wait)
		}
	}
}

// cleanIndexes rebuilds, while a delete is due (index_cleanup), every
// index of the content tables whose keys can hold text, so that no copy of
// a deleted session's text stays in an index: REINDEX INDEX CONCURRENTLY,
// which lets reads and writes go on, one index at a time. Only one process
// cleans at a time (cleanLock); it returns errCleanBusy while another does.
// It first drops what a REINDEX cut short left (invalid indexes named
// ..._ccnew or ..._ccold), since they hold text too.
func (s *Store) cleanIndexes(ctx context.Context) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store: clean indexes: %w", err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, cleanLock).Scan(&got); err != nil {
		return fmt.Errorf("store: clean indexes: %w", err)
	}
	if !got {
		return errCleanBusy
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, cleanLock); err != nil {
			conn.Conn().Close(context.Background()) // the lock goes with its session
		}
	}()
	for {
		var due int64
		if err := conn.QueryRow(ctx, `SELECT due FROM index_cleanup`).Scan(&due); err != nil {
			return fmt.Errorf("store: clean indexes: %w", err)
		}
		if due == 0 {
			return nil
		}
		leftovers, indexes, err := textIndexes(ctx, conn.Conn())
		if err != nil {
			return fmt.Errorf("store: clean indexes: %w", err)
		}
		for _, ix := range leftovers {
			if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+ix); err != nil {
				return fmt.Errorf("store: clean indexes: drop %s: %w", ix, err)
			}
		}
		for _, ix := range indexes {
			if _, err := conn.Exec(ctx, "REINDEX INDEX CONCURRENTLY "+ix); err != nil {
				return fmt.Errorf("store: clean indexes: reindex %s: %w", ix, err)
			}
		}
		// Done unless a delete came meanwhile: then once more.
		if _, err := conn.Exec(ctx, `UPDATE index_cleanup SET due = 0 WHERE due = $1`, due); err != nil {
			return fmt.Errorf("store: clean indexes: %w", err)
		}
	}
}

// textIndexes names, quoted for SQL, the indexes of the content tables
// whose keys can hold text (a key column of variable length: text,
// tsvector; or an expression), and the leftovers of a REINDEX CONCURRENTLY
// cut short (invalid, named ..._ccnew or ..._ccold); other invalid
// indexes, such as one an admin is building, are left alone. Found in the catalog, so an index a later migration adds is
// cleaned too.
func textIndexes(ctx context.Context, conn *pgx.Conn) (leftovers, indexes []string, err error) {
	rows, _ := conn.Query(ctx, `SELECT i.indexrelid::regclass::text,
		  NOT i.indisvalid
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = ANY ($1::text[]::regclass[])
		  AND (i.indisvalid OR c.relname ~ '_cc(new|old)[0-9]*$')
		  AND (i.indexprs IS NOT NULL OR EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		    WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) AND t.typlen = -1))
		ORDER BY 1`, contentTables)
	var name string
	var leftover bool
	_, err = pgx.ForEachRow(rows, []any{&name, &leftover}, func() error {
		if leftover {
			leftovers = append(leftovers, name)
		} else {
			indexes = append(indexes, name)
		}
		return nil
	})
	return leftovers, indexes, err
}
