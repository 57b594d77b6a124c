package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// EndSession sets a stored session's ended_at to at, unless it already
// ends at or after at, and stamps the session, as the SQLite store does. It
// reports whether it wrote; it returns ErrNotFound for an unknown session
// and a *store.DeletedError for a deleted one.
func (s *Store) EndSession(ctx context.Context, id string, at time.Time) (changed bool, err error) {
	ended := at.UTC().Format(time.RFC3339Nano)
	err = s.write(ctx, func(tx pgx.Tx) error {
		var pk int64
		var stored string
		var deleted bool
		if !storable(id) {
			return store.ErrNotFound
		}
		err := tx.QueryRow(ctx, `SELECT coalesce(s.pk, 0), coalesce(s.ended_at, ''),
			  EXISTS (SELECT 1 FROM tombstones WHERE id = $1)
			FROM (SELECT 1) one LEFT JOIN sessions s ON s.id = $1`, id).Scan(&pk, &stored, &deleted)
		switch {
		case err != nil:
			return err
		case deleted:
			return &store.DeletedError{SessionID: id}
		case pk == 0:
			return store.ErrNotFound
		}
		if t, ok := store.ParseTimestamp(stored); ok && !at.After(t) {
			return nil
		}
		stamp, err := nextStamp(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $1, updated_at = $2 WHERE pk = $3`, ended, stamp, pk); err != nil {
			return err
		}
		changed = true
		return commitStamp(ctx, tx, stamp)
	})
	if err != nil {
		return false, fmt.Errorf("store: end session %s: %w", id, err)
	}
	return changed, nil
}

// SetVerdict stores a reviewer's verdict on a session, replacing any
// earlier one, and stamps the session if that changes it. It returns
// ErrNotFound for an unknown or deleted session and an *InvalidError for
// a verdict out of bounds (Verdict.Check).
func (s *Store) SetVerdict(ctx context.Context, id string, v store.Verdict) error {
	if err := v.Check(); err != nil {
		return err
	}
	if err := s.write(ctx, func(tx pgx.Tx) error { return writeVerdict(ctx, tx, id, &v) }); err != nil {
		return fmt.Errorf("store: set verdict of %s: %w", id, unstorable("verdict", err))
	}
	return nil
}

// ClearVerdict removes a session's verdict; a session without one is left
// as it is. It returns ErrNotFound for an unknown or deleted session.
func (s *Store) ClearVerdict(ctx context.Context, id string) error {
	if err := s.write(ctx, func(tx pgx.Tx) error { return writeVerdict(ctx, tx, id, nil) }); err != nil {
		return fmt.Errorf("store: clear verdict of %s: %w", id, err)
	}
	return nil
}

// writeVerdict sets v (nil: none) and stamps the session if that changes it.
func writeVerdict(ctx context.Context, tx pgx.Tx, id string, v *store.Verdict) error {
	var state, note, reviewer any
	if v != nil {
		state, note, reviewer = v.State, store.Nullable(v.Note), store.Nullable(v.Reviewer)
	}
	if !storable(id) {
		return store.ErrNotFound
	}
	stamp, err := nextStamp(ctx, tx)
	if err != nil {
		return err
	}
	var found, wrote bool
	err = tx.QueryRow(ctx, `WITH s AS (SELECT pk FROM sessions WHERE id = $1),
		  w AS (UPDATE sessions SET verdict_state = $2, verdict_note = $3, verdict_reviewer = $4, updated_at = $5
		    WHERE pk = (SELECT pk FROM s)
		      AND (verdict_state, verdict_note, verdict_reviewer) IS DISTINCT FROM ($2::text, $3::text, $4::text)
		    RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM s), EXISTS (SELECT 1 FROM w)`, id, state, note, reviewer, stamp).Scan(&found, &wrote)
	switch {
	case err != nil:
		return err
	case !found:
		return store.ErrNotFound
	case !wrote:
		return nil
	}
	return commitStamp(ctx, tx, stamp)
}

// AddNote attaches a note to the step with in.Seq and stamps the session
// and the step, so every tab showing it redraws its turn. It returns
// ErrNotFound for an unknown or deleted session, and an *InvalidError for
// a seq no step has, a note out of bounds, or a session at MaxNotes.
func (s *Store) AddNote(ctx context.Context, id string, in store.NoteInput) (store.Note, error) {
	if err := in.Check(); err != nil {
		return store.Note{}, err
	}
	var n store.Note
	err := s.write(ctx, func(tx pgx.Tx) error {
		var pk, stepPK, notes int64
		if !storable(id) {
			return store.ErrNotFound
		}
		err := tx.QueryRow(ctx, `SELECT s.pk, coalesce((SELECT pk FROM steps WHERE session_pk = s.pk AND seq = $2), 0),
			  (SELECT count(*) FROM notes WHERE session_pk = s.pk)
			FROM sessions s WHERE s.id = $1`, id, in.Seq).Scan(&pk, &stepPK, &notes)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := store.CheckNoteTarget(id, in.Seq, stepPK != 0, notes); err != nil {
			return err
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		n = store.Note{Seq: in.Seq, Author: in.Author, Text: in.Text, CreatedAt: now, UpdatedAt: now}
		err = tx.QueryRow(ctx, `INSERT INTO notes (session_pk, step_pk, author, text, folded, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id`, pk, stepPK, in.Author, in.Text, store.FoldNote(in.Text), now).Scan(&n.ID)
		if err != nil {
			return err
		}
		return stampNote(ctx, tx, pk, stepPK)
	})
	if err != nil {
		return store.Note{}, fmt.Errorf("store: add note to %s: %w", id, unstorable("note", err))
	}
	return n, nil
}

// EditNote replaces a note's author and text (in.Seq is not used), and
// vacuums the notes table so the old text's row version goes, as
// SQLite's secure_delete overwrites it. It returns ErrNotFound for an
// unknown or deleted session or a note that is not one of the session's.
func (s *Store) EditNote(ctx context.Context, id string, noteID int64, in store.NoteInput) (store.Note, error) {
	in.Seq = 0
	if err := in.Check(); err != nil {
		return store.Note{}, err
	}
	var n store.Note
	err := s.write(ctx, func(tx pgx.Tx) error {
		pk, stepPK, err := notePKs(ctx, tx, id, noteID)
		if err != nil {
			return err
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		err = tx.QueryRow(ctx, `UPDATE notes n SET author = $1, text = $2, folded = $3, updated_at = $4 WHERE id = $5
			RETURNING id, (SELECT seq FROM steps WHERE pk = n.step_pk), author, text, created_at, updated_at`,
			in.Author, in.Text, store.FoldNote(in.Text), now, noteID).Scan(&n.ID, &n.Seq, &n.Author, &n.Text, &n.CreatedAt, &n.UpdatedAt)
		if err != nil {
			return err
		}
		return stampNote(ctx, tx, pk, stepPK)
	})
	if err != nil {
		return store.Note{}, fmt.Errorf("store: edit note %d of %s: %w", noteID, id, unstorable("note", err))
	}
	_ = s.vacuum(ctx, "notes") // the old text's row version; autovacuum catches up on a failure
	return n, nil
}

// DeleteNote removes a note and vacuums the notes table, as Delete does
// for a session, so no row version keeps its text. It returns ErrNotFound
// as EditNote does.
func (s *Store) DeleteNote(ctx context.Context, id string, noteID int64) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		pk, stepPK, err := notePKs(ctx, tx, id, noteID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM notes WHERE id = $1`, noteID); err != nil {
			return err
		}
		return stampNote(ctx, tx, pk, stepPK)
	})
	if err != nil {
		return fmt.Errorf("store: delete note %d of %s: %w", noteID, id, err)
	}
	_ = s.vacuum(ctx, "notes") // autovacuum catches up on a failure
	return nil
}

// notePKs finds a note of a session: the session's and the step's keys.
func notePKs(ctx context.Context, tx pgx.Tx, id string, noteID int64) (pk, stepPK int64, err error) {
	if !storable(id) {
		return 0, 0, store.ErrNotFound
	}
	err = tx.QueryRow(ctx, `SELECT n.session_pk, n.step_pk FROM notes n JOIN sessions s ON s.pk = n.session_pk
		WHERE s.id = $1 AND n.id = $2`, id, noteID).Scan(&pk, &stepPK)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	return pk, stepPK, err
}

// stampNote gives the session and the noted step a new change stamp: the
// live stream tells of the session, and a live update redraws the turn
// that shows the note.
func stampNote(ctx context.Context, tx pgx.Tx, pk, stepPK int64) error {
	stamp, err := nextStamp(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE steps SET updated_at = $1 WHERE pk = $2`, stamp, stepPK); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = $1 WHERE pk = $2`, stamp, pk); err != nil {
		return err
	}
	return commitStamp(ctx, tx, stamp)
}
