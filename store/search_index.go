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

// The search index (table search, migrations 006 and 008: contentless,
// terms only; removing a row takes the text it was indexed with, which
// Apply keeps in search_stale for the rows it may change) follows the writes in
// the background, off the push's transaction: tokenizing and writing the
// index cost a 5,000-step push +80% when it ran inside it. Every write
// stamps what it changed (updated_at), and search_state.indexed_through
// is the newest stamp the index holds, so catching up is a few whole
// statements, never one per step (FTS5 writes a segment at the end of
// every statement): in one transaction for up to buildChunk steps, and in
// chunks of that many for more; in the server's background
// (IndexInChunks) in chunks of indexChunk steps, so a push waiting for
// the write lock goes between them. This store starts a catch-up after
// each of its writes (indexLater), Search catches up before it reads,
// and Open and Close catch up, so a short-lived writer (import, capture,
// hook) leaves the index current. Delete removes the session's rows in
// its own transaction (unindexSession).
//
// The index of an existing store is built the same way: migration 008
// empties it and sets indexed_through to 0, and the catch-up of the
// Open that migrated builds it, in chunks, reporting progress
// (OnIndexProgress), before Open returns. Another process that opens the
// store meanwhile catches up with it, chunk by chunk; an older build's
// process catches up in one transaction, which may exceed busyLimit on a
// big store (its search then fails and is retried by the next). A
// search waits for the build: it sees every committed write, never a
// partial index.

// A background catch-up starts once the writes have paused for
// indexQuiet, or indexMaxWait after the first write it has to index when
// they go on (an import, a busy server): a burst of writes gathers into
// a catch-up or two a second, not one every 200 ms, and with the catch-up
// itself (about 0.25 s for a 5,000-step push) a write is searchable
// within a second.
const (
	indexQuiet   = 200 * time.Millisecond
	indexMaxWait = 600 * time.Millisecond
)

// indexer runs the background catch-ups of one store, one goroutine at most.
type indexer struct {
	mu          sync.Mutex
	running     bool
	pending     bool      // a write committed that no catch-up started after
	first, last time.Time // the first and last such write
	wg          sync.WaitGroup
	inChunks    bool                    // a few writes per transaction (IndexInChunks)
	progress    func(done, total int64) // OnIndexProgress
}

// indexLater starts a background catch-up unless one runs already.
func (s *Store) indexLater() {
	x := &s.index
	x.mu.Lock()
	defer x.mu.Unlock()
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
		for {
			x.mu.Lock()
			if !x.pending {
				x.running = false
				x.mu.Unlock()
				return
			}
			wait := time.Until(x.last.Add(indexQuiet))
			wait = min(wait, time.Until(x.first.Add(indexMaxWait)))
			if wait > 0 {
				x.mu.Unlock()
				time.Sleep(wait)
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
// takes the write lock only when there is something to index. A catch-up
// of at least buildChunk steps reports its progress (OnIndexProgress).
// Another process catching up at the same time is harmless: each chunk
// indexes what the index still lacks up to its stamp, nothing twice.
func (s *Store) catchUp(ctx context.Context, chunk int64) error {
	var plan []chunkEnd
	err := s.read(ctx, func(conn *sqlite.Conn) (err error) {
		plan, err = indexPlan(conn, chunk)
		return err
	})
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
		err := s.write(ctx, func(conn *sqlite.Conn) error { return indexChangesThrough(conn, end.through) })
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
	err := sqlitex.ExecuteTransient(conn, `SELECT st.updated_at, count(*)
		FROM sessions s JOIN search_state JOIN steps st ON st.session_pk = s.pk AND st.updated_at > indexed_through
		WHERE s.updated_at > indexed_through GROUP BY 1 ORDER BY 1`,
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
	err = sqlitex.ExecuteTransient(conn, `SELECT coalesce(max(s.updated_at), 0) FROM sessions s, search_state WHERE s.updated_at > indexed_through`,
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

// changedRows is the index rows of what was stamped after indexed_through:
// minus the pk of a changed session, the pk of a changed step (a write
// that changes a step stamps its session too).
const changedRows = `SELECT -s.pk FROM sessions s, search_state WHERE s.updated_at > indexed_through AND s.updated_at <= :through
	UNION ALL
	SELECT st.pk FROM sessions s JOIN search_state JOIN steps st ON st.session_pk = s.pk AND st.updated_at > indexed_through AND st.updated_at <= :through
	WHERE s.updated_at > indexed_through`

// indexChangesThrough removes the text writes replaced (search_stale)
// from the index, indexes the session rows and steps stamped after
// indexed_through and up to through that it does not hold, widens their
// sessions' spans (search_spans) and moves indexed_through to through
// (never back: a chunk another process indexed first leaves nothing to
// do). A row whose text no write changed (a note stamps its step) stays
// as it is.
func indexChangesThrough(conn *sqlite.Conn, through int64) error {
	if err := removeStale(conn); err != nil {
		return err
	}
	for _, sql := range []string{
		`WITH changed (rid) AS (` + changedRows + `),
			todo (rid) AS (SELECT rid FROM changed WHERE rid NOT IN (SELECT id FROM search_docsize))
			INSERT INTO search (rowid, body)
			SELECT -session_pk, body FROM search_session_docs WHERE -session_pk IN (SELECT rid FROM todo WHERE rid < 0)
			UNION ALL
			SELECT step_pk, body FROM search_step_docs WHERE step_pk IN (SELECT rid FROM todo WHERE rid > 0)`,
		`INSERT INTO search_spans (session_pk, lo, hi)
			SELECT st.session_pk, min(st.pk), max(st.pk)
			FROM sessions s JOIN search_state JOIN steps st ON st.session_pk = s.pk AND st.updated_at > indexed_through AND st.updated_at <= :through
			WHERE s.updated_at > indexed_through GROUP BY st.session_pk
			ON CONFLICT (session_pk) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi)`,
		`UPDATE search_state SET indexed_through = max(indexed_through, :through)`,
	} {
		if err := sqlitex.Execute(conn, sql, &sqlitex.ExecOptions{Named: map[string]any{":through": through}}); err != nil {
			return err
		}
	}
	return nil
}

// keepIndexedText keeps in search_stale, before Apply writes a batch to a
// stored session, the text the index holds of the rows the batch may
// change: the session's own row when the agent or workspace changes, and
// the stored steps the batch names (whether they change is known only
// after the upsert: dropUnchangedText drops those it left as they were).
// A contentless index forgets a row only when given the text it indexed.
func keepIndexedText(conn *sqlite.Conn, pk int64, b *Batch) error {
	if pk == 0 {
		return nil
	}
	ids := make([]string, len(b.Steps))
	for i := range b.Steps {
		ids[i] = b.Steps[i].ID
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return sqlitex.Execute(conn, `INSERT OR IGNORE INTO search_stale (rid, body)
		SELECT -d.session_pk, d.body FROM search_session_docs d JOIN sessions s ON s.pk = d.session_pk
		  WHERE d.session_pk = ?1 AND -?1 IN (SELECT id FROM search_docsize)
		  AND (s.agent_kind, s.workspace_root, s.workspace_repo) IS NOT (?3, ?4, coalesce(?5, s.workspace_repo))
		UNION ALL
		SELECT step_pk, body FROM search_step_docs
		  WHERE step_pk IN (SELECT pk FROM steps WHERE session_pk = ?1 AND id IN (SELECT value FROM json_each(?2)))
		  AND step_pk IN (SELECT id FROM search_docsize)`, &sqlitex.ExecOptions{
		Args: []any{pk, string(idsJSON), b.Session.Agent.Kind, b.Session.Workspace.Root, Nullable(b.Session.Workspace.Repo)},
	})
}

// dropUnchangedText drops the kept text of the steps a write left as they
// were: stamped no later than the index, the index holds them as they are.
func dropUnchangedText(conn *sqlite.Conn) error {
	return sqlitex.ExecuteTransient(conn, `DELETE FROM search_stale WHERE rid > 0
		AND (SELECT updated_at FROM steps WHERE pk = rid) <= (SELECT indexed_through FROM search_state)`, nil)
}

// removeStale removes from the index the text that writes changed since
// the last catch-up (kept by keepIndexedText).
func removeStale(conn *sqlite.Conn) error {
	stale := false
	err := sqlitex.ExecuteTransient(conn, `SELECT 1 FROM search_stale LIMIT 1`, &sqlitex.ExecOptions{
		ResultFunc: func(*sqlite.Stmt) error { stale = true; return nil },
	})
	if err != nil || !stale {
		return err
	}
	return secureDelete(conn, `INSERT INTO search (search, rowid, body) SELECT 'delete', rid, body FROM search_stale`, nil,
		`DELETE FROM search_stale`)
}

// unindexSession removes the session's rows from the index, before its
// own rows go: the text of each row it holds and what search_stale kept
// of earlier versions. secure_delete overwrites the freed pages.
func unindexSession(conn *sqlite.Conn, pk int64) error {
	if err := removeStale(conn); err != nil {
		return err
	}
	return secureDelete(conn, `INSERT INTO search (search, rowid, body)
		SELECT 'delete', -session_pk, body FROM search_session_docs
		  WHERE session_pk = ?1 AND -?1 IN (SELECT id FROM search_docsize)
		UNION ALL
		SELECT 'delete', step_pk, body FROM search_step_docs
		  WHERE session_pk = ?1 AND step_pk IN (SELECT id FROM search_docsize)`, []any{pk})
}

// secureDelete runs FTS5 'delete' commands with the secure-delete option
// on, so the terms leave the segment b-trees at once, not at a later merge,
// and then the statements after. FTS5 writes out its pending rows before
// it changes an option, so the deletes are written with it on.
func secureDelete(conn *sqlite.Conn, sql string, args []any, after ...string) error {
	if err := sqlitex.ExecuteTransient(conn, `INSERT INTO search (search, rank) VALUES ('secure-delete', 1)`, nil); err != nil {
		return err
	}
	if err := sqlitex.Execute(conn, sql, &sqlitex.ExecOptions{Args: args}); err != nil {
		return err
	}
	for _, sql := range append(after, `INSERT INTO search (search, rank) VALUES ('secure-delete', 0)`) {
		if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
			return err
		}
	}
	return nil
}

// Reindex rebuilds the search index from every stored session and step,
// and returns how many rows it indexed. It empties the index in one
// transaction and builds it again as a catch-up does, in chunks with
// progress (OnIndexProgress): stopped in the middle (ctx, a crash), the
// index holds what the chunks before built, and the next catch-up (a
// search, Close, the next Open) builds the rest; a search meanwhile
// waits for it (Search catches up first).
func (s *Store) Reindex(ctx context.Context) (int64, error) {
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		for _, sql := range []string{
			`INSERT INTO search (search) VALUES ('delete-all')`,
			`DELETE FROM search_stale`,
			`DELETE FROM search_spans`,
			`UPDATE search_state SET indexed_through = 0`,
		} {
			if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.catchUpIndex(ctx)
	}
	var n int64
	if err == nil {
		err = s.write(ctx, func(conn *sqlite.Conn) error {
			if err := sqlitex.ExecuteTransient(conn, `INSERT INTO search (search) VALUES ('optimize')`, nil); err != nil {
				return err
			}
			return sqlitex.ExecuteTransient(conn, `SELECT count(*) FROM search`, &sqlitex.ExecOptions{
				ResultFunc: func(st *sqlite.Stmt) error { n = st.ColumnInt64(0); return nil },
			})
		})
	}
	if err != nil {
		return 0, fmt.Errorf("store: reindex: %w", err)
	}
	return n, nil
}
