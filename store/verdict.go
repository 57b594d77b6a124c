package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Common verdict states; any other one-line word is accepted too.
var VerdictStates = []string{"reviewed", "approved", "needs_attention"}

// ParseVerdict decodes a verdict body: {"state", "note"?, "reviewer"?}. It
// returns ErrNotJSON, ErrNotObject or an *InvalidError.
func ParseVerdict(body []byte) (Verdict, error) {
	var v Verdict
	err := parseReviewBody(body, "verdict", newFields("state", "note reviewer"), func(d *decoder, name string) {
		switch name {
		case "state":
			v.State = d.reqString()
		case "note":
			if s := d.optContent(); s != nil {
				v.Note = *s
			}
		case "reviewer":
			v.Reviewer = d.optString()
		}
	})
	if err != nil {
		return Verdict{}, err
	}
	return v, v.Check()
}

// Check reports a verdict out of bounds as an *InvalidError; every
// backend's SetVerdict calls it.
func (v Verdict) Check() error {
	return checkAll("verdict", func(c *reviewProblems) {
		if v.State == "" {
			c.add("state", "required")
		}
		reviewText(c, "state", v.State, MaxStateChars, true)
		reviewText(c, "note", v.Note, MaxNoteChars, false)
		reviewText(c, "reviewer", v.Reviewer, MaxNameChars, true)
	})
}

// SetVerdict stores a reviewer's verdict on a session, replacing any
// earlier one, and stamps the session so the live stream tells every tab.
// Only this and ClearVerdict write a verdict: a push never changes it. It
// returns ErrNotFound for an unknown or deleted session and an
// *InvalidError for a verdict out of bounds.
func (s *Store) SetVerdict(ctx context.Context, id string, v Verdict) error {
	if err := v.Check(); err != nil {
		return err
	}
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		return writeVerdict(conn, id, &v)
	})
	if err != nil {
		return fmt.Errorf("store: set verdict of %s: %w", id, err)
	}
	return nil
}

// ClearVerdict removes a session's verdict; a session without one is left
// as it is. It returns ErrNotFound for an unknown or deleted session.
func (s *Store) ClearVerdict(ctx context.Context, id string) error {
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		return writeVerdict(conn, id, nil)
	})
	if err != nil {
		return fmt.Errorf("store: clear verdict of %s: %w", id, err)
	}
	return nil
}

// writeVerdict sets v (nil: none) and stamps the session if that changes it.
func writeVerdict(conn *sqlite.Conn, id string, v *Verdict) error {
	pk, err := sessionPK(conn, id)
	if err != nil {
		return err
	}
	if pk == 0 {
		return ErrNotFound
	}
	var state, note, reviewer any
	if v != nil {
		state, note, reviewer = v.State, Nullable(v.Note), Nullable(v.Reviewer)
	}
	stamp, err := nextStamp(conn)
	if err != nil {
		return err
	}
	return sqlitex.Execute(conn, `UPDATE sessions SET verdict_state = :state, verdict_note = :note,
		  verdict_reviewer = :reviewer, updated_at = :stamp
		WHERE pk = :pk AND (verdict_state IS NOT :state OR verdict_note IS NOT :note OR verdict_reviewer IS NOT :reviewer)`,
		&sqlitex.ExecOptions{Named: map[string]any{":state": state, ":note": note, ":reviewer": reviewer, ":stamp": stamp, ":pk": pk}})
}
