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
// every statement): in one transaction for a search or Close, and in the
// background in one too, or, in the server (IndexInChunks), in one per few
// writes (catchUpInChunks), so a push waiting for the write lock goes
// between them. This store starts a catch-up after each of
// its writes (indexLater), Search catches up before it reads, and Close
// catches up, so a short-lived writer (import, capture, hook) leaves the
// index current. Delete removes the session's rows in its own transaction
// (unindexSession).

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
	inChunks    bool // a few writes per transaction (IndexInChunks)
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
			if x.inChunks {
				_ = s.catchUpInChunks(context.Background())
			} else {
				_ = s.catchUpIndex(context.Background())
			}
		}
	}()
}

// catchUpIndex indexes every write the index does not hold yet; it takes
// the write lock only when there is one.
func (s *Store) catchUpIndex(ctx context.Context) error {
	behind := false
	err := s.read(ctx, func(conn *sqlite.Conn) (err error) {
		behind, err = indexBehind(conn)
		return err
	})
	if err != nil || !behind {
		return err
	}
	return s.write(ctx, indexChanges)
}

// indexChunk is how many steps a background catch-up indexes in one
// transaction: a write waiting for the lock goes between two of them.
const indexChunk = 256

// catchUpInChunks indexes what catchUpIndex does, in transactions of about
// indexChunk steps, each ending at a write's stamp.
func (s *Store) catchUpInChunks(ctx context.Context) error {
	behind := false
	err := s.read(ctx, func(conn *sqlite.Conn) (err error) {
		behind, err = indexBehind(conn)
		return err
	})
	for err == nil && behind {
		err = s.write(ctx, func(conn *sqlite.Conn) error {
			through, last, err := indexChunkEnd(conn)
			if err != nil || through == 0 {
				behind = false
				return err
			}
			behind = !last
			return indexChangesThrough(conn, through)
		})
	}
	return err
}

// indexChunkEnd returns the stamp that ends the next chunk of the catch-up
// (0 when there is nothing to index) and whether it is the last: the
// oldest writes' stamps, up to indexChunk steps (at least one write).
func indexChunkEnd(conn *sqlite.Conn) (through int64, last bool, err error) {
	steps, newest := 0, int64(0)
	err = sqlitex.ExecuteTransient(conn, `SELECT st.updated_at, count(*)
		FROM sessions s JOIN search_state JOIN steps st ON st.session_pk = s.pk AND st.updated_at > indexed_through
		WHERE s.updated_at > indexed_through GROUP BY 1 ORDER BY 1`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			if steps < indexChunk {
				through = st.ColumnInt64(0)
			}
			steps += st.ColumnInt(1)
			newest = st.ColumnInt64(0)
			return nil
		}})
	if err != nil || through < newest {
		return through, false, err
	}
	// The last chunk also takes the writes that changed session rows only.
	err = sqlitex.ExecuteTransient(conn, `SELECT max(updated_at) FROM sessions, search_state WHERE updated_at > indexed_through`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { through = st.ColumnInt64(0); return nil }})
	return through, true, err
}

func indexBehind(conn *sqlite.Conn) (bool, error) {
	behind := false
	err := sqlitex.ExecuteTransient(conn, `SELECT (SELECT max(updated_at) FROM sessions) > indexed_through FROM search_state`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { behind = st.ColumnBool(0); return nil }})
	return behind, err
}

// changedRows is the index rows of what was stamped after indexed_through:
// minus the pk of a changed session, the pk of a changed step (a write
// that changes a step stamps its session too).
const changedRows = `SELECT -s.pk FROM sessions s, search_state WHERE s.updated_at > indexed_through AND s.updated_at <= :through
	UNION ALL
	SELECT st.pk FROM sessions s JOIN search_state JOIN steps st ON st.session_pk = s.pk AND st.updated_at > indexed_through AND st.updated_at <= :through
	WHERE s.updated_at > indexed_through`

// indexChanges removes the text writes replaced (search_stale) from the
// index, indexes the session rows and steps stamped after indexed_through
// that it does not hold, widens their sessions' spans (search_spans) and
// moves indexed_through to the newest stamp. A
// row whose text no write changed (a note stamps its step) stays as it is.
func indexChanges(conn *sqlite.Conn) error {
	var latest int64
	err := sqlitex.ExecuteTransient(conn, `SELECT coalesce(max(updated_at), 0) FROM sessions`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { latest = st.ColumnInt64(0); return nil }})
	if err != nil {
		return err
	}
	return indexChangesThrough(conn, latest)
}

// indexChangesThrough is indexChanges for the writes stamped up to through.
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
		`UPDATE search_state SET indexed_through = :through`,
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

// Reindex rebuilds the search index from every stored session and step in
// one transaction, and returns how many rows it indexed.
func (s *Store) Reindex(ctx context.Context) (int64, error) {
	var n int64
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
		if err := indexChanges(conn); err != nil {
			return err
		}
		if err := sqlitex.ExecuteTransient(conn, `INSERT INTO search (search) VALUES ('optimize')`, nil); err != nil {
			return err
		}
		return sqlitex.ExecuteTransient(conn, `SELECT count(*) FROM search`, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error { n = st.ColumnInt64(0); return nil },
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store: reindex: %w", err)
	}
	return n, nil
}
