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
	writer     chan struct{} // this process's write lock on the store file (lockWrites)
	// indexWriter is this process's write lock on the index file
	// (lockIndex), taken after writer when a write takes both.
	indexWriter chan struct{}
	// indexHeld lets go of indexWriter once the write that took it inside
	// its transaction (holdIndex) has ended; only that write, holding
	// writer, reads or sets it.
	indexHeld func()
	// writeConn and indexConn are the connections the holders of writer
	// and of indexWriter write with (keptConn), nil until the first such
	// write; only a holder of the lock reads or sets each.
	writeConn, indexConn *sqlite.Conn
}

// Option changes how Open sets up a store.
type Option func(*options)

type options struct {
	checkpointEvery  time.Duration
	indexInChunks    bool
	indexLowPriority bool
	indexProgress    func(done, total int64)
	cacheKiB         int
}

// CacheSize bounds the page cache of each of the store's connections to
// kib KiB per file (the store's and the index's; SQLite's default is
// 2,000 KiB). Pure-Go SQLite allocates it outside the Go heap, so the
// import's memory limit does not cover it: for `service import`, whose
// writes are mostly new rows (docs/performance.md, "Peak memory of one
// 210 MB transcript").
func CacheSize(kib int) Option {
	return func(o *options) { o.cacheKiB = kib }
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
// the index's lock (Delete, a batch that replaces indexed text) goes
// between two of them: for the server. (Before the index had a file of
// its own, every push waited for it: the 100-step push p99 158 -> 44 ms.)
// It also gathers a burst of pushes into one catch-up (indexQuiet).
// Other processes (import, capture, hook) index everything behind in one
// transaction: an import's writes are small, and in chunks they became
// many small FTS5 segments to merge (+21% of an import's CPU time,
// docs/performance.md); and they follow their writes closely
// (followQuiet), so that Close has little left to wait for.
func IndexInChunks() Option {
	return func(o *options) { o.indexInChunks = true }
}

// IndexAtLowPriority runs the background catch-up of the search index on
// an OS thread of its own at a low CPU priority (nice threadNice, on
// Linux), so that the work a request does comes first for a core. For the
// server, which also runs one more P than Go's default (serve.go): with a
// P free of the catch-up, a push gets a P at once and then the CPU before
// the catch-up's thread. The 100-step push p99 on an idle machine went
// from 10.3-16.6 to 8.9-11.9 ms (docs/performance.md). Other processes
// keep the catch-up as it was: an import wants it done.
func IndexAtLowPriority() Option {
	return func(o *options) { o.indexLowPriority = true }
}

// ServerOptions are how the local server (cmd/service serve) opens its
// store, for it and for the benchmarks that measure it: checkpoints off
// the commits, the index's catch-up in chunks and at a low priority.
func ServerOptions() []Option {
	return []Option{CheckpointEvery(time.Second), IndexInChunks(), IndexAtLowPriority()}
}

// threadNice is the background catch-up's nice value. Not 19 (the
// lowest): the catch-up holds the index's write lock, which a search and
// a Delete wait for, and on a machine busy with other work a thread at 19
// gets about 1.5% of a core, so a 256-step chunk (~12 ms of CPU) could
// hold them for most of a second; at 10, about 10%, ~120 ms. The push's
// p99 was the same at both (docs/performance.md).
const threadNice = 10

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
	// Both files are made before SQLite opens them, readable by the owner only.
	for _, name := range []string{path, IndexPath(path)} {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("store: open: %w", err)
		}
		f.Close()
	}
	schema, err := loadSchema()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	s := &Store{path: path, capturedOn: host, writer: make(chan struct{}, 1), indexWriter: make(chan struct{}, 1)}
	s.index.inChunks, s.index.lowPriority, s.index.progress = o.indexInChunks, o.indexLowPriority, o.indexProgress
	// The pool retries a file it cannot open until the wait below gives up;
	// the first failure ends the wait, so Open reports its cause at once.
	// The migrations run on a prepared connection, the index file attached.
	s.pool = sqlitemigration.NewPool(path, schema, sqlitemigration.Options{
		Flags:    sqlite.OpenReadWrite | sqlite.OpenCreate | sqlite.OpenWAL | sqlite.OpenURI,
		PoolSize: poolSize,
		PrepareConn: func(conn *sqlite.Conn) error {
			if err := prepareConn(conn, IndexPath(path)); err != nil {
				return err
			}
			if o.cacheKiB > 0 {
				for _, schema := range []string{"main", "idx"} {
					if err := sqlitex.ExecuteTransient(conn, fmt.Sprintf("PRAGMA %s.cache_size = -%d", schema, o.cacheKiB), nil); err != nil {
						return err
					}
				}
			}
			if o.checkpointEvery > 0 { // for every attached file
				return sqlitex.ExecuteTransient(conn, "PRAGMA wal_autocheckpoint = 0", nil)
			}
			return nil
		},
		OnError: func(err error) { fail(err) },
	})
	// Wait for the migrations so a broken file fails at open, not later.
	if err := s.conn(wait, func(*sqlite.Conn) error { return nil }); err != nil {
		if cause := context.Cause(wait); errors.Is(cause, context.DeadlineExceeded) {
			err = writeBusyError(time.Since(start))
		} else if cause != nil {
			err = cause
		}
		s.closePool()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// The index file's tables, made by code (search_index.go), end the
	// setup: made or rebuilt once, by one process at a time.
	if err := s.setupIndex(wait); err != nil {
		s.closePool()
		return nil, fmt.Errorf("store: open %s: set up the search index: %w", path, err)
	}
	unlock()
	// The index of a store a migration left unindexed is built before
	// Open returns (see search_index.go); otherwise this is one read.
	if err := s.catchUpIndex(ctx); err != nil {
		s.closePool()
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

// registerPayloadRule makes rule the SQL function name(payload) of the
// connection, NULL where it makes "": a migration that adds a column the
// writer fills from each step's payload fills it with it for the steps
// stored before.
func registerPayloadRule(conn *sqlite.Conn, name string, rule func(payload string) string) error {
	err := conn.CreateFunction(name, &sqlite.FunctionImpl{
		NArgs: 1, Deterministic: true,
		Scalar: func(_ sqlite.Context, a []sqlite.Value) (sqlite.Value, error) {
			if v := rule(a[0].Text()); v != "" {
				return sqlite.TextValue(v), nil
			}
			return sqlite.Value{}, nil // NULL
		},
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", name, err)
	}
	return nil
}

// prepareConn sets what every connection needs: the search views' SQL
// functions (registerSearchText), and the search index's file (index)
// attached as schema idx with the same settings. SQLite's temporary
// files stay in memory (temp_store): statement journals hold the pages a
// statement changes as they were, so a delete wrote the text it overwrote
// to an unlinked file in /var/tmp, whose disk blocks keep it, and an
// import wrote 295 MB of them for the 96 MB corpus; temporary tables hold
// the indexed text an Apply replaces. In memory, a delete of the 210 MB
// transcript's session and its import grew by 1 MB at most
// (docs/performance.md, "Temporary files in memory, and an encrypted
// spill").
// synchronous=NORMAL is durable against a crash of any process in WAL
// mode; only a power loss can lose the last commits. The first connection of a process sets the
// index file to WAL mode; Open holds the setup lock then (setuplock.go).
func prepareConn(conn *sqlite.Conn, index string) error {
	if err := registerSearchText(conn); err != nil { // the search views call it
		return fmt.Errorf("register search functions: %w", err)
	}
	// The writer's rules for the columns it fills from a step's payload,
	// for the migrations that fill them for the steps stored before.
	if err := registerPayloadRule(conn, "step_command_files", StoredCommandFiles); err != nil { // migration 021
		return err
	}
	if err := registerPayloadRule(conn, "step_tool_name", ToolNameOf); err != nil { // migration 024
		return err
	}
	if err := registerFoldNote(conn); err != nil { // migration 025 calls it
		return fmt.Errorf("register note_fold: %w", err)
	}
	if err := sqlitex.ExecuteTransient(conn, "ATTACH DATABASE ? AS idx", &sqlitex.ExecOptions{Args: []any{index}}); err != nil {
		return fmt.Errorf("attach %s: %w", index, err)
	}
	for _, pragma := range []string{"foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL", "temp_store = MEMORY",
		"idx.journal_mode = WAL", "idx.secure_delete = ON", "idx.synchronous = NORMAL"} {
		if err := sqlitex.ExecuteTransient(conn, "PRAGMA "+pragma, nil); err != nil {
			return fmt.Errorf("PRAGMA %s: %w", pragma, err)
		}
	}
	return nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// IndexPath is the file of the search index of the store at path: a
// database of its own, so that writing the index never holds the store's
// write lock (search_index.go).
func IndexPath(path string) string { return path + "-search" }

// Files lists every file that holds the content of the store at path: the
// store and its search index, each with its write-ahead log, shared
// memory and rollback journal (most of them absent at any one time).
func Files(path string) []string {
	var files []string
	for _, db := range []string{path, IndexPath(path)} {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			files = append(files, db+suffix)
		}
	}
	return files
}

// Close stops the background work and closes every connection; clean-ups
// still pending resume at the next Open.
func (s *Store) Close() error {
	// What this process wrote is in the index before it ends; an error
	// (the store busy) leaves it to the next catch-up of any process.
	s.index.finish()
	_ = s.catchUpIndex(context.Background())
	s.stopScrubs()
	if s.stop != nil {
		s.stop()
		<-s.stopped
	}
	return s.closePool()
}

// closePool closes every connection. The pool closes once each is back in
// it: the ones kept for writes (keptConn) are put back once no write
// holds them.
func (s *Store) closePool() error {
	if unlock, err := s.lockBoth(context.Background()); err == nil {
		for _, conn := range []*sqlite.Conn{s.writeConn, s.indexConn} {
			if conn != nil {
				s.pool.Put(conn)
			}
		}
		s.writeConn, s.indexConn = nil, nil
		unlock()
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
		// An error here (the store busy past busyLimit) is retried next
		// tick. Without a schema it checkpoints every attached file: the
		// search index's log too.
		_ = s.conn(ctx, func(conn *sqlite.Conn) error {
			return sqlitex.ExecuteTransient(conn, "PRAGMA wal_checkpoint(PASSIVE)", nil)
		})
		s.scrubLater() // also clean-ups that other processes left pending
	}
}

// bounded bounds every wait under ctx by busyLimit, unless ctx already
// has a deadline.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, busyLimit)
}

// conn runs fn with a connection, bounding every wait (bounded).
func (s *Store) conn(ctx context.Context, fn func(*sqlite.Conn) error) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	conn, err := s.pool.Take(ctx)
	if err != nil {
		return err
	}
	defer s.pool.Put(conn)
	return fn(conn)
}

// keptConn runs fn with the connection kept in *kept, taken from the pool
// the first time, for the writes of one file (write, writeIndex); the
// caller holds that file's write lock of this process, so no two use it
// at once. A connection whose last transaction came before another
// connection's commit drops its whole page cache when it begins the next
// (WAL mode), and the pool hands out the connection used longest ago, so
// every write read its b-tree pages again from the files; the writes of
// this process now follow each other on one connection, its cache warm:
// a 100-step push took 9% less time (docs/performance.md, "A connection
// kept for writes"). ctx interrupts fn as it does a pooled connection's.
func (s *Store) keptConn(ctx context.Context, kept **sqlite.Conn, fn func(*sqlite.Conn) error) error {
	if *kept == nil {
		conn, err := s.pool.Take(ctx)
		if err != nil {
			return err
		}
		*kept = conn
	}
	conn := *kept
	conn.SetInterrupt(ctx.Done())
	defer conn.SetInterrupt(nil)
	return fn(conn)
}

// Who takes which write lock. SQLite has one writer per file, and BEGIN
// IMMEDIATE takes the write lock of every attached file, so no write here
// uses it: a write begins a deferred transaction and at once runs a write
// to the one file it needs that changes nothing (lockStore, lockIndexFile),
// which takes that file's lock, waiting in the busy handler, before the
// transaction reads anything, so its snapshot of that file is current and
// it never fails with SQLITE_BUSY_SNAPSHOT. A store write (write: Apply,
// notes, verdicts, Delete, scrub bookkeeping) takes the store file's lock
// and the index file's only when it changes what the index holds
// (holdIndex); the index's catch-up (writeIndex) takes only the index
// file's and reads a snapshot of the store. Locks are always taken store
// first, then index, so no two writers can each wait for the other.
const (
	lockStore     = `UPDATE main.search_epoch SET epoch = epoch WHERE false`
	lockIndexFile = `UPDATE idx.search_state SET epoch = epoch WHERE false`
)

// write runs fn in one transaction that holds the store file's write
// lock, rolled back if fn fails (a *DiskFullError when the disk had no
// space for it), holding the write lock of this process (lockWrites) from
// before BEGIN until after COMMIT.
// When fn took the index's lock too (holdIndex), the write lets go of it
// once the transaction has ended.
func (s *Store) write(ctx context.Context, fn func(*sqlite.Conn) error) error {
	return s.transact(ctx, s.lockWrites, lockStore, &s.writeConn, fn, func() {
		if s.indexHeld != nil {
			s.indexHeld()
			s.indexHeld = nil
		}
	})
}

// writeIndex runs fn in one transaction holding the index file's write
// lock only, and this process's (lockIndex): the index's catch-up, which
// reads the store file and writes only the index file.
func (s *Store) writeIndex(ctx context.Context, fn func(*sqlite.Conn) error) error {
	return s.transact(ctx, s.lockIndex, lockIndexFile, &s.indexConn, fn, func() {})
}

// transact runs fn in one transaction that holds the write lock of one
// file: this process's (lockGo), then SQLite's (lockSQL, the first
// statement), on the connection kept for that lock's writes (kept,
// keptConn). ended runs once the transaction has ended, before lockGo's
// lock is let go.
func (s *Store) transact(ctx context.Context, lockGo func(context.Context) (func(), error), lockSQL string, kept **sqlite.Conn, fn func(*sqlite.Conn) error, ended func()) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	unlock, err := lockGo(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	err = s.keptConn(ctx, kept, func(conn *sqlite.Conn) (err error) {
		end := sqlitex.Transaction(conn) // BEGIN DEFERRED: takes no lock yet
		defer end(&err)
		if err := sqlitex.Execute(conn, lockSQL, nil); err != nil {
			return err
		}
		return fn(conn)
	})
	ended()
	if ctx.Err() != nil && sqlite.ErrCode(err).ToPrimary() == sqlite.ResultBusy {
		// Another process held the lock until the wait ended: the
		// context's error says so, as it does for this process's writers.
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return diskFull(err)
}

// holdIndex takes, inside a write (Store.write), the index file's write
// lock as well: this process's (lockIndex, waiting for a catch-up of this
// process) and SQLite's (waiting for another process's). The write keeps
// both until it ends. For the writes that change or remove what the index
// holds (Apply replacing indexed text, Delete), so that no catch-up runs
// between their reading the index and their commit. A write that then
// changes the index file calls bumpEpochs in the same transaction.
func (s *Store) holdIndex(ctx context.Context, conn *sqlite.Conn) error {
	if s.indexHeld != nil {
		return nil
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	unlock, err := s.lockIndex(ctx)
	if err != nil {
		return err
	}
	if err := sqlitex.Execute(conn, lockIndexFile, nil); err != nil {
		unlock()
		return err
	}
	s.indexHeld = unlock
	return nil
}

// bumpEpochs adds 1 to the epoch of both files, in a write that changed
// the index file as well as the store's (migration 013): should a crash
// come between the two files' commits, the epochs differ, and the index
// is built again (search_index.go). In the transaction (or savepoint) of
// the change, so that a rollback takes both back.
func bumpEpochs(conn *sqlite.Conn) error {
	return sqlitex.ExecuteScript(conn, `UPDATE main.search_epoch SET epoch = epoch + 1;
		UPDATE idx.search_state SET epoch = epoch + 1;`, nil)
}

// lockWrites takes the write lock of this store, so its writers wait for
// each other in Go, in the order they came, and the next starts the moment
// the previous commits: waiting for SQLite's lock instead sleeps in its busy
// handler, in steps of up to 100 ms, and wakes late. The busy handler stays
// for writers of other processes (import, capture, hook beside the server).
// A caller whose ctx ends while it waits gets ctx.Err() and writes nothing.
// The lock is taken before a connection, so waiting writers hold none.
func (s *Store) lockWrites(ctx context.Context) (unlock func(), err error) {
	return takeLock(ctx, s.writer)
}

// lockIndex takes this process's write lock on the search index's file,
// as lockWrites does the store's: the catch-ups wait for each other, and
// for a write that changes what the index holds (holdIndex), in Go.
func (s *Store) lockIndex(ctx context.Context) (unlock func(), err error) {
	return takeLock(ctx, s.indexWriter)
}

// lockBoth takes this process's write locks on both files, the store's
// first (as every writer that takes both does), for work outside a
// write's transaction: setting up the index, truncating the logs.
func (s *Store) lockBoth(ctx context.Context) (unlock func(), err error) {
	unlockStore, err := s.lockWrites(ctx)
	if err != nil {
		return nil, err
	}
	unlockIndex, err := s.lockIndex(ctx)
	if err != nil {
		unlockStore()
		return nil, err
	}
	return func() { unlockIndex(); unlockStore() }, nil
}

// takeLock takes a lock that is a channel of one, FIFO, until ctx ends.
func takeLock(ctx context.Context, lock chan struct{}) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case lock <- struct{}{}:
		return func() { <-lock }, nil
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
