package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitemigration"
	"zombiezen.com/go/sqlite/sqlitex"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// appID marks the file as this service's store (PRAGMA application_id).
const appID = 0x5e55104e

// busyLimit bounds how long a store call waits for a lock or a connection
// when the caller's context has no deadline of its own.
const busyLimit = 15 * time.Second

// poolSize is how many connections a store keeps open.
const poolSize = 8

// OwnerLocal is the owner of every session for now.
const OwnerLocal = "local"

// Store is the SQLite file shared by the server, imports, capture and the
// terminal delete. It is safe for concurrent use, and several processes may
// open the same file at once.
type Store struct {
	pool       *sqlitemigration.Pool
	path       string
	capturedOn string
	whole      Tallies            // whole-session counts, report and changes (whole.go)
	summaries  ListSummaries      // List's summaries (summaries.go)
	stop       context.CancelFunc // ends the background checkpoints, if any
	stopped    chan struct{}
	scrubs     scrubber
	index      indexer       // search_index.go
	writer     chan struct{} // the write lock of this process (lockWrites)
}

// Option changes how Open sets up a store.
type Option func(*options)

type options struct {
	checkpointEvery time.Duration
	indexInChunks   bool
	indexProgress   func(done, total int64)
}

// CheckpointEvery moves write-ahead-log checkpoints off the commit path:
// this store's connections no longer checkpoint when a commit crosses the
// log's threshold (which stalls that one commit for milliseconds), and a
// background goroutine checkpoints every d instead. For the server, whose
// pushes wait on their commits; other processes keep SQLite's default.
func CheckpointEvery(d time.Duration) Option {
	return func(o *options) { o.checkpointEvery = d }
}

// IndexInChunks makes the background catch-up of the search index take a
// few writes per transaction (indexChunk steps), so a write waiting for
// the lock goes between two of them: for the server, whose pushes wait
// (the 100-step push p99: 158 -> 44 ms). Other processes (import, capture,
// hook) index everything behind in one transaction: an import's writes are
// small, and in chunks they became many small FTS5 segments to merge
// (+21% of an import's CPU time, docs/performance.md).
func IndexInChunks() Option {
	return func(o *options) { o.indexInChunks = true }
}

// OnIndexProgress has fn called as a catch-up of the search index of at
// least buildChunk (50,000) steps goes on: the build of the index of a
// store that migration 008 left unindexed (in Open), Reindex, or the
// writes of a crashed process. It gets the steps indexed so far and all
// the catch-up has to index: first (0, total), then after each chunk,
// done strictly increasing, last (total, total). fn runs on the goroutine
// of the catch-up (Open's, Reindex's, a search's or the background one)
// and must return quickly.
func OnIndexProgress(fn func(done, total int64)) Option {
	return func(o *options) { o.indexProgress = fn }
}

// Open opens (creating if needed) the store at path. A new file and its
// folder are made readable by the owner only.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	// One bounded wait for another process's setup and then for our own.
	start := time.Now()
	wait, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(wait, busyLimit)
		defer cancel()
	}
	unlock, err := lockSetup(wait, path) // see setuplock.go
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer unlock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	f.Close()
	schema, err := loadSchema()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	s := &Store{path: path, capturedOn: host, writer: make(chan struct{}, 1)}
	s.index.inChunks, s.index.progress = o.indexInChunks, o.indexProgress
	// The pool retries a file it cannot open until the wait below gives up;
	// the first failure ends the wait, so Open reports its cause at once.
	s.pool = sqlitemigration.NewPool(path, schema, sqlitemigration.Options{
		Flags:    sqlite.OpenReadWrite | sqlite.OpenCreate | sqlite.OpenWAL | sqlite.OpenURI,
		PoolSize: poolSize,
		PrepareConn: func(conn *sqlite.Conn) error {
			if err := prepareConn(conn); err != nil {
				return err
			}
			if o.checkpointEvery > 0 {
				return sqlitex.ExecuteTransient(conn, "PRAGMA wal_autocheckpoint = 0", nil)
			}
			return nil
		},
		OnReady: unlock, // setup ends when the migrations are done
		OnError: func(err error) { fail(err) },
	})
	// Wait for the migrations so a broken file fails at open, not later.
	if err := s.conn(wait, func(*sqlite.Conn) error { return nil }); err != nil {
		if cause := context.Cause(wait); errors.Is(cause, context.DeadlineExceeded) {
			err = writeBusyError(time.Since(start))
		} else if cause != nil {
			err = cause
		}
		s.pool.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// The index of a store a migration left unindexed is built before
	// Open returns (see search_index.go); otherwise this is one read.
	if err := s.catchUpIndex(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("store: open %s: build the search index: %w", path, err)
	}
	if o.checkpointEvery > 0 {
		bg, stop := context.WithCancel(context.Background())
		s.stop, s.stopped = stop, make(chan struct{})
		go s.checkpoints(bg, o.checkpointEvery)
	}
	s.scrubLater() // resumes clean-ups an earlier process left pending
	return s, nil
}

func loadSchema() (sqlitemigration.Schema, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return sqlitemigration.Schema{}, err
	}
	slices.Sort(names) // numbered: 001_..., 002_...
	schema := sqlitemigration.Schema{AppID: appID}
	for _, name := range names {
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return schema, err
		}
		schema.Migrations = append(schema.Migrations, string(b))
	}
	return schema, nil
}

// prepareConn sets what every connection needs. synchronous=NORMAL is
// durable against a crash of any process in WAL mode; only a power loss
// can lose the last commits.
func prepareConn(conn *sqlite.Conn) error {
	for _, pragma := range []string{"foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL"} {
		if err := sqlitex.ExecuteTransient(conn, "PRAGMA "+pragma, nil); err != nil {
			return fmt.Errorf("PRAGMA %s: %w", pragma, err)
		}
	}
	return nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close stops the background work and closes every connection; clean-ups
// still pending resume at the next Open.
func (s *Store) Close() error {
	// What this process wrote is in the index before it ends; an error
	// (the store busy) leaves it to the next catch-up of any process.
	s.index.wg.Wait()
	_ = s.catchUpIndex(context.Background())
	s.stopScrubs()
	if s.stop != nil {
		s.stop()
		<-s.stopped
	}
	return s.pool.Close()
}

// checkpoints copies the write-ahead log into the database every d, as
// far as readers allow (PASSIVE: it never waits on them), and looks for
// pending clean-ups (scrub.go), until ctx ends.
func (s *Store) checkpoints(ctx context.Context, d time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// An error here (the store busy past busyLimit) is retried next tick.
		_ = s.conn(ctx, func(conn *sqlite.Conn) error {
			return sqlitex.ExecuteTransient(conn, "PRAGMA wal_checkpoint(PASSIVE)", nil)
		})
		s.scrubLater() // also clean-ups that other processes left pending
	}
}

// conn runs fn with a connection, bounding every wait by busyLimit unless
// ctx already has a deadline.
func (s *Store) conn(ctx context.Context, fn func(*sqlite.Conn) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, busyLimit)
		defer cancel()
	}
	conn, err := s.pool.Take(ctx)
	if err != nil {
		return err
	}
	defer s.pool.Put(conn)
	return fn(conn)
}

// write runs fn in one BEGIN IMMEDIATE transaction, rolled back if fn fails
// (a *DiskFullError when the disk had no space for it), holding the write
// lock of this process (lockWrites) from before BEGIN until after COMMIT.
func (s *Store) write(ctx context.Context, fn func(*sqlite.Conn) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, busyLimit)
		defer cancel()
	}
	unlock, err := s.lockWrites(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	err = s.conn(ctx, func(conn *sqlite.Conn) (err error) {
		end, err := sqlitex.ImmediateTransaction(conn)
		if err != nil {
			return err
		}
		defer end(&err)
		return fn(conn)
	})
	if ctx.Err() != nil && sqlite.ErrCode(err).ToPrimary() == sqlite.ResultBusy {
		// Another process held the lock until the wait ended: the
		// context's error says so, as it does for this process's writers.
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return diskFull(err)
}

// lockWrites takes the write lock of this store, so its writers wait for
// each other in Go, in the order they came, and the next starts the moment
// the previous commits: waiting for SQLite's lock instead sleeps in its busy
// handler, in steps of up to 100 ms, and wakes late. The busy handler stays
// for writers of other processes (import, capture, hook beside the server).
// A caller whose ctx ends while it waits gets ctx.Err() and writes nothing.
// The lock is taken before a connection, so waiting writers hold none.
func (s *Store) lockWrites(ctx context.Context) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s.writer <- struct{}{}:
		return func() { <-s.writer }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read runs fn in one read transaction, so it sees one snapshot.
func (s *Store) read(ctx context.Context, fn func(*sqlite.Conn) error) error {
	return s.conn(ctx, func(conn *sqlite.Conn) (err error) {
		end := sqlitex.Transaction(conn)
		defer end(&err)
		return fn(conn)
	})
}

// latestStamp returns the newest change stamp in the store (0 when empty).
func latestStamp(conn *sqlite.Conn) (int64, error) {
	var last int64
	err := sqlitex.Execute(conn, `SELECT max(
		  coalesce((SELECT max(updated_at) FROM sessions), 0),
		  coalesce((SELECT max(deleted_at) FROM tombstones), 0))`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { last = st.ColumnInt64(0); return nil }})
	return last, err
}

// nextStamp returns a change stamp later than every stamp in the store.
// Called inside a write transaction, it orders stamps as commits are
// ordered, across processes.
func nextStamp(conn *sqlite.Conn) (int64, error) {
	last, err := latestStamp(conn)
	return max(time.Now().UnixMicro(), last+1), err
}

// FormatStamp renders a change stamp as an RFC 3339 timestamp.
func FormatStamp(stamp int64) string {
	return time.UnixMicro(stamp).UTC().Format(time.RFC3339Nano)
}
