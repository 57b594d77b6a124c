package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// BenchmarkDetailManyCommands reads one step of a 50,000-step session
// whose every command line is another (about 15,000 of them), as a long
// autonomous run writes them: each read builds the whole session's report,
// Commands run with each line once.
func BenchmarkDetailManyCommands(b *testing.B) {
	const pushes, perPush = 10, 5000
	path := filepath.Join(b.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatalf("Open = %v", err)
	}
	for p := range pushes {
		batch := storetest.Batch("many", p, perPush)
		for i := range batch.Steps {
			if st := &batch.Steps[i]; st.Type == store.TypeCommand && st.Payload.Command != nil {
				st.Payload.Command = new(fmt.Sprintf("go run ./migrate --file %d", st.Seq))
			}
		}
		if _, err := s.Apply(context.Background(), batch); err != nil {
			b.Fatalf("Apply(push %d) = %v", p, err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatalf("Close = %v", err)
	}
	s = mustOpenPath(b, path)
	one := int64(1)
	read := func() store.SessionDetail {
		d, err := s.Detail(context.Background(), "many", store.DetailQuery{Seq: &one, Head: 2048})
		if err != nil {
			b.Fatalf("Detail = %v", err)
		}
		return d
	}
	if n := len(read().Report.Commands); n < 10_000 { // the first read computes the counts: not timed
		b.Fatalf("the session has %d distinct commands; want over 10,000", n)
	}
	for b.Loop() {
		read()
	}
}

// BenchmarkViewAfterChange is a live refresh of a 100,000-step session
// (5,000 turns): each iteration pushes one step in a new turn (not timed), then reads
// what the session page reads, the last 30 turns with the whole session's
// counts and report (detail), or the Changes section (changes), or the
// whole list of sessions (list).
// docs/performance.md records the numbers.
func BenchmarkViewAfterChange(b *testing.B) {
	const pushes, perPush = 20, 5000
	path := filepath.Join(b.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatalf("Open = %v", err)
	}
	for p := range pushes {
		if _, err := s.Apply(context.Background(), storetest.Batch("big", p, perPush)); err != nil {
			b.Fatalf("Apply(push %d) = %v", p, err)
		}
	}
	if err := s.Close(); err != nil { // finishes the search index first
		b.Fatalf("Close = %v", err)
	}
	s = mustOpenPath(b, path)
	next := pushes * perPush     // one-step pushes: seq next+1, next+2, ...
	push := func(b *testing.B) { // outside the timer
		b.StopTimer()
		defer b.StartTimer()
		if _, err := s.Apply(context.Background(), storetest.Batch("big", next, 1)); err != nil {
			b.Fatalf("Apply(seq %d) = %v", next+1, err)
		}
		next++
	}
	// The first read of the reopened store computes everything: not timed.
	if _, err := s.Detail(context.Background(), "big", store.DetailQuery{Turns: 30, Head: 2048}); err != nil {
		b.Fatalf("Detail = %v", err)
	}
	if _, err := s.FileChanges(context.Background(), "big"); err != nil {
		b.Fatalf("FileChanges = %v", err)
	}
	b.Run("detail", func(b *testing.B) {
		for b.Loop() {
			push(b)
			d, err := s.Detail(context.Background(), "big", store.DetailQuery{Turns: 30, Head: 2048})
			if err != nil || d.Summary.Steps != next {
				b.Fatalf("Detail = %d steps, %v; want %d", d.Summary.Steps, err, next)
			}
		}
	})
	b.Run("changes", func(b *testing.B) {
		for b.Loop() {
			push(b)
			if _, err := s.FileChanges(context.Background(), "big"); err != nil {
				b.Fatalf("FileChanges = %v", err)
			}
		}
	})
	// The whole list, as each live refresh of the list page reads it.
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			push(b)
			l, err := s.List(context.Background(), store.ListQuery{})
			if err != nil || len(l.Sessions) != 1 || l.Sessions[0].Summary.Steps != next {
				b.Fatalf("List = %+v, %v; want big's %d steps", l.Sessions, err, next)
			}
		}
	})
}

// wholeRead is what reads compute over all of a session's steps.
type wholeRead struct {
	Summary store.Summary
	Report  store.Report
	Changes []store.FileChange
	Listed  store.SessionOverview // its row of the whole list
}

func mustWholeRead(t *testing.T, s *store.Store, id string) wholeRead {
	t.Helper()
	d, err := s.Detail(context.Background(), id, store.DetailQuery{Turns: 2, Head: 100})
	if err != nil {
		t.Fatalf("Detail(%s) = %v; want no error", id, err)
	}
	files, err := s.FileChanges(context.Background(), id)
	if err != nil {
		t.Fatalf("FileChanges(%s) = %v; want no error", id, err)
	}
	l, err := s.List(context.Background(), store.ListQuery{})
	if err != nil {
		t.Fatalf("List = %v; want no error", err)
	}
	i := slices.IndexFunc(l.Sessions, func(o store.SessionOverview) bool { return o.ID == id })
	if i < 0 {
		t.Fatalf("List has no %s", id)
	}
	return wholeRead{Summary: d.Summary, Report: d.Report, Changes: files, Listed: l.Sessions[i]}
}

// TestWholeReadFollowsEveryChange changes a long session in each way a
// write can (new steps, a step of an old turn changed or moved to another
// turn, a note, a new workspace root) and checks after each that a store
// that remembered the earlier results (Detail, FileChanges, List) answers
// exactly as one computing everything afresh, with the counts the change
// made.
func TestWholeReadFollowsEveryChange(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpenPath(t, path)
	const perPush = 2000 // steps spread over several blocks
	first := storetest.Batch("long", 0, perPush)
	for p := range 3 {
		if _, err := s.Apply(ctx, storetest.Batch("long", p, perPush)); err != nil {
			t.Fatalf("Apply(push %d) = %v", p, err)
		}
	}
	before := mustWholeRead(t, s, "long")
	// one step of the first push, of the given type, pushed again as changed
	old := func(typ string, change func(*store.Step)) {
		t.Helper()
		for _, st := range first.Steps[100:] {
			if st.Type == typ {
				b := storetest.Batch("long", 0, perPush)
				b.Segments, b.Actors, b.Turns = nil, nil, nil
				change(&st)
				b.Steps = []store.Step{st}
				if _, err := s.Apply(ctx, b); err != nil {
					t.Fatalf("Apply(changed %s step %d) = %v", typ, st.Seq, err)
				}
				return
			}
		}
		t.Fatalf("no %s step in the first push", typ)
	}
	tests := []struct {
		name   string
		change func()
		check  func(got wholeRead)
	}{
		{"new steps", func() {
			if _, err := s.Apply(ctx, storetest.Batch("long", 3*perPush, 1)); err != nil {
				t.Fatalf("Apply = %v", err)
			}
		}, func(got wholeRead) {
			if got.Summary.Steps != before.Summary.Steps+1 {
				t.Errorf("Steps = %d; want %d", got.Summary.Steps, before.Summary.Steps+1)
			}
		}},
		{"command of an old turn fails", func() {
			old(store.TypeCommand, func(st *store.Step) {
				st.Outcome, st.Payload.Command, st.Payload.ExitCode = "failed", ptr("make lint"), ptr(int64(7))
				st.Error = &store.StepError{Type: "tool_error", Message: "exit 7"}
			})
		}, func(got wholeRead) {
			i := slices.IndexFunc(got.Report.Commands, func(c store.CommandRun) bool { return c.Command == "make lint" })
			if i < 0 || got.Report.Commands[i].Failed != 1 || !slices.Equal(got.Report.Commands[i].ExitCodes, []int64{7}) {
				t.Errorf("Report.Commands has no failed make lint with exit code 7 (at %d)", i)
			}
		}},
		{"edit of an old turn moves to another turn and file", func() {
			old(store.TypeEdit, func(st *store.Step) {
				st.TurnID = first.Turns[0].ID
				st.ActorID = first.Turns[0].ActorID
				st.Payload.Path, st.Decision, st.Outcome, st.Error, st.Flags = "/home/dev/src/widget/moved.go", "accepted", "ok", nil, []store.Flag{}
				st.Payload.IsFullWrite, st.Payload.OldString, st.Payload.NewString = ptr(true), nil, ptr("package moved\n")
			})
		}, func(got wholeRead) {
			i := slices.IndexFunc(got.Report.Files, func(f store.FileTouched) bool { return f.Path == "/home/dev/src/widget/moved.go" })
			if i < 0 || got.Report.Files[i].Created != 1 {
				t.Errorf("Report.Files has no created moved.go (at %d)", i)
			}
			j := slices.IndexFunc(got.Changes, func(f store.FileChange) bool { return f.Path == "/home/dev/src/widget/moved.go" })
			if j < 0 || !got.Changes[j].Known || got.Changes[j].After != "package moved\n" {
				t.Errorf("FileChanges has no known moved.go (at %d)", j)
			}
		}},
		{"note", func() {
			if _, err := s.AddNote(ctx, "long", store.NoteInput{Seq: 50, Author: "ann", Text: "look"}); err != nil {
				t.Fatalf("AddNote = %v", err)
			}
		}, nil},
		{"workspace root", func() {
			b := storetest.Batch("long", 0, 1)
			b.Segments, b.Actors, b.Turns, b.Steps = nil, nil, nil, nil
			b.Session.Workspace.Root = "/elsewhere"
			if _, err := s.Apply(ctx, b); err != nil {
				t.Fatalf("Apply(header) = %v", err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			got := mustWholeRead(t, s, "long")
			fresh := mustOpenPath(t, path) // remembers nothing yet
			want := mustWholeRead(t, fresh, "long")
			if !reflect.DeepEqual(got.Summary, want.Summary) {
				t.Errorf("Summary = %+v; want %+v (a fresh read)", got.Summary, want.Summary)
			}
			if !reflect.DeepEqual(got.Report, want.Report) {
				t.Errorf("Report differs from a fresh read's")
			}
			if !reflect.DeepEqual(got.Changes, want.Changes) {
				t.Errorf("FileChanges differ from a fresh read's")
			}
			if !reflect.DeepEqual(got.Listed, want.Listed) {
				t.Errorf("List row = %+v; want %+v (a fresh read)", got.Listed, want.Listed)
			}
			if !reflect.DeepEqual(got.Listed.Summary, got.Summary) {
				t.Errorf("List row's summary = %+v; Detail's %+v", got.Listed.Summary, got.Summary)
			}
			if tt.check != nil {
				tt.check(got)
			}
		})
	}
}

// TestDeleteForgetsWholeSession: nothing of a deleted session stays in the
// memory of the store that deleted it, nor, at its next read of any
// session, of a store in another process.
func TestDeleteForgetsWholeSession(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, other := mustOpenPath(t, path), mustOpenPath(t, path)
	for _, id := range []string{"gone", "kept", "gone-elsewhere"} {
		if _, err := s.Apply(ctx, storetest.Batch(id, 0, 50)); err != nil {
			t.Fatalf("Apply(%s) = %v", id, err)
		}
		mustWholeRead(t, s, id)
	}
	if _, _, held := s.Remembered("gone"); !held {
		t.Fatalf("Remembered(gone) = false after reading it; want true")
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete(gone) = %v", err)
	}
	if _, _, held := s.Remembered("gone"); held {
		t.Errorf("Remembered(gone) = true after Delete; want false")
	}
	if err := other.Delete(ctx, "gone-elsewhere"); err != nil {
		t.Fatalf("other store: Delete(gone-elsewhere) = %v", err)
	}
	if _, err := s.Apply(ctx, storetest.Batch("kept", 50, 1)); err != nil {
		t.Fatalf("Apply(kept) = %v", err)
	}
	mustWholeRead(t, s, "kept")
	if _, _, held := s.Remembered("gone-elsewhere"); held {
		t.Errorf("Remembered(gone-elsewhere) = true after another store deleted it and this one read again; want false")
	}
}

// TestWholeMemoryIsBounded reads more sessions than the store remembers.
func TestWholeMemoryIsBounded(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	for i := range store.RememberedSessions + 10 {
		id := fmt.Sprintf("s%d", i)
		if _, err := s.Apply(ctx, storetest.Batch(id, 0, 20)); err != nil {
			t.Fatalf("Apply(%s) = %v", id, err)
		}
		mustWholeRead(t, s, id)
		if n, bytes, _ := s.Remembered(id); n > store.RememberedSessions || bytes > store.RememberedBytes {
			t.Fatalf("after %d sessions: %d remembered, %d bytes; want at most %d, %d", i+1, n, bytes, store.RememberedSessions, store.RememberedBytes)
		}
	}
}

// TestWholeReadWhileWriting reads a session from several goroutines while
// it is written (run with -race): the remembered results are shared, never
// changed in place, and the last read answers as a fresh store.
func TestWholeReadWhileWriting(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	first, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	if _, err := first.Apply(ctx, storetest.Batch("live", 0, 3000)); err != nil {
		t.Fatalf("Apply = %v", err)
	}
	if err := first.Close(); err != nil { // finishes the search index first
		t.Fatalf("Close = %v", err)
	}
	s := mustOpenPath(t, path)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := s.Detail(ctx, "live", store.DetailQuery{Turns: 3, Head: 100}); err != nil {
					errs <- err
					return
				}
				if _, err := s.FileChanges(ctx, "live"); err != nil {
					errs <- err
					return
				}
				if _, err := s.List(ctx, store.ListQuery{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		if _, err := s.Apply(ctx, storetest.Batch("live", 3000+i, 1)); err != nil {
			t.Fatalf("Apply = %v", err)
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("read while writing = %v", err)
		}
	}
	got, want := mustWholeRead(t, s, "live"), mustWholeRead(t, mustOpenPath(t, path), "live")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after reads while writing: Summary = %+v; want %+v (a fresh read), or the report, changes or list row differ", got.Summary, want.Summary)
	}
}
