package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

func TestVerdict(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("b"))
	ctx := context.Background()
	stamp := mustLatest(t, s)

	v := store.Verdict{State: "needs_attention", Note: "the test was skipped", Reviewer: "Ann"}
	if err := s.SetVerdict(ctx, "a", v); err != nil {
		t.Fatalf("SetVerdict(a) = %v", err)
	}
	if got := mustDetail(t, s, "a").Verdict; got == nil || *got != v {
		t.Errorf("Detail(a).Verdict = %+v; want %+v", got, v)
	}
	cs, _ := mustChanges(t, s, stamp)
	if len(cs) != 1 || cs[0].SessionID != "a" {
		t.Errorf("ChangesSince after SetVerdict = %+v; want one change of a", cs)
	}

	t.Run("a push never changes it", func(t *testing.T) {
		b := newBatch("a")
		set(b, "steps[1].payload.stdout", "rewritten")
		mustApply(t, s, b)
		if got := mustDetail(t, s, "a").Verdict; got == nil || *got != v {
			t.Errorf("Detail(a).Verdict after a push = %+v; want %+v", got, v)
		}
	})
	t.Run("the same verdict again writes nothing", func(t *testing.T) {
		before := snapshot(t, s)
		if err := s.SetVerdict(ctx, "a", v); err != nil {
			t.Fatalf("SetVerdict(a) = %v", err)
		}
		assertUnchanged(t, s, before)
	})
	t.Run("list filter", func(t *testing.T) {
		l, err := s.List(ctx, store.ListQuery{Verdict: "needs_attention"})
		if err != nil {
			t.Fatal(err)
		}
		if got := listIDs(l); !reflect.DeepEqual(got, []string{"a"}) || l.Total.Sessions != 1 {
			t.Errorf("List(verdict=needs_attention) = %v, total %d; want [a], 1", got, l.Total.Sessions)
		}
		if want := []store.VerdictCount{{State: "needs_attention", Sessions: 1}}; !reflect.DeepEqual(l.Verdicts, want) {
			t.Errorf("List().Verdicts = %+v; want %+v", l.Verdicts, want)
		}
		l, err = s.List(ctx, store.ListQuery{Verdict: "needs_attention", Agent: "otheragent"})
		if err != nil || len(l.Sessions) != 0 {
			t.Errorf("List(verdict, other agent) = %v, %v; want none", listIDs(l), err)
		}
	})
	t.Run("clear", func(t *testing.T) {
		if err := s.ClearVerdict(ctx, "a"); err != nil {
			t.Fatalf("ClearVerdict(a) = %v", err)
		}
		if got := mustDetail(t, s, "a").Verdict; got != nil {
			t.Errorf("Detail(a).Verdict after ClearVerdict = %+v; want none", got)
		}
	})

	bad := []struct {
		name string
		v    store.Verdict
		path string
	}{
		{"no state", store.Verdict{Reviewer: "Ann"}, "state"},
		{"state on two lines", store.Verdict{State: "ok\nmaybe"}, "state"},
		{"long state", store.Verdict{State: strings.Repeat("x", store.MaxStateChars+1)}, "state"},
		{"long note", store.Verdict{State: "reviewed", Note: strings.Repeat("é", store.MaxNoteChars+1)}, "note"},
		{"long reviewer", store.Verdict{State: "reviewed", Reviewer: strings.Repeat("x", store.MaxNameChars+1)}, "reviewer"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, s)
			var inv *store.InvalidError
			err := s.SetVerdict(ctx, "a", c.v)
			if !errors.As(err, &inv) || inv.Error() != "invalid verdict" || len(inv.Problems) == 0 || inv.Problems[0].Path != c.path {
				t.Errorf("SetVerdict(%+v) = %v; want invalid verdict at %s", c.v, err, c.path)
			}
			assertUnchanged(t, s, before)
		})
	}
	mustDelete(t, s, "b")
	for _, id := range []string{"b", "never-stored"} {
		before := snapshot(t, s)
		if err := s.SetVerdict(ctx, id, v); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetVerdict(%s) = %v; want ErrNotFound", id, err)
		}
		if err := s.ClearVerdict(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ClearVerdict(%s) = %v; want ErrNotFound", id, err)
		}
		assertUnchanged(t, s, before)
	}
}

func TestParseVerdict(t *testing.T) {
	cases := []struct {
		body string
		want string // the error, or "" for none
		path string
	}{
		{`{"state":"approved","note":"","reviewer":"Ann"}`, "", ""},
		{`not json`, "body is not valid JSON", ""},
		{`[1]`, "body must be a JSON object", ""},
		{`{}`, "invalid verdict", "state"},
		{`{"state":"approved","reviewer":null}`, "invalid verdict", "reviewer"},
		{`{"state":"approved","color":"red"}`, "invalid verdict", "color"},
		{`{"state":7}`, "invalid verdict", "state"},
	}
	for _, c := range cases {
		_, err := store.ParseVerdict([]byte(c.body))
		var inv *store.InvalidError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ParseVerdict(%s) = %v; want no error", c.body, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("ParseVerdict(%s) = %v; want %s", c.body, err, c.want)
		case c.path != "" && (!errors.As(err, &inv) || inv.Problems[0].Path != c.path):
			t.Errorf("ParseVerdict(%s) = %v; want a problem at %s", c.body, err, c.path)
		}
	}
}

func TestNotes(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	ctx := context.Background()
	stamp := mustLatest(t, s)

	n, err := s.AddNote(ctx, "a", store.NoteInput{Seq: 2, Author: "Ann", Text: "why were the tests skipped?"})
	if err != nil {
		t.Fatalf("AddNote = %v", err)
	}
	if n.ID == 0 || n.Seq != 2 || n.CreatedAt == "" || n.UpdatedAt != n.CreatedAt {
		t.Errorf("AddNote = %+v; want an id, seq 2 and its time", n)
	}
	if got := mustDetail(t, s, "a").Notes; !reflect.DeepEqual(got, []store.Note{n}) {
		t.Errorf("Detail(a).Notes = %+v; want [%+v]", got, n)
	}
	// The step's turn counts as changed, so a live update redraws it.
	d, err := s.Detail(ctx, "a", store.DetailQuery{Since: stamp})
	if err != nil || len(d.Turns) != 1 || len(d.Notes) != 1 {
		t.Errorf("Detail(since before the note) = %d turns, %d notes, %v; want the noted turn and the note", len(d.Turns), len(d.Notes), err)
	}

	t.Run("a push keeps it", func(t *testing.T) {
		b := newBatch("a")
		set(b, "steps[1].payload.stdout", "rewritten")
		mustApply(t, s, b)
		if got := mustDetail(t, s, "a").Notes; !reflect.DeepEqual(got, []store.Note{n}) {
			t.Errorf("Detail(a).Notes after a push = %+v; want [%+v]", got, n)
		}
	})
	t.Run("edit", func(t *testing.T) {
		e, err := s.EditNote(ctx, "a", n.ID, store.NoteInput{Author: "Bob", Text: "skipped on purpose"})
		if err != nil {
			t.Fatalf("EditNote = %v", err)
		}
		if e.ID != n.ID || e.Seq != 2 || e.Author != "Bob" || e.Text != "skipped on purpose" || e.CreatedAt != n.CreatedAt {
			t.Errorf("EditNote = %+v; want the note by Bob with its new text", e)
		}
	})

	bad := []struct {
		name string
		in   store.NoteInput
		path string
	}{
		{"unknown seq", store.NoteInput{Seq: 99, Author: "Ann", Text: "x"}, "seq"},
		{"no author", store.NoteInput{Seq: 2, Text: "x"}, "author"},
		{"no text", store.NoteInput{Seq: 2, Author: "Ann"}, "text"},
		{"long text", store.NoteInput{Seq: 2, Author: "Ann", Text: strings.Repeat("x", store.MaxNoteChars+1)}, "text"},
		{"author with a line break", store.NoteInput{Seq: 2, Author: "Ann\nBob", Text: "x"}, "author"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, s)
			var inv *store.InvalidError
			_, err := s.AddNote(ctx, "a", c.in)
			if !errors.As(err, &inv) || inv.Error() != "invalid note" || inv.Problems[0].Path != c.path {
				t.Errorf("AddNote(%+v) = %v; want invalid note at %s", c.in, err, c.path)
			}
			assertUnchanged(t, s, before)
		})
	}
	// Both missing: both named, author first, every time (the check once
	// read them off a map, in random order).
	for range 20 {
		var inv *store.InvalidError
		_, err := s.AddNote(ctx, "a", store.NoteInput{Seq: 2})
		if !errors.As(err, &inv) || len(inv.Problems) != 2 || inv.Problems[0].Path != "author" || inv.Problems[1].Path != "text" {
			t.Fatalf("AddNote(no author, no text) = %v; want author required, then text required", err)
		}
	}
	t.Run("unknown note", func(t *testing.T) {
		mustApply(t, s, newBatch("b"))
		before := snapshot(t, s)
		for _, id := range []string{"b", "never-stored"} {
			if _, err := s.EditNote(ctx, id, n.ID, store.NoteInput{Author: "Ann", Text: "x"}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("EditNote(%s, note of a) = %v; want ErrNotFound", id, err)
			}
			if err := s.DeleteNote(ctx, id, n.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("DeleteNote(%s, note of a) = %v; want ErrNotFound", id, err)
			}
		}
		assertUnchanged(t, s, before)
	})
	t.Run("delete", func(t *testing.T) {
		if err := s.DeleteNote(ctx, "a", n.ID); err != nil {
			t.Fatalf("DeleteNote = %v", err)
		}
		if got := mustDetail(t, s, "a").Notes; len(got) != 0 {
			t.Errorf("Detail(a).Notes after DeleteNote = %+v; want none", got)
		}
	})
	t.Run("at most MaxNotes", func(t *testing.T) {
		for range store.MaxNotes {
			if _, err := s.AddNote(ctx, "a", store.NoteInput{Seq: 1, Author: "Ann", Text: "x"}); err != nil {
				t.Fatalf("AddNote = %v", err)
			}
		}
		before := snapshot(t, s)
		var inv *store.InvalidError
		if _, err := s.AddNote(ctx, "a", store.NoteInput{Seq: 1, Author: "Ann", Text: "x"}); !errors.As(err, &inv) {
			t.Errorf("AddNote past MaxNotes = %v; want *InvalidError", err)
		}
		assertUnchanged(t, s, before)
	})
}
