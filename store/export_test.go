package store

import (
	"context"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitemigration"
	"zombiezen.com/go/sqlite/sqlitex"
)

// NoteMatches is noteMatches, for TestNoteMatches.
var NoteMatches = noteMatches

// LockSetup takes the setup lock of the store at path, as another
// process's Open does.
var LockSetup = lockSetup

// Migrations is how many migrations this build applies.
func Migrations() int {
	schema, err := loadSchema()
	if err != nil {
		panic(err)
	}
	return len(schema.Migrations)
}

// CreateAtVersion makes a store at path as a build with only the first n
// migrations left it: in WAL mode, with the application id.
func CreateAtVersion(ctx context.Context, path string, n int) error {
	schema, err := loadSchema()
	if err != nil {
		return err
	}
	schema.Migrations = schema.Migrations[:n]
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := prepareConn(conn, IndexPath(path)); err != nil { // as Open's migrations run
		return err
	}
	return sqlitemigration.Migrate(ctx, conn, schema)
}

// LimitLength makes every connection of s fail to load a value longer
// than n bytes ("string or blob too big"), so a test can show that a read
// never loads a long value whole.
func LimitLength(ctx context.Context, s *Store, n int32) error {
	var conns []*sqlite.Conn
	defer func() {
		for _, c := range conns {
			s.pool.Put(c)
		}
	}()
	// The connections kept for writes are out of the pool (keptConn); no
	// write runs while a test sets this up.
	inPool := poolSize
	for _, c := range []*sqlite.Conn{s.writeConn, s.indexConn} {
		if c != nil {
			c.Limit(sqlite.LimitLength, n)
			inPool--
		}
	}
	for range inPool {
		c, err := s.pool.Take(ctx)
		if err != nil {
			return err
		}
		c.Limit(sqlite.LimitLength, n)
		conns = append(conns, c)
	}
	return nil
}

// CatchUpIndex waits for the background catch-up of the search index and
// runs one, so the index holds every committed write.
func (s *Store) CatchUpIndex() error {
	s.index.wg.Wait()
	return s.catchUpIndex(context.Background())
}

// HoldWrite runs one write transaction of s, as every write does, that
// closes held once it holds the write lock and commits when release is
// closed.
func (s *Store) HoldWrite(ctx context.Context, held chan<- struct{}, release <-chan struct{}) error {
	return s.write(ctx, func(*sqlite.Conn) error {
		close(held)
		<-release
		return nil
	})
}

// WaitIndexLater waits for the background catch-ups of the search index
// that this store's writes started.
func (s *Store) WaitIndexLater() { s.index.wg.Wait() }

// JSONStrings is the string values of a JSON text as search indexes them.
func JSONStrings(j *string, raw bool) *string {
	b, found := getTextMaker().appendJSONStrings(nil, *j, raw)
	if !found {
		return nil
	}
	s := string(b)
	return &s
}

// MarkSnippet is SearchSnippet with its markers (Mark and MarkEnd) kept,
// and the window of words it chose.
func MarkSnippet(text string, words []SearchPhrase) (string, int) {
	return markSnippet(text, words)
}

// Snippet markers, as FTS5's snippet is asked for them.
const (
	Mark    = markOpen
	MarkEnd = markClose
)

// SetBuildChunk makes a catch-up of more than n steps go in chunks of
// about n (buildChunk, 50,000) until the test ends, so a small store
// builds its index in many. Call it before opening a store.
func SetBuildChunk(t testing.TB, n int64) {
	old := buildChunk
	buildChunk = n
	t.Cleanup(func() { buildChunk = old })
}

// SetIndexWait makes the background catch-up wait d after a write
// (indexQuiet, indexMaxWait and their follow* twins) until the test
// ends. Call it before opening a store.
func SetIndexWait(t testing.TB, d time.Duration) {
	old := [...]time.Duration{indexQuiet, indexMaxWait, followQuiet, followMaxWait}
	indexQuiet, indexMaxWait, followQuiet, followMaxWait = d, d, d, d
	t.Cleanup(func() { indexQuiet, indexMaxWait, followQuiet, followMaxWait = old[0], old[1], old[2], old[3] })
}

// CatchUpPaused runs one catch-up of the search index as the background
// does, in one transaction, that closes held once it holds the index's
// write lock and has read what to index from its snapshot of the store,
// and goes on when release is closed.
func (s *Store) CatchUpPaused(ctx context.Context, held chan<- struct{}, release <-chan struct{}) error {
	return s.writeIndex(ctx, func(conn *sqlite.Conn) error {
		plan, err := indexPlan(conn, buildChunk)
		close(held)
		<-release
		if err != nil || len(plan) == 0 {
			return err
		}
		return indexChangesThrough(conn, plan[len(plan)-1].through)
	})
}

// CacheSizes returns the cache_size pragma of the store file and of the
// index file on each of n connections of s, taken at once.
func (s *Store) CacheSizes(ctx context.Context, n int) ([][2]int64, error) {
	var out [][2]int64
	var conns []*sqlite.Conn
	defer func() {
		for _, c := range conns {
			s.pool.Put(c)
		}
	}()
	for range n {
		conn, err := s.pool.Take(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, conn)
		var sizes [2]int64
		for i, schema := range []string{"main", "idx"} {
			err := sqlitex.ExecuteTransient(conn, "PRAGMA "+schema+".cache_size", &sqlitex.ExecOptions{
				ResultFunc: func(st *sqlite.Stmt) error { sizes[i] = st.ColumnInt64(0); return nil }})
			if err != nil {
				return nil, err
			}
		}
		out = append(out, sizes)
	}
	return out, nil
}

// RegisterSearchText gives a connection opened outside the store the SQL
// functions the search views call, as every connection of a store has.
var RegisterSearchText = registerSearchText

// ConnOf is the connection a write of s (write), a write of its index's
// file (index) or a read (neither) runs on, for tests of which connection
// does what.
func (s *Store) ConnOf(ctx context.Context, write, index bool) (c *sqlite.Conn, err error) {
	use := func(conn *sqlite.Conn) error { c = conn; return nil }
	switch {
	case write:
		err = s.write(ctx, use)
	case index:
		err = s.writeIndex(ctx, use)
	default:
		err = s.read(ctx, use)
	}
	return c, err
}

// InterruptWrite runs a write of s whose context ends inside its
// transaction, after it changed a row, and returns the write's error.
func (s *Store) InterruptWrite(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return s.write(ctx, func(conn *sqlite.Conn) error {
		if err := sqlitex.Execute(conn, `UPDATE search_epoch SET epoch = epoch + 1`, nil); err != nil {
			return err
		}
		cancel()
		return sqlitex.Execute(conn, `UPDATE search_epoch SET epoch = epoch + 1`, nil)
	})
}

// RemovedPaths are the files the command line removes (CommandFiles), as
// Changes places them (inRoot).
func RemovedPaths(command, cwd, root string) []string {
	var out []string
	for _, f := range CommandFiles(command, cwd) {
		if f.Removed {
			out = append(out, inRoot(root, f.Path))
		}
	}
	return out
}
