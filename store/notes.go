package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Note is a reviewer's note on one step of a session.
type Note struct {
	ID        int64  `json:"id"`
	Seq       int64  `json:"seq"` // of the step it is on
	Author    string `json:"author"`
	Text      string `json:"text"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// FoldNote is a note's text, or a note: filter's value, as the filter
// compares them: each character in lower case (unicode.ToLower), one for
// one, so that a note "Échec du test" holds note:échec and "Ürün adı"
// note:ÜRÜN. Each note's is stored beside its text (notes.folded, SQLite
// migration 025, PostgreSQL's 015): SQL's lower() folds ASCII letters
// alone (SQLite's; PostgreSQL's by its collation), and a search of the
// folded column answers alike on both.
func FoldNote(s string) string { return strings.Map(unicode.ToLower, s) }

// registerFoldNote makes FoldNote the SQL function note_fold(text) of the
// connection: migration 025 fills the folded column of the notes written
// before it with it.
func registerFoldNote(conn *sqlite.Conn) error {
	return conn.CreateFunction("note_fold", &sqlite.FunctionImpl{
		NArgs: 1, Deterministic: true,
		Scalar: func(_ sqlite.Context, a []sqlite.Value) (sqlite.Value, error) {
			return sqlite.TextValue(FoldNote(a[0].Text())), nil
		},
	})
}

// NoteInput is what a reviewer writes: the step (for a new note), the
// author and the text.
type NoteInput struct {
	Seq    int64
	Author string
	Text   string
}

// ParseNote decodes a note body: {"seq", "author", "text"} for a new note,
// {"author", "text"} (withSeq false) for an edit. It returns ErrNotJSON,
// ErrNotObject or an *InvalidError.
func ParseNote(body []byte, withSeq bool) (NoteInput, error) {
	return parseNote(body, withSeq, "")
}

// ParseNoteBy decodes a note body as ParseNote does, for a note written by
// user (a team server's signed-in user): the body's author may be left
// out, and user is the note's author whatever the body names.
func ParseNoteBy(body []byte, withSeq bool, user string) (NoteInput, error) {
	return parseNote(body, withSeq, user)
}

// parseNote decodes a note body; author, when set, is the note's author
// and the body's is optional and not used.
func parseNote(body []byte, withSeq bool, author string) (NoteInput, error) {
	var in NoteInput
	required, optional := "author text", ""
	if author != "" {
		required, optional = "text", "author" // checked for its type, then replaced
	}
	if withSeq {
		required += " seq"
	}
	err := parseReviewBody(body, "note", newFields(required, optional), func(d *decoder, name string) {
		switch name {
		case "seq":
			in.Seq, _ = d.int()
		case "author":
			in.Author = d.reqString()
		case "text":
			in.Text = d.reqString()
		}
	})
	if author != "" {
		in.Author = author
	}
	if err != nil {
		return NoteInput{}, err
	}
	return in, in.Check()
}

// Check reports a note out of bounds as an *InvalidError; every
// backend's AddNote and EditNote call it.
func (in NoteInput) Check() error {
	return checkAll("note", func(c *reviewProblems) {
		if in.Author == "" {
			c.add("author", "required")
		}
		if in.Text == "" {
			c.add("text", "required")
		}
		reviewText(c, "author", in.Author, MaxNameChars, true)
		reviewText(c, "text", in.Text, MaxNoteChars, false)
	})
}

// AddNote attaches a note to the step with in.Seq and stamps the session
// and the step, so every tab showing it redraws its turn. It returns
// ErrNotFound for an unknown or deleted session, and an *InvalidError for
// a seq no step has, a note out of bounds, or a session at MaxNotes.
func (s *Store) AddNote(ctx context.Context, id string, in NoteInput) (Note, error) {
	if err := in.Check(); err != nil {
		return Note{}, err
	}
	var n Note
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		pk, err := sessionPK(conn, id)
		if err != nil || pk == 0 {
			return notFound(err)
		}
		var stepPK, notes int64
		err = sqlitex.Execute(conn, `SELECT (SELECT pk FROM steps WHERE session_pk = :pk AND seq = :seq),
			  (SELECT count(*) FROM notes WHERE session_pk = :pk)`, &sqlitex.ExecOptions{
			Named:      map[string]any{":pk": pk, ":seq": in.Seq},
			ResultFunc: func(st *sqlite.Stmt) error { stepPK, notes = st.ColumnInt64(0), st.ColumnInt64(1); return nil },
		})
		if err != nil {
			return err
		}
		if err := CheckNoteTarget(id, in.Seq, stepPK != 0, notes); err != nil {
			return err
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		n = Note{Seq: in.Seq, Author: in.Author, Text: in.Text, CreatedAt: now, UpdatedAt: now}
		err = sqlitex.Execute(conn, `INSERT INTO notes (session_pk, step_pk, author, text, folded, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, &sqlitex.ExecOptions{Args: []any{pk, stepPK, in.Author, in.Text, FoldNote(in.Text), now, now}})
		if err != nil {
			return err
		}
		n.ID = conn.LastInsertRowID()
		return stampNote(conn, pk, stepPK)
	})
	if err != nil {
		return Note{}, fmt.Errorf("store: add note to %s: %w", id, err)
	}
	return n, nil
}

// EditNote replaces a note's author and text (in.Seq is not used). It
// returns ErrNotFound for an unknown or deleted session or a note that is
// not one of the session's.
func (s *Store) EditNote(ctx context.Context, id string, noteID int64, in NoteInput) (Note, error) {
	in.Seq = 0
	if err := in.Check(); err != nil {
		return Note{}, err
	}
	var n Note
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		pk, stepPK, err := notePKs(conn, id, noteID)
		if err != nil {
			return err
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		err = sqlitex.Execute(conn, `UPDATE notes SET author = ?, text = ?, folded = ?, updated_at = ? WHERE id = ?
			RETURNING id, (SELECT seq FROM steps WHERE pk = step_pk), author, text, created_at, updated_at`, &sqlitex.ExecOptions{
			Args:       []any{in.Author, in.Text, FoldNote(in.Text), now, noteID},
			ResultFunc: func(st *sqlite.Stmt) error { n = scanNote(st); return nil },
		})
		if err != nil {
			return err
		}
		return stampNote(conn, pk, stepPK)
	})
	if err != nil {
		return Note{}, fmt.Errorf("store: edit note %d of %s: %w", noteID, id, err)
	}
	return n, nil
}

// DeleteNote removes a note, overwritten on disk like a deleted session.
// It returns ErrNotFound as EditNote does.
func (s *Store) DeleteNote(ctx context.Context, id string, noteID int64) error {
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		pk, stepPK, err := notePKs(conn, id, noteID)
		if err != nil {
			return err
		}
		if err := sqlitex.Execute(conn, `DELETE FROM notes WHERE id = ?`, &sqlitex.ExecOptions{Args: []any{noteID}}); err != nil {
			return err
		}
		return stampNote(conn, pk, stepPK)
	})
	if err != nil {
		return fmt.Errorf("store: delete note %d of %s: %w", noteID, id, err)
	}
	return nil
}

// CheckNoteTarget refuses, with an *InvalidError, a new note on a seq no
// step of session id has (found false) or on a session that already holds
// MaxNotes notes; every backend's AddNote calls it.
func CheckNoteTarget(id string, seq int64, found bool, notes int64) error {
	switch {
	case !found:
		return &InvalidError{Subject: "note", Problems: []Problem{{Path: "seq", Message: fmt.Sprintf("no step of session %s has seq %d", id, seq)}}}
	case notes >= MaxNotes:
		return &InvalidError{Subject: "note", Problems: []Problem{{Path: "seq", Message: fmt.Sprintf("the session already has %d notes, the most it may hold", MaxNotes)}}}
	}
	return nil
}

func notFound(err error) error {
	if err != nil {
		return err
	}
	return ErrNotFound
}

// notePKs finds a note of a session: the session's and the step's keys.
func notePKs(conn *sqlite.Conn, id string, noteID int64) (pk, stepPK int64, err error) {
	err = sqlitex.Execute(conn, `SELECT n.session_pk, n.step_pk FROM notes n JOIN sessions s ON s.pk = n.session_pk
		WHERE s.id = ? AND n.id = ?`, &sqlitex.ExecOptions{
		Args:       []any{id, noteID},
		ResultFunc: func(st *sqlite.Stmt) error { pk, stepPK = st.ColumnInt64(0), st.ColumnInt64(1); return nil },
	})
	if err == nil && pk == 0 {
		err = ErrNotFound
	}
	return pk, stepPK, err
}

// stampNote gives the session and the noted step a new change stamp: the
// live stream tells of the session, and a live update redraws the turn
// that shows the note.
func stampNote(conn *sqlite.Conn, pk, stepPK int64) error {
	stamp, err := nextStamp(conn)
	if err != nil {
		return err
	}
	if err := sqlitex.Execute(conn, `UPDATE steps SET updated_at = ? WHERE pk = ?`, &sqlitex.ExecOptions{Args: []any{stamp, stepPK}}); err != nil {
		return err
	}
	return sqlitex.Execute(conn, `UPDATE sessions SET updated_at = ? WHERE pk = ?`, &sqlitex.ExecOptions{Args: []any{stamp, pk}})
}

// readNotes reads every note of a session, in step order, then oldest first.
func readNotes(conn *sqlite.Conn, pk int64) ([]Note, error) {
	out := []Note{}
	err := sqlitex.Execute(conn, `SELECT n.id, p.seq, n.author, n.text, n.created_at, n.updated_at
		FROM notes n JOIN steps p ON p.pk = n.step_pk WHERE n.session_pk = ? ORDER BY p.seq, n.id`, &sqlitex.ExecOptions{
		Args:       []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error { out = append(out, scanNote(st)); return nil },
	})
	return out, err
}

func scanNote(st *sqlite.Stmt) Note {
	return Note{ID: st.ColumnInt64(0), Seq: st.ColumnInt64(1), Author: st.ColumnText(2), Text: st.ColumnText(3),
		CreatedAt: st.ColumnText(4), UpdatedAt: st.ColumnText(5)}
}
