package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Why processes take turns to set a store up: a new file must be switched
// to WAL mode, and `PRAGMA journal_mode=WAL` asks for the write lock while
// already holding a read lock. When another connection has the write lock
// (another process midway through its own setup), SQLite returns
// SQLITE_BUSY at once, without calling the busy handler, as waiting could
// deadlock; zombiezen's pool then fails, and so did the process. Once the
// file is in WAL mode, SQLite's own locks and busy handler are enough. So
// Open holds an OS lock (flock) on a sidecar file, <store>-lock, from
// before it creates the store file until the migrations are done: setup
// runs one process at a time, and each migration once. The kernel drops
// the lock when its process dies, so a crash never leaves a stale one; the
// file stays, holding only the last holder's pid (removing it would race
// with a process that has just opened it).

// setupPoll is how often a process waiting for another's setup tries again;
// a setup takes tens of milliseconds.
const setupPoll = 10 * time.Millisecond

// lockSetup takes the setup lock of the store at path, waiting while
// another process holds it until ctx ends. The unlock it returns may be
// called more than once.
func lockSetup(ctx context.Context, path string) (unlock func(), err error) {
	name := path + "-lock" // beside -wal and -shm; SQLite's dotfile locking uses .lock
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, setupBusyError(ctx, name, time.Since(start))
		case <-time.After(setupPoll):
		}
	}
	// Who holds the lock, for the message of a process that gives up waiting.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil // closing the file drops the lock
}

// setupBusyError says, in one line, whose setup lock a process waited for.
func setupBusyError(ctx context.Context, name string, waited time.Duration) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err() // interrupted, not timed out
	}
	holder := "another process"
	if b, err := os.ReadFile(name); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			holder = "process " + strconv.Itoa(pid)
		}
	}
	return fmt.Errorf("%s still holds %s, setting up the same store, after %s", holder, name, waited.Round(time.Millisecond))
}

// writeBusyError says why a process gave up when, its setup lock taken,
// SQLite's own write lock on the store stayed with another process (a
// long write, or a tool holding the file) until the wait ended.
func writeBusyError(waited time.Duration) error {
	return fmt.Errorf("another process held the store's write lock for %s", waited.Round(time.Millisecond))
}
