package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "dir", "s.db")
	s := mustOpenPath(t, path)
	if s.Path() != path {
		t.Errorf("Path() = %q; want %q", s.Path(), path)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("Stat(%s) = %v", p, err)
		}
		if fi.Mode() != want {
			t.Errorf("mode of %s = %v; want %v", p, fi.Mode(), want)
		}
	}
}

func TestOpenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("b"))
	mustDelete(t, s, "b")
	before := snapshot(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	s = mustOpenPath(t, path)
	assertUnchanged(t, s, before)
}

// Open refuses a file that is not this service's store, at once and
// naming the cause, and leaves the file's content alone.
func TestOpenRefusesOtherFiles(t *testing.T) {
	tests := []struct {
		name    string
		write   func(t *testing.T, path string)
		wantErr string
		check   func(t *testing.T, path string)
	}{
		{"not a database", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("not an SQLite file\n", 20)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "file is not a database", func(t *testing.T, path string) {
			if b, _ := os.ReadFile(path); string(b) != strings.Repeat("not an SQLite file\n", 20) {
				t.Errorf("file after Open = %q; want it untouched", b)
			}
		}},
		{"database of another application", func(t *testing.T, path string) {
			conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := sqlitex.ExecuteScript(conn, `PRAGMA application_id = 42; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');`, nil); err != nil {
				t.Fatal(err)
			}
		}, "application_id", func(t *testing.T, path string) {
			// Opening in WAL mode switches the file's journal mode before the
			// application id is read; the content must stay as it was.
			conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var got []string
			err = sqlitex.Execute(conn, `SELECT name FROM sqlite_schema UNION ALL SELECT body FROM notes`, &sqlitex.ExecOptions{
				ResultFunc: func(st *sqlite.Stmt) error { got = append(got, st.ColumnText(0)); return nil },
			})
			if want := []string{"notes", "keep me"}; err != nil || !slices.Equal(got, want) {
				t.Errorf("other application's database after Open = %v, %v; want %v", got, err, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			tc.write(t, path)
			start := time.Now()
			s, err := store.Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil error; want the file refused", tc.name)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%s) = %v; want an error naming %q", tc.name, err, tc.wantErr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Open(%s) took %v to fail; want it at once", tc.name, d)
			}
			tc.check(t, path)
		})
	}
}

// TestCheckpointEvery: with checkpoints in the background, commits leave
// the log to grow until the next tick, which then copies it back.
func TestCheckpointEvery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path, store.CheckpointEvery(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 30 { // well past the default threshold of 1000 pages
		b := newBatch(fmt.Sprintf("c%d", i))
		set(b, "steps[1].payload.stdout", strings.Repeat("x", 200_000))
		mustApply(t, s, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		db, _ := os.Stat(path)
		if db != nil && db.Size() > 30*200_000 {
			break // the steps reached the database file itself
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file holds %d bytes after 5 s: the background checkpoint never ran", db.Size())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdWrite starts a write that holds the store's write lock until the
// returned release is called, which waits for its commit.
func holdWrite(t *testing.T, s *store.Store) (release func()) {
	t.Helper()
	held, done, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() { errc <- s.HoldWrite(context.Background(), held, done) }()
	select {
	case <-held:
	case err := <-errc:
		t.Fatalf("HoldWrite = %v; want it to hold the lock", err)
	}
	return func() {
		close(done)
		if err := <-errc; err != nil {
			t.Errorf("HoldWrite = %v; want no error", err)
		}
	}
}

// A write waiting for another write of the same store gives up with its
// context's error when the context ends, and writes nothing: it waited in
// Go, not in SQLite's busy handler (which ends in an interrupt error).
func TestWriteWaitEndsWithContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, newBatch("b"))
			before := snapshot(t, s)
			release := holdWrite(t, s)
			ctx, cancel := tc.ctx()
			defer cancel()
			_, err := s.Apply(ctx, mustParse(t, newBatch("a")))
			release()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Apply(waiting, %s) = %v; want %v", tc.name, err, tc.want)
			}
			assertUnchanged(t, s, before)
		})
	}
}

// Writes waiting for another write of the same store hold no connection:
// more of them than the pool has connections leave reads free to run, and
// each is written once the lock is free.
func TestWritersWaitWithoutConnections(t *testing.T) {
	s := mustOpen(t)
	release := holdWrite(t, s)
	const n = 20 // more than the pool's 8 connections
	var started sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		started.Add(1)
		go func() {
			started.Done()
			_, err := s.Apply(context.Background(), mustParse(t, newBatch(fmt.Sprintf("w%02d", i))))
			errs <- err
		}()
	}
	started.Wait()
	for range 50 { // reads while the writers wait
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := s.LatestStamp(ctx)
		cancel()
		if err != nil {
			release()
			t.Fatalf("LatestStamp while %d writes wait = %v; want no error", n, err)
		}
		runtime.Gosched()
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Apply(waiting) = %v; want no error", err)
		}
	}
	if l := mustList(t, s, ""); len(l.Sessions) != n {
		t.Errorf("List() has %d sessions; want %d", len(l.Sessions), n)
	}
}

// The writes of a store follow each other on one connection, kept out of
// the pool, so its page cache outlives the other connections'
// transactions; the index's writes keep another; a read never gets
// either; an interrupted write leaves its connection fit for the next.
func TestWritesKeepTheirConnection(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	conn := func(write, index bool) *sqlite.Conn {
		t.Helper()
		c, err := s.ConnOf(ctx, write, index)
		if err != nil {
			t.Fatalf("ConnOf(write %v, index %v) = %v", write, index, err)
		}
		return c
	}
	write, index := conn(true, false), conn(false, true)
	for i := range 20 { // more than the pool's 8 connections
		if _, err := s.Apply(ctx, mustParse(t, newBatch(fmt.Sprintf("k%02d", i)))); err != nil {
			t.Fatalf("Apply = %v", err)
		}
		if c := conn(false, false); c == write || c == index {
			t.Fatalf("a read ran on the connection kept for writes (%p; store %p, index %p)", c, write, index)
		}
	}
	if err := s.CatchUpIndex(); err != nil {
		t.Fatal(err)
	}
	if c := conn(true, false); c != write {
		t.Errorf("a write after 20 pushes and 20 reads ran on %p; want the connection of the first, %p", c, write)
	}
	if c := conn(false, true); c != index || c == write {
		t.Errorf("a write of the index ran on %p; want the one of the first, %p, not the store's %p", c, index, write)
	}
	// A write its context ends mid-transaction is rolled back, and the
	// kept connection goes on with the next.
	if err := s.InterruptWrite(ctx); err == nil {
		t.Fatal("InterruptWrite = nil; want the interrupt's error")
	}
	if _, err := s.Apply(ctx, mustParse(t, newBatch("after-interrupt"))); err != nil {
		t.Fatalf("Apply after an interrupted write = %v", err)
	}
	if c := conn(true, false); c != write {
		t.Errorf("a write after an interrupted one ran on %p; want %p", c, write)
	}
	if l := mustList(t, s, ""); len(l.Sessions) != 21 {
		t.Errorf("List() has %d sessions; want 21", len(l.Sessions))
	}
}

// A write waiting for another process's write gives up with its context's
// error too (a busy store, 503 over HTTP), and writes nothing.
func TestWriteWaitForOtherProcessEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, other := mustOpenPath(t, path), mustOpenPath(t, path)
	mustApply(t, s, newBatch("b"))
	before := snapshot(t, s)
	release := holdWrite(t, other)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Apply(ctx, mustParse(t, newBatch("a")))
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Apply(waiting for another process) = %v; want %v", err, context.DeadlineExceeded)
	}
	assertUnchanged(t, s, before)
}

// CacheSize sets the page cache of every connection, for the store file
// and the index file; without it each keeps SQLite's default.
func TestCacheSize(t *testing.T) {
	for _, tc := range []struct {
		opts []store.Option
		want int64
	}{{nil, -2000}, {[]store.Option{store.CacheSize(500)}, -500}} {
		s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		sizes, err := s.CacheSizes(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range sizes {
			if got != [2]int64{tc.want, tc.want} {
				t.Errorf("connection %d: cache_size of the store and index files = %v; want %d for both", i, got, tc.want)
			}
		}
		s.Close()
	}
}
