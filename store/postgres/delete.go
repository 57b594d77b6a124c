package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// contentTables are the tables that hold a session's text: a delete
// vacuums them so no row version of it stays behind.
var contentTables = []string{"sessions", "segments", "actors", "turns", "steps", "notes", "usage_records", "usage_hours", "search_docs"}

// Delete removes a session for good: its rows go (ON DELETE CASCADE) and
// only a tombstone with the id is kept, so the session is never recorded
// again. It returns ErrNotFound for an unknown or already deleted id.
//
// PostgreSQL keeps a deleted row's old version (a dead tuple, with its
// text) until VACUUM reclaims it, so once the delete commits Delete
// vacuums the tables that held the session (vacuum): 13 ms for 200 steps,
// 46 ms for 5,000 steps among 15,000 (delete_test.go). Until that returns,
// and for as long as a transaction that began before the delete is still
// open (its snapshot keeps the rows alive), the text is still in a row
// version. VACUUM frees the space but does not zero it: the bytes stay in
// the pages' free space until later rows are written over them, and in
// the write-ahead log (and any archive or replica of it) until its
// segments are recycled. Only VACUUM FULL, which rewrites each table
// under an exclusive lock, drops those pages; it is an operator's
// maintenance step, not Delete's. A vacuum that fails leaves the delete
// done: autovacuum reclaims the rows later.
//
// VACUUM also removes the index entries of the rows, but not every copy
// of their text in the indexes: the search index's GIN keeps every word
// it ever held as a key, and a B-tree keeps key copies in its inner pages
// and freed space. So Delete marks the indexes due for a clean-up, which
// a server process runs in the background within cleanDelay
// (index_cleanup.go): it rebuilds every index whose keys hold text.
func (s *Store) Delete(ctx context.Context, id string) error {
	var pk int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		if !storable(id) {
			return store.ErrNotFound
		}
		stamp, err := nextStamp(ctx, tx)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `DELETE FROM sessions WHERE id = $1 RETURNING pk`, id).Scan(&pk)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tombstones (id, deleted_at) VALUES ($1, $2)`, id, stamp); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE index_cleanup SET due = $1`, stamp); err != nil {
			return err
		}
		return commitStamp(ctx, tx, stamp)
	})
	if err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	s.tallies.Drop(pk) // nothing of it stays in this process's memory either
	s.summaries.Drop(pk)
	_ = s.vacuum(ctx, contentTables...) // autovacuum catches up on a failure
	s.cleanSoon()
	return nil
}

// vacuum reclaims the dead row versions of tables. VACUUM cannot run
// inside a transaction, so it runs after the write committed, on a
// connection of its own; the write stands whatever it returns.
func (s *Store) vacuum(ctx context.Context, tables ...string) error {
	if _, err := s.pool.Exec(ctx, "VACUUM "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("store: vacuum %s: %w", strings.Join(tables, ", "), err)
	}
	return nil
}
