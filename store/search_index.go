package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The search index lives in a file of its own, <store>-search (IndexPath),
// attached to every connection as schema idx: SQLite has one writer per
// file, and in the store's own file the index's catch-up held the only
// write lock, so a push that came during it waited for all of it. Its
// tables (made here, setupIndex, not by the store's migrations): search,
// a contentless FTS5 table (terms only; removing a row takes the text it
// was indexed with), search_spans and search_state. The views of what a
// row indexes (search_step_docs, search_session_docs, migration 014: the
// text made in Go, registerSearchText) stay
// in the store file, whose tables they read.
//
// The index follows the writes in the background, off the push's
// transaction and off the store file's write lock: tokenizing and writing
// the index cost a 5,000-step push +80% when it ran inside it. Every write
// stamps what it changed (updated_at), and search_state.indexed_through
// is the newest stamp the index holds, so catching up is a few whole
// statements, never one per step (FTS5 writes a segment at the end of
// every statement): in one transaction for up to buildChunk steps, and in
// chunks of that many for more; in the server's background
// (IndexInChunks) in chunks of indexChunk steps. A catch-up holds only the
// index file's write lock (writeIndex), taken before it reads the store,
// so it reads a snapshot of the store no older than the lock. This store
// starts a catch-up after each of its writes (indexLater), Search catches
// up before it reads, and Open and Close catch up, so a short-lived writer
// (import, capture, hook) leaves the index current.
//
// A write changes what the index holds in two cases only, and then takes
// the index file's lock too, inside its transaction (holdIndex): Delete
// (unindexSession) and an Apply that replaces indexed text
// (replacesIndexedRows). Each adds 1 to the epoch of both files, so that
// a crash between the two files' commits is found (indexMatchesStore) and
// the index built again.
//
// The index of an existing store is built the same way: its
// indexed_through starts at 0 (migration 013 moved it here), and the
// catch-up of the Open that migrated builds it, in chunks, reporting
// progress (OnIndexProgress), before Open returns. Another process that
// opens the store meanwhile catches up with it, chunk by chunk. A search
// waits for the build: it sees every committed write, never a partial
// index.

// indexVersion is the layout of the index file's tables and of the text
// they index (its user_version): a file of another version is emptied and
// made again (setupIndex), so a later change of either needs no migration
// of it. The layout has not changed since the text was made in Go, so it
// is the text's version.
const indexVersion = SearchTextVersion

// indexTables makes the index file's tables. The default unicode61
// tokenizer splits at every character that is not a letter or digit, so a
// path, an identifier with _ or . and a command line are found by their
// parts; the query side quotes each word as a phrase of those parts
// (search.go). One in-memory segment holds up to 16 MB before FTS5 writes
// it out (default 1 MB): a 5,000-step push (6.5 MB of text) becomes one
// segment, not seven, which halves the merging a catch-up does. Segments
// are merged eight at a time, not FTS5's default four: each term is
// rewritten fewer times as the index grows, for about 9% less CPU on a
// stream of 5,000-step pushes, with searches at 200,000 steps within a
// millisecond or two of before (docs/performance.md, "Search index").
// search_spans is where each session's steps sit among the index rows (the
// smallest and largest pk of its steps), so a search reads only the rows
// of the sessions it walks (search.go, wordPage); no foreign key across
// files: Delete removes a session's span itself. search_state holds the
// newest change stamp the index holds and the epoch (migration 013).
const indexTables = `
	CREATE VIRTUAL TABLE idx.search USING fts5(body, content = '', tokenize = 'unicode61 remove_diacritics 2');
	INSERT INTO idx.search (search, rank) VALUES ('hashsize', 16777216);
	INSERT INTO idx.search (search, rank) VALUES ('automerge', 8);
	CREATE TABLE idx.search_spans (
	  session_pk INTEGER PRIMARY KEY,
	  lo         INTEGER NOT NULL,
	  hi         INTEGER NOT NULL
	);
	CREATE TABLE idx.search_state (indexed_through INTEGER NOT NULL, epoch INTEGER NOT NULL);
	INSERT INTO idx.search_state (indexed_through, epoch) SELECT 0, epoch FROM main.search_epoch;`

// setupIndex makes the index file's tables when they are missing, of
// another version, or may hold text the store no longer has (the epochs
// differ: indexMatchesStore): it drops what is there (secure_delete
// overwrites the freed pages) and makes them empty, with indexed_through
// 0, for the catch-up to build. Open runs it under the setup lock, after
// the migrations; otherwise it is one read.
func (s *Store) setupIndex(ctx context.Context) error {
	sound := false
	err := s.read(ctx, func(conn *sqlite.Conn) (err error) {
		sound, err = indexMatchesStore(conn)
		return err
	})
	if err != nil || sound {
		return err
	}
	// Both files' write locks: the store's epoch is read, and no write of
	// another process may change either file meanwhile.
	unlock, err := s.lockBoth(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.conn(ctx, func(conn *sqlite.Conn) (err error) {
		end, err := sqlitex.ImmediateTransaction(conn)
		if err != nil {
			return err
		}
		defer end(&err)
		if sound, err := indexMatchesStore(conn); err != nil || sound {
			return err // another process made it meanwhile
		}
		return resetIndex(conn)
	})
}

// indexMatchesStore reports whether the index file holds this version's
// tables and the store's epoch: when it does not, it may hold text the
// store no longer has, or none, and is made again (resetIndex).
func indexMatchesStore(conn *sqlite.Conn) (bool, error) {
	var version, tables int64
	for _, q := range []struct {
		sql string
		n   *int64
	}{
		{`PRAGMA idx.user_version`, &version},
		{`SELECT count(*) FROM idx.sqlite_schema WHERE type = 'table' AND name IN ('search', 'search_spans', 'search_state')`, &tables},
	} {
		err := sqlitex.ExecuteTransient(conn, q.sql, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error { *q.n = st.ColumnInt64(0); return nil },
		})
		if err != nil {
			return false, err
		}
	}
	if version != indexVersion || tables != 3 {
		return false, nil
	}
	same := false
	err := sqlitex.ExecuteTransient(conn, `SELECT (SELECT epoch FROM main.search_epoch) IS (SELECT epoch FROM idx.search_state)`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { same = st.ColumnBool(0); return nil }})
	return same, err
}

// resetIndex drops the index file's tables, if any, and makes them again,
// empty, with the store's epoch: the catch-up then builds the index from
// every stored row. With secure_delete on, the pages the dropped tables
// held are overwritten.
func resetIndex(conn *sqlite.Conn) error {
	return sqlitex.ExecuteScript(conn, `DROP TABLE IF EXISTS idx.search;
		DROP TABLE IF EXISTS idx.search_spans;
		DROP TABLE IF EXISTS idx.search_state;`+indexTables+`
		PRAGMA idx.user_version = `+fmt.Sprint(indexVersion)+`;`, nil)
}

// A background catch-up starts once the writes have paused for a quiet
// spell, or a longest wait after the first write it has to index when
// they go on (an import, a busy server). The server's (IndexInChunks)
// are indexQuiet and indexMaxWait: a burst of pushes gathers into a
// catch-up or two a second, not one every 200 ms, and with the catch-up
// itself (about 0.25 s for a 5,000-step push) a push is searchable within
// a second. Other processes (import, capture, hook) follow their writes
// closely, followQuiet and followMaxWait: what the index lags behind when
// they close is work Close waits for; with them (and the lighter text of
// textMaker) the 96 MB import with the index went from +31% to +15% of
// its time without, while the import ran on one core (docs/performance.md,
// "The import within its bound", and "The bound again" for since).
// Vars so that a test can make the waits long.
var (
	indexQuiet    = 200 * time.Millisecond
	indexMaxWait  = 600 * time.Millisecond
	followQuiet   = 10 * time.Millisecond
	followMaxWait = 30 * time.Millisecond
)

// indexer runs the background catch-ups of one store, one goroutine at most.
type indexer struct {
	mu          sync.Mutex
	running     bool
	pending     bool          // a write committed that no catch-up started after
	first, last time.Time     // the first and last such write
	closing     bool          // Close waits: catch up now, not after the quiet (finish)
	wake        chan struct{} // ends the wait for quiet (finish)
	wg          sync.WaitGroup
	inChunks    bool                    // a few writes per transaction, after longer waits (IndexInChunks)
	lowPriority bool                    // on a thread of its own at nice threadNice (IndexAtLowPriority)
	progress    func(done, total int64) // OnIndexProgress
}

// indexLater starts a background catch-up unless one runs already.
func (s *Store) indexLater() {
	x := &s.index
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.wake == nil {
		x.wake = make(chan struct{}, 1)
	}
	x.last = time.Now()
	if !x.pending {
		x.pending, x.first = true, x.last
	}
	if x.running {
		return
	}
	x.running = true
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		if x.lowPriority {
			lowerThreadPriority()
		}
		for {
			x.mu.Lock()
			if !x.pending {
				x.running = false
				x.mu.Unlock()
				return
			}
			quiet, most := followQuiet, followMaxWait
			if x.inChunks {
				quiet, most = indexQuiet, indexMaxWait
			}
			wait := min(time.Until(x.last.Add(quiet)), time.Until(x.first.Add(most)))
			if wait > 0 && !x.closing {
				x.mu.Unlock()
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-x.wake:
					t.Stop()
				}
				continue
			}
			x.pending = false
			x.mu.Unlock()
			// An error (the store busy past busyLimit) is retried by the
			// next write, search or Close.
			chunk := buildChunk
			if x.inChunks {
				chunk = indexChunk
			}
			_ = s.catchUp(context.Background(), chunk)
		}
	}()
}

// finish waits for the background catch-up, which starts at once rather
// than after the writes' quiet spell: a writer that is closing writes no
// more, and an import once waited up to 200 ms for nothing at its end.
func (x *indexer) finish() {
	x.mu.Lock()
	x.closing = true
	wake := x.wake // nil when nothing was written: nothing waits
	x.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
	x.wg.Wait()
}

// buildChunk is how many steps a catch-up outside the server's
// background indexes in one transaction (indexChunk is the server's): up
// to it, a catch-up is one transaction, as an import's writes want; more
// (a store a migration left unindexed, Reindex, the writes of a crashed
// process) go in transactions of about buildChunk steps, each well within
// busyLimit, and a crash or a cancel keeps what the chunks before it
// built: the next catch-up (at the latest the next Open) goes on from
// there. Not 10,000: at the end of every chunk FTS5 writes its pending
// terms as a segment and merges segments, and in chunks of 10,000 steps a
// 200,000-step build took 90% more CPU than in one statement, in chunks
// of 50,000 35% more (docs/performance.md).
// A var so that tests can make small stores build in many chunks.
var buildChunk int64 = 50_000

// catchUpIndex indexes every write the index does not hold yet, in one
// transaction or, when that is more than buildChunk steps, in chunks.
func (s *Store) catchUpIndex(ctx context.Context) error {
	return s.catchUp(ctx, buildChunk)
}

// indexChunk is how many steps a background catch-up of the server
// (IndexInChunks) indexes in one transaction: a write waiting for the lock
// goes between two of them.
const indexChunk = 256

// catchUp indexes every write the index does not hold yet, in
// transactions of about chunk steps, each ending at a write's stamp; it
// takes the index's write lock only when there is something to index. A
// catch-up of at least buildChunk steps reports its progress (OnIndexProgress).
// Another process catching up at the same time is harmless: each chunk
// indexes what the index still lacks up to its stamp, nothing twice. An
// index whose epoch is not the store's (a process stopped between the
// commits of a write to both files) is emptied first and built again.
func (s *Store) catchUp(ctx context.Context, chunk int64) error {
	var plan []chunkEnd
	sound := true
	err := s.read(ctx, func(conn *sqlite.Conn) (err error) {
		if sound, err = indexMatchesStore(conn); err != nil || !sound {
			return err
		}
		plan, err = indexPlan(conn, chunk)
		return err
	})
	if err == nil && !sound {
		err = s.writeIndex(ctx, func(conn *sqlite.Conn) error {
			if sound, err := indexMatchesStore(conn); err != nil || sound {
				return err
			}
			return resetIndex(conn)
		})
		if err == nil {
			chunk = max(chunk, buildChunk) // a build: chunks of 256 steps would take long
			err = s.read(ctx, func(conn *sqlite.Conn) (err error) {
				plan, err = indexPlan(conn, chunk)
				return err
			})
		}
	}
	if err != nil || len(plan) == 0 {
		return err
	}
	total := plan[len(plan)-1].steps
	progress := s.index.progress
	if progress == nil || total < buildChunk {
		progress = func(int64, int64) {}
	}
	progress(0, total)
	for _, end := range plan {
		err := s.writeIndex(ctx, func(conn *sqlite.Conn) error { return indexChangesThrough(conn, end.through) })
		if err != nil {
			return err
		}
		progress(end.steps, total)
	}
	return nil
}

// chunkEnd is where a chunk of a catch-up ends: the stamp it indexes
// through, and how many steps the catch-up has indexed by then.
type chunkEnd struct{ through, steps int64 }

// indexPlan splits what the index lacks into chunks of at least chunk
// steps (at least one write, the last chunk what is left), in stamp
// order; none when the index is current. The last chunk also takes the
// writes that changed session rows only.
func indexPlan(conn *sqlite.Conn, chunk int64) ([]chunkEnd, error) {
	var plan []chunkEnd
	var steps, cut int64
	err := sqlitex.ExecuteTransient(conn, indexPlanSQL,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			if steps += st.ColumnInt64(1); steps-cut >= chunk {
				plan, cut = append(plan, chunkEnd{st.ColumnInt64(0), steps}), steps
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	var newest int64
	err = sqlitex.ExecuteTransient(conn, `SELECT coalesce(max(s.updated_at), 0) FROM sessions s, idx.search_state WHERE s.updated_at > indexed_through`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { newest = st.ColumnInt64(0); return nil }})
	switch {
	case err != nil || newest == 0:
		return nil, err
	case len(plan) > 0 && cut == steps:
		plan[len(plan)-1].through = newest
	default:
		plan = append(plan, chunkEnd{newest, steps})
	}
	return plan, nil
}

// indexPlanSQL counts the steps stamped after indexed_through, by stamp.
const indexPlanSQL = `SELECT st.updated_at, count(*) FROM ` + changedSteps + ` GROUP BY 1 ORDER BY 1`

// changedRows is the index rows of what was stamped after indexed_through:
// minus the pk of a changed session, the pk of a changed step (a write
// that changes a step stamps its session too).
const changedRows = `SELECT -s.pk FROM sessions s, idx.search_state WHERE s.updated_at > indexed_through AND s.updated_at <= :through
	UNION ALL
	SELECT st.pk FROM ` + changedSteps + ` AND st.updated_at <= :through`

// changedSteps joins the steps stamped after indexed_through (st) to their
// sessions (s), for a query to add its columns and conditions to. The
// CROSS JOINs fix the order SQLite walks them in: the changed sessions
// (sessions_by_change), then each one's changed steps (steps_by_change).
// Left to choose, SQLite walked every step of the store
// (docs/performance.md, "A catch-up's cost grew with the store").
const changedSteps = `idx.search_state CROSS JOIN sessions s CROSS JOIN steps st
	WHERE s.updated_at > indexed_through AND st.session_pk = s.pk AND st.updated_at > indexed_through`

// indexChangesThrough indexes the session rows and steps stamped after
// indexed_through and up to through that the index does not hold, widens
// their sessions' spans (search_spans) and moves indexed_through to
// through (never back: a chunk another process indexed first leaves
// nothing to do). A row the index holds has the text it was indexed with:
// a write that changes it removes it from the index first (Apply,
// removeReplacedText), so it is indexed again here; a row whose text no
// write changed (a note stamps its step) stays as it is. It runs in a
// catch-up's transaction (writeIndex): it reads the store file and
// writes only the index file. Rows go in by rising rowid (session rows,
// -pk, from the newest session down, then steps): FTS5 writes out what it
// holds as a new segment whenever a rowid is lower than the one before,
// so sessions in pk order made a segment per session, and an import of
// 1,600 small sessions spent a quarter of the index's CPU on them and on
// merging them (docs/performance.md, "Parsed while the last group is
// written").
func indexChangesThrough(conn *sqlite.Conn, through int64) error {
	for _, sql := range indexChangesSQL {
		if err := sqlitex.Execute(conn, sql, &sqlitex.ExecOptions{Named: map[string]any{":through": through}}); err != nil {
			return err
		}
	}
	return nil
}

// indexChangesSQL is what indexChangesThrough runs, in order.
var indexChangesSQL = []string{
	`WITH changed (rid) AS (` + changedRows + `),
		todo (rid) AS (SELECT rid FROM changed WHERE rid NOT IN (SELECT id FROM idx.search_docsize))
		INSERT INTO idx.search (rowid, body)
		SELECT rid, body FROM (SELECT -session_pk AS rid, body FROM search_session_docs
		  WHERE session_pk IN (SELECT -rid FROM todo WHERE rid < 0) ORDER BY session_pk DESC)
		UNION ALL
		SELECT step_pk, body FROM search_step_docs WHERE step_pk IN (SELECT rid FROM todo WHERE rid > 0)`,
	`INSERT INTO idx.search_spans (session_pk, lo, hi)
		SELECT st.session_pk, min(st.pk), max(st.pk)
		FROM ` + changedSteps + ` AND st.updated_at <= :through GROUP BY st.session_pk
		ON CONFLICT (session_pk) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi)`,
	`UPDATE idx.search_state SET indexed_through = max(indexed_through, :through)`,
}

// replacesIndexedRows reports whether a batch to the stored session pk may
// change rows the index may hold: the session's own row (its agent or
// workspace changes) or steps already stored (the batch names their ids).
// It reads the store file only, so the live case, new steps to a stored
// session, never waits for the index. Then Apply holds the index's lock
// (holdIndex), keeps the text the index holds of those rows
// (keepIndexedText) and, after its upserts, removes what it changed
// (removeReplacedText).
func replacesIndexedRows(conn *sqlite.Conn, pk int64, b *Batch) (bool, error) {
	if pk == 0 {
		return false, nil
	}
	ids, err := stepIDs(b)
	if err != nil {
		return false, err
	}
	replaces := false
	err = sqlitex.Execute(conn, `SELECT EXISTS (SELECT 1 FROM sessions
		    WHERE pk = ?1 AND (agent_kind, workspace_root, workspace_repo) IS NOT (?3, ?4, coalesce(?5, workspace_repo)))
		  OR EXISTS (SELECT 1 FROM steps WHERE session_pk = ?1 AND id IN (SELECT value FROM json_each(?2)))`, &sqlitex.ExecOptions{
		Args:       []any{pk, ids, b.Session.Agent.Kind, b.Session.Workspace.Root, Nullable(b.Session.Workspace.Repo)},
		ResultFunc: func(st *sqlite.Stmt) error { replaces = st.ColumnBool(0); return nil },
	})
	return replaces, err
}

// stepIDs is the ids of a batch's steps as a JSON array.
func stepIDs(b *Batch) (string, error) {
	ids := make([]string, len(b.Steps))
	for i := range b.Steps {
		ids[i] = b.Steps[i].ID
	}
	j, err := json.Marshal(ids)
	return string(j), err
}

// keepIndexedText keeps in temp.search_replaced, before Apply writes a
// batch to the stored session pk, the text the index holds (search_docsize
// has the row) of the rows the batch may change: the session's own row
// and the stored steps the batch names. A contentless index forgets a row
// only when given the text it indexed. Apply holds the index's lock from
// before this read until it commits (holdIndex). Without it a catch-up
// could run in between: one whose snapshot of the store predates this
// write indexes a step's old text after this read found the step not in
// the index, so nothing removes that text, and the step, then in the
// index, is never indexed again with its new text. With it, a catch-up
// either committed before this read (the step is in the index, and its
// old text is kept here and removed) or takes its snapshot after this
// write committed (it indexes the new text).
func keepIndexedText(conn *sqlite.Conn, pk int64, b *Batch) error {
	ids, err := stepIDs(b)
	if err != nil {
		return err
	}
	if err := sqlitex.ExecuteTransient(conn, `CREATE TEMP TABLE IF NOT EXISTS search_replaced (rid INTEGER PRIMARY KEY, body TEXT NOT NULL)`, nil); err != nil {
		return err
	}
	return sqlitex.Execute(conn, `INSERT INTO temp.search_replaced (rid, body)
		SELECT -session_pk, body FROM search_session_docs
		  WHERE session_pk = ?1 AND -?1 IN (SELECT id FROM idx.search_docsize)
		UNION ALL
		SELECT step_pk, body FROM search_step_docs
		  WHERE step_pk IN (SELECT pk FROM steps WHERE session_pk = ?1 AND id IN (SELECT value FROM json_each(?2)))
		  AND step_pk IN (SELECT id FROM idx.search_docsize)`, &sqlitex.ExecOptions{Args: []any{pk, ids}})
}

// replacedRows is the kept text (keepIndexedText) of each row whose text
// the write changed.
const replacedRows = `SELECT r.rid, r.body FROM temp.search_replaced r
	WHERE r.body IS NOT (CASE WHEN r.rid < 0
	  THEN (SELECT body FROM search_session_docs WHERE session_pk = -r.rid)
	  ELSE (SELECT body FROM search_step_docs WHERE step_pk = r.rid) END)`

// removeReplacedText removes from the index, after Apply's upserts, the
// kept text of each row whose text the write changed, and moves both
// epochs (bumpEpochs); the catch-up indexes the new text, as for any row
// not in the index. The rows the write left as they were stay indexed,
// and a write that replaced no indexed text leaves the index file as it
// was (a re-send that changes nothing writes nothing).
func removeReplacedText(conn *sqlite.Conn) error {
	replaced := false
	err := sqlitex.ExecuteTransient(conn, `SELECT EXISTS (`+replacedRows+`)`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { replaced = st.ColumnBool(0); return nil },
	})
	if err == nil && replaced {
		err = secureDelete(conn, `INSERT INTO idx.search (search, rowid, body) SELECT 'delete', rid, body FROM (`+replacedRows+`)`, nil)
		if err == nil {
			err = bumpEpochs(conn)
		}
	}
	if err != nil {
		return err
	}
	return sqlitex.ExecuteTransient(conn, `DELETE FROM temp.search_replaced`, nil)
}

// unindexSession removes the session's rows and span from the index,
// before its own rows go: the text of each row it holds, and moves both
// epochs (bumpEpochs). secure_delete overwrites the freed pages. Delete
// holds the index's lock (holdIndex).
func unindexSession(conn *sqlite.Conn, pk int64) error {
	err := secureDelete(conn, `INSERT INTO idx.search (search, rowid, body)
		SELECT 'delete', -session_pk, body FROM search_session_docs
		  WHERE session_pk = ?1 AND -?1 IN (SELECT id FROM idx.search_docsize)
		UNION ALL
		SELECT 'delete', step_pk, body FROM search_step_docs
		  WHERE session_pk = ?1 AND step_pk IN (SELECT id FROM idx.search_docsize)`, []any{pk})
	if err != nil {
		return err
	}
	if err := sqlitex.Execute(conn, `DELETE FROM idx.search_spans WHERE session_pk = ?`, &sqlitex.ExecOptions{Args: []any{pk}}); err != nil {
		return err
	}
	return bumpEpochs(conn)
}

// secureDelete runs FTS5 'delete' commands with the secure-delete option
// on, so the terms leave the segment b-trees at once, not at a later merge,
// and then the statements after. FTS5 writes out its pending rows before
// it changes an option, so the deletes are written with it on. The
// option is off otherwise: on, it made every flush of new rows 70% slower
// (CPU profile of an import).
func secureDelete(conn *sqlite.Conn, sql string, args []any, after ...string) error {
	if err := sqlitex.ExecuteTransient(conn, `INSERT INTO idx.search (search, rank) VALUES ('secure-delete', 1)`, nil); err != nil {
		return err
	}
	if err := sqlitex.Execute(conn, sql, &sqlitex.ExecOptions{Args: args}); err != nil {
		return err
	}
	for _, sql := range append(after, `INSERT INTO idx.search (search, rank) VALUES ('secure-delete', 0)`) {
		if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
			return err
		}
	}
	return nil
}

// Reindex rebuilds the search index from every stored session and step,
// and returns how many rows it indexed. It empties the index in one
// transaction of the index file (resetIndex) and builds it again as a
// catch-up does, in chunks with progress (OnIndexProgress): stopped in
// the middle (ctx, a crash), the index holds what the chunks before
// built, and the next catch-up (a search, Close, the next Open) builds
// the rest; a search meanwhile waits for it (Search catches up first).
func (s *Store) Reindex(ctx context.Context) (int64, error) {
	err := s.writeIndex(ctx, resetIndex)
	if err == nil {
		err = s.catchUpIndex(ctx)
	}
	var n int64
	if err == nil {
		err = s.writeIndex(ctx, func(conn *sqlite.Conn) error {
			if err := sqlitex.ExecuteTransient(conn, `INSERT INTO idx.search (search) VALUES ('optimize')`, nil); err != nil {
				return err
			}
			return sqlitex.ExecuteTransient(conn, `SELECT count(*) FROM idx.search`, &sqlitex.ExecOptions{
				ResultFunc: func(st *sqlite.Stmt) error { n = st.ColumnInt64(0); return nil },
			})
		})
	}
	if err != nil {
		return 0, fmt.Errorf("store: reindex: %w", err)
	}
	return n, nil
}
