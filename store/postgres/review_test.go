package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// writes are the store methods the review test drives on both backends.
type writes interface {
	Apply(ctx context.Context, b *store.Batch) (store.ApplyResult, error)
	Delete(ctx context.Context, id string) error
	EndSession(ctx context.Context, id string, at time.Time) (bool, error)
	SetVerdict(ctx context.Context, id string, v store.Verdict) error
	ClearVerdict(ctx context.Context, id string) error
	AddNote(ctx context.Context, id string, in store.NoteInput) (store.Note, error)
	EditNote(ctx context.Context, id string, noteID int64, in store.NoteInput) (store.Note, error)
	DeleteNote(ctx context.Context, id string, noteID int64) error
	LatestStamp(ctx context.Context) (int64, error)
}

// noteResult is a note without its times (now, which differ by backend),
// after checking them.
func noteResult(t *testing.T, n store.Note) string {
	t.Helper()
	created, ok1 := store.ParseTimestamp(n.CreatedAt)
	updated, ok2 := store.ParseTimestamp(n.UpdatedAt)
	if n.ID != 0 && (!ok1 || !ok2 || updated.Before(created) || time.Since(created) > time.Minute) {
		t.Errorf("note %+v: want recent created_at and updated_at, updated not before created", n)
	}
	n.CreatedAt, n.UpdatedAt = "", ""
	return fmt.Sprintf("%+v", n)
}

// Verdicts, notes and ends of sessions behave on PostgreSQL as on SQLite:
// the same results, the same errors, a stamp moved by the same calls, and
// the same rows after all of them.
func TestReviewMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg := mustOpen(t)
	lite, path := mustOpenSQLite(t)

	verdict := store.Verdict{State: "needs_attention", Note: "the test was skipped\non purpose", Reviewer: "Ann"}
	note := store.NoteInput{Seq: 3, Author: "Ann", Text: "why this command?\nIt deletes files."}
	end := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		do   func(t *testing.T, w writes) (string, error)
	}{
		{"push a", func(t *testing.T, w writes) (string, error) {
			r, err := w.Apply(ctx, gen("a", 0, 20))
			return fmt.Sprint(r), err
		}},
		{"push b", func(t *testing.T, w writes) (string, error) {
			r, err := w.Apply(ctx, gen("b", 0, 20))
			return fmt.Sprint(r), err
		}},
		{"set verdict", func(t *testing.T, w writes) (string, error) { return "", w.SetVerdict(ctx, "a", verdict) }},
		{"same verdict again", func(t *testing.T, w writes) (string, error) { return "", w.SetVerdict(ctx, "a", verdict) }},
		{"a push keeps the verdict", func(t *testing.T, w writes) (string, error) {
			b := gen("a", 0, 20)
			b.Steps[3].Outcome = "failed"
			r, err := w.Apply(ctx, b)
			return fmt.Sprint(r), err
		}},
		{"verdict without state", func(t *testing.T, w writes) (string, error) {
			return "", w.SetVerdict(ctx, "a", store.Verdict{Reviewer: "Ann"})
		}},
		{"verdict with a long reviewer", func(t *testing.T, w writes) (string, error) {
			return "", w.SetVerdict(ctx, "a", store.Verdict{State: "ok", Reviewer: strings.Repeat("x", store.MaxNameChars+1)})
		}},
		{"verdict of an unknown session", func(t *testing.T, w writes) (string, error) { return "", w.SetVerdict(ctx, "nope", verdict) }},
		{"clear verdict of b, which has none", func(t *testing.T, w writes) (string, error) { return "", w.ClearVerdict(ctx, "b") }},
		{"clear verdict", func(t *testing.T, w writes) (string, error) { return "", w.ClearVerdict(ctx, "a") }},
		{"set a verdict again", func(t *testing.T, w writes) (string, error) {
			return "", w.SetVerdict(ctx, "a", store.Verdict{State: "approved"})
		}},
		{"clear verdict of an unknown session", func(t *testing.T, w writes) (string, error) { return "", w.ClearVerdict(ctx, "nope") }},
		{"add note", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "a", note)
			return noteResult(t, n), err
		}},
		{"add a second note", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "a", store.NoteInput{Seq: 7, Author: "Bo", Text: "fine"})
			return noteResult(t, n), err
		}},
		{"note on a seq no step has", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "a", store.NoteInput{Seq: 999, Author: "Ann", Text: "x"})
			return noteResult(t, n), err
		}},
		{"note without author", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "a", store.NoteInput{Seq: 3, Text: "x"})
			return noteResult(t, n), err
		}},
		{"note on an unknown session", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "nope", note)
			return noteResult(t, n), err
		}},
		{"edit note", func(t *testing.T, w writes) (string, error) {
			n, err := w.EditNote(ctx, "a", 1, store.NoteInput{Seq: 5, Author: "Ann B.", Text: "edited"})
			return noteResult(t, n), err
		}},
		{"edit note through another session", func(t *testing.T, w writes) (string, error) {
			n, err := w.EditNote(ctx, "b", 1, store.NoteInput{Author: "Ann", Text: "x"})
			return noteResult(t, n), err
		}},
		{"edit an unknown note", func(t *testing.T, w writes) (string, error) {
			n, err := w.EditNote(ctx, "a", 99, store.NoteInput{Author: "Ann", Text: "x"})
			return noteResult(t, n), err
		}},
		{"edit note with a long text", func(t *testing.T, w writes) (string, error) {
			n, err := w.EditNote(ctx, "a", 1, store.NoteInput{Author: "Ann", Text: strings.Repeat("x", store.MaxNoteChars+1)})
			return noteResult(t, n), err
		}},
		{"delete note", func(t *testing.T, w writes) (string, error) { return "", w.DeleteNote(ctx, "a", 2) }},
		{"delete it again", func(t *testing.T, w writes) (string, error) { return "", w.DeleteNote(ctx, "a", 2) }},
		{"end session", func(t *testing.T, w writes) (string, error) {
			c, err := w.EndSession(ctx, "a", end)
			return fmt.Sprint(c), err
		}},
		{"end it earlier", func(t *testing.T, w writes) (string, error) {
			c, err := w.EndSession(ctx, "a", end.Add(-time.Hour))
			return fmt.Sprint(c), err
		}},
		{"end it later", func(t *testing.T, w writes) (string, error) {
			c, err := w.EndSession(ctx, "a", end.Add(time.Hour))
			return fmt.Sprint(c), err
		}},
		{"end an unknown session", func(t *testing.T, w writes) (string, error) {
			c, err := w.EndSession(ctx, "nope", end)
			return fmt.Sprint(c), err
		}},
		{"a push without end keeps it", func(t *testing.T, w writes) (string, error) {
			r, err := w.Apply(ctx, gen("a", 5, 5))
			return fmt.Sprint(r), err
		}},
		{"delete b", func(t *testing.T, w writes) (string, error) { return "", w.Delete(ctx, "b") }},
		{"end deleted b", func(t *testing.T, w writes) (string, error) {
			c, err := w.EndSession(ctx, "b", end)
			return fmt.Sprint(c), err
		}},
		{"verdict of deleted b", func(t *testing.T, w writes) (string, error) { return "", w.SetVerdict(ctx, "b", verdict) }},
		{"note on deleted b", func(t *testing.T, w writes) (string, error) {
			n, err := w.AddNote(ctx, "b", note)
			return noteResult(t, n), err
		}},
		{"delete a, with its notes", func(t *testing.T, w writes) (string, error) { return "", w.Delete(ctx, "a") }},
		{"delete a again", func(t *testing.T, w writes) (string, error) { return "", w.Delete(ctx, "a") }},
	}
	errs := 0
	for _, st := range steps {
		var got, want [3]string // result, error, whether the stamp moved
		for i, w := range []writes{pg, lite} {
			out := &got
			if i == 1 {
				out = &want
			}
			before, err := w.LatestStamp(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res, err := st.do(t, w)
			after, _ := w.LatestStamp(ctx)
			*out = [3]string{res, fmt.Sprint(err), fmt.Sprint(after > before)}
			if err != nil {
				errs++
			}
		}
		if got != want {
			t.Errorf("%s: PostgreSQL gives %q; SQLite %q", st.name, got, want)
		}
	}
	if errs < 20 {
		t.Errorf("%d calls failed on the two backends; the steps should fail 11 times each", errs)
	}
	want, got := sqliteTables(t, path), pgTables(t, pg)
	for table := range comparedColumns {
		if !slices.Equal(got[table], want[table]) {
			t.Errorf("%s rows:\n postgres %q\n sqlite   %q", table, got[table], want[table])
		}
	}
}

// A verdict or note PostgreSQL cannot store (a NUL character) is refused
// as invalid and writes nothing.
func TestReviewUnstorableText(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustApply(t, s, gen("a", 0, 5))
	before := snapshot(t, s)
	var inv *store.InvalidError
	if err := s.SetVerdict(ctx, "a", store.Verdict{State: "ok", Note: "a\x00b"}); !errors.As(err, &inv) || inv.Error() != "invalid verdict" {
		t.Errorf("SetVerdict(NUL) = %v; want invalid verdict", err)
	}
	if _, err := s.AddNote(ctx, "a", store.NoteInput{Seq: 1, Author: "Ann", Text: "a\x00b"}); !errors.As(err, &inv) || inv.Error() != "invalid note" {
		t.Errorf("AddNote(NUL) = %v; want invalid note", err)
	}
	assertUnchanged(t, s, before)
}
