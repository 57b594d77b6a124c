package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// A deletion is done when it commits; its clean-up (the secure overwrite
// reaching the database file, the write-ahead log truncated, the capture
// files removed) may have to wait for a reader in another process. Pending
// clean-ups are rows of the scrubs table, so they survive the process:
// this store retries them in the background until they are done, and the
// next Open of the file resumes them.
const (
	// scrubWait bounds how long one attempt waits for readers and writers
	// to let the log be truncated.
	scrubWait = 100 * time.Millisecond
	// scrubEvery is the pause between background attempts.
	scrubEvery = 500 * time.Millisecond
)

// scrubber runs the background attempts of one store, one goroutine at most.
type scrubber struct {
	mu      sync.Mutex
	running bool
	again   bool // a clean-up was added while an attempt ran
	closed  bool
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// scrubLater starts the background attempts unless they run already.
func (s *Store) scrubLater() {
	b := &s.scrubs
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.again = true
	if b.running {
		return
	}
	if b.ctx == nil {
		b.ctx, b.stop = context.WithCancel(context.Background())
	}
	b.running = true
	b.wg.Add(1)
	go s.scrubLoop(b.ctx)
}

// stopScrubs ends the background attempts; what is left stays pending for
// the next Open. Called by Close.
func (s *Store) stopScrubs() {
	b := &s.scrubs
	b.mu.Lock()
	b.closed = true
	if b.stop != nil {
		b.stop()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (s *Store) scrubLoop(ctx context.Context) {
	b := &s.scrubs
	defer b.wg.Done()
	t := time.NewTicker(scrubEvery)
	defer t.Stop()
	for {
		b.mu.Lock()
		b.again = false
		b.mu.Unlock()
		// An error (the store busy, the disk full) is retried next time.
		done, _ := s.scrub(ctx)
		b.mu.Lock()
		if done && !b.again {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errLogHeld means readers or writers of other connections kept the
// write-ahead log from being checkpointed and truncated.
var errLogHeld = errors.New("the write-ahead log is in use by another connection")

// scrub finishes every pending clean-up it can: it removes the capture
// files, truncates the log and forgets the clean-ups. done reports that
// none is left.
func (s *Store) scrub(ctx context.Context) (done bool, err error) {
	ids, err := s.pendingScrubs(ctx)
	if err != nil || len(ids) == 0 {
		return err == nil, err
	}
	// Capture files go at once, whatever holds the log.
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.removeCaptures(id))
	}
	if err := errors.Join(append(errs, s.truncateLog(ctx))...); err != nil {
		return false, err
	}
	err = s.write(ctx, func(conn *sqlite.Conn) error {
		for _, id := range ids {
			if err := sqlitex.Execute(conn, `DELETE FROM scrubs WHERE id = ?`, &sqlitex.ExecOptions{Args: []any{id}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: forget finished clean-ups: %w", err)
	}
	// The rows just removed hold no session content; truncating again only
	// keeps the log empty, so a failure here changes nothing.
	_ = s.truncateLog(ctx)
	return true, nil
}

// truncateLog copies the write-ahead logs of the store file and of the
// search index's file into their databases, which overwrites the pages
// that held deleted rows there, and truncates each log to zero bytes. It
// waits at most scrubWait for other connections; writers wait on it
// meanwhile (this store's on its write locks, both taken, store first), so
// the wait is kept short.
func (s *Store) truncateLog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, scrubWait)
	defer cancel()
	unlock, err := s.lockBoth(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.conn(ctx, func(conn *sqlite.Conn) error {
		busy := false
		for _, schema := range []string{"main", "idx"} {
			err := sqlitex.ExecuteTransient(conn, `PRAGMA `+schema+`.wal_checkpoint(TRUNCATE)`, &sqlitex.ExecOptions{
				ResultFunc: func(st *sqlite.Stmt) error { busy = busy || st.ColumnInt(0) != 0; return nil },
			})
			if err != nil {
				return fmt.Errorf("truncate the write-ahead log of %s: %w", schema, err)
			}
		}
		if busy {
			return errLogHeld
		}
		return nil
	})
}

// pendingScrubs lists the deleted sessions whose clean-up is not finished.
func (s *Store) pendingScrubs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT id FROM scrubs ORDER BY id`, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error { ids = append(ids, st.ColumnText(0)); return nil },
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list pending clean-ups: %w", err)
	}
	return ids, nil
}
