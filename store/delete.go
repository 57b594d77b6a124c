package store

import (
	"context"
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Delete removes a session for good: its records and its rows of the
// search index are overwritten on disk (secure_delete), the write-ahead
// logs of both files are truncated so no copy stays there,
// its raw capture files are removed (see CaptureDir), and only a tombstone
// with the id is kept so the session is never recorded again. It returns
// nil once the deletion commits: clean-up that a reader in another process
// holds up is finished in the background and at the next Open (scrub.go).
// It returns ErrNotFound for an unknown or deleted id; for a deleted one it
// removes capture files left over by an earlier Delete that could not.
func (s *Store) Delete(ctx context.Context, id string) error {
	leftover := false
	var pk int64
	err := s.write(ctx, func(conn *sqlite.Conn) (err error) {
		pk, err = sessionPK(conn, id)
		if err != nil {
			return err
		}
		if pk == 0 {
			if leftover, err = isDeleted(conn, id); err != nil {
				return err
			}
			return ErrNotFound
		}
		stamp, err := nextStamp(conn)
		if err != nil {
			return err
		}
		// Its rows leave the index file in the same transaction: both
		// files' locks, and both epochs move (search_index.go).
		if err := s.holdIndex(ctx, conn); err != nil {
			return err
		}
		if err := unindexSession(conn, pk); err != nil {
			return err
		}
		// Child rows go with the session (ON DELETE CASCADE).
		if err := sqlitex.Execute(conn, `DELETE FROM sessions WHERE pk = ?`, &sqlitex.ExecOptions{Args: []any{pk}}); err != nil {
			return err
		}
		if err := sqlitex.Execute(conn, `INSERT INTO tombstones (id, deleted_at) VALUES (?, ?)`, &sqlitex.ExecOptions{Args: []any{id, stamp}}); err != nil {
			return err
		}
		return sqlitex.Execute(conn, `INSERT INTO scrubs (id) VALUES (?)`, &sqlitex.ExecOptions{Args: []any{id}})
	})
	if errors.Is(err, ErrNotFound) && leftover {
		err = errors.Join(err, s.removeCaptures(id))
	}
	if err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	s.whole.Drop(pk) // nothing of it stays in memory either
	s.summaries.Drop(pk)
	// Only after the tombstone commits: a capture writer checks it after
	// each write (AppendCapture), so no file is made again once this ran.
	if done, _ := s.scrub(ctx); !done {
		s.scrubLater()
	}
	return nil
}
