package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// EndSession sets ended_at only forward, stamps the session when it
// writes, and a later push without ended_at keeps it.
func testEndSession(t *testing.T, s store.Backend) {
	mustApply(t, s, smallBatch("a"))
	at := time.Date(2026, 1, 2, 12, 0, 0, 123_000_000, time.UTC)
	for _, tc := range []struct {
		at      time.Time
		changed bool
		ended   time.Time
	}{
		{at, true, at},
		{at.Add(-time.Hour), false, at},
		{at, false, at},
		{at.Add(time.Minute), true, at.Add(time.Minute)},
	} {
		before := mustLatest(t, s)
		changed, err := s.EndSession(bg, "a", tc.at)
		if err != nil || changed != tc.changed {
			t.Errorf("EndSession(a, %v) = %v, %v; want %v", tc.at, changed, err, tc.changed)
		}
		ended, ok := store.ParseTimestamp(mustDetail(t, s, "a").EndedAt)
		if !ok || !ended.Equal(tc.ended) {
			t.Errorf("after EndSession(a, %v): ended_at %v; want %v", tc.at, ended, tc.ended)
		}
		if cs, _ := mustChanges(t, s, before); (len(cs) == 1) != tc.changed {
			t.Errorf("EndSession(a, %v): changes %v; want one change only when it wrote", tc.at, cs)
		}
	}
	mustApply(t, s, stepsBatch("a", stepOf("a", 6, store.TypeRead)))
	if ended, _ := store.ParseTimestamp(mustDetail(t, s, "a").EndedAt); !ended.Equal(at.Add(time.Minute)) {
		t.Errorf("after a push without ended_at: ended_at %v; want %v kept", ended, at.Add(time.Minute))
	}
	if _, err := s.EndSession(bg, "nope", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EndSession(nope) = %v; want ErrNotFound", err)
	}
	if err := s.Delete(bg, "a"); err != nil {
		t.Fatalf("Delete(a) = %v", err)
	}
	if _, err := s.EndSession(bg, "a", at.Add(time.Hour)); err == nil {
		t.Errorf("EndSession(deleted a) = nil; want an error")
	} else {
		wantErr[*store.DeletedError](t, "EndSession(deleted a)", err)
	}
}

// Delete removes a session for good: every read of it is ErrNotFound, the
// list no longer has it, the change is reported, a push of it is refused
// as deleted, and other sessions are as they were.
func testDelete(t *testing.T, s store.Backend) {
	a := smallBatch("a")
	a.Steps = append(a.Steps, stepOf("a", 6, store.TypeOther))
	mustApply(t, s, a)
	mustApply(t, s, smallBatch("b"))
	b := mustJSON(t, mustDetail(t, s, "b"))
	before := mustLatest(t, s)

	if err := s.Delete(bg, "a"); err != nil {
		t.Fatalf("Delete(a) = %v", err)
	}
	if _, err := s.Detail(bg, "a", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Detail(deleted a) = %v; want ErrNotFound", err)
	}
	if _, err := s.TurnSteps(bg, "a", a.Turns[0].ID, 0, 1000); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TurnSteps(deleted a) = %v; want ErrNotFound", err)
	}
	if _, err := s.FileChanges(bg, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileChanges(deleted a) = %v; want ErrNotFound", err)
	}
	if _, err := s.Image(bg, "a", 6, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Image(deleted a) = %v; want ErrNotFound", err)
	}
	l := mustList(t, s, store.ListQuery{})
	if got := ids(l.Sessions); !slices.Equal(got, []string{"b"}) || l.Total.Sessions != 1 {
		t.Errorf("List() after Delete(a) = %v (total %d); want [b]", got, l.Total.Sessions)
	}
	latest := mustLatest(t, s)
	cs, csLatest := mustChanges(t, s, before)
	if want := []store.Change{{SessionID: "a", Stamp: latest, Deleted: true}}; latest <= before || !reflect.DeepEqual(cs, want) || csLatest != latest {
		t.Errorf("ChangesSince(before Delete) = %v, %d; want %v, %d after %d", cs, csLatest, want, latest, before)
	}
	if got := mustJSON(t, mustDetail(t, s, "b")); got != b {
		t.Errorf("Detail(b) after Delete(a) =\n%s\nwant as before\n%s", got, b)
	}

	_, err := s.Apply(bg, smallBatch("a"))
	if e := wantErr[*store.DeletedError](t, "Apply(deleted a)", err); e.SessionID != "a" || e.Error() != "session a was deleted; it is not recorded again" {
		t.Errorf("Apply(deleted a) = %+v (%q); want the deleted-session error of a", e, e.Error())
	}
	if mustLatest(t, s) != latest {
		t.Errorf("a refused push moved the change stamp")
	}
	for _, id := range []string{"a", "nope"} {
		if err := s.Delete(bg, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Delete(%s) = %v; want ErrNotFound", id, err)
		}
	}
	if err := s.SetVerdict(bg, "a", store.Verdict{State: "approved"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetVerdict(deleted a) = %v; want ErrNotFound", err)
	}
	if _, err := s.AddNote(bg, "a", store.NoteInput{Seq: 1, Author: "rev", Text: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddNote(deleted a) = %v; want ErrNotFound", err)
	}
}

// Every write moves the change stamp on, strictly; ChangesSince(stamp)
// gives exactly the sessions written after it, each once at its last
// stamp, oldest first.
func testStamps(t *testing.T, s store.Backend) {
	if latest := mustLatest(t, s); latest != 0 {
		t.Errorf("LatestStamp() of an empty store = %d; want 0", latest)
	}
	if cs, latest := mustChanges(t, s, 0); len(cs) != 0 || latest != 0 {
		t.Errorf("ChangesSince(0) of an empty store = %v, %d; want none, 0", cs, latest)
	}
	var note store.Note
	writes := []struct {
		session string
		write   func() error
	}{
		{"a", func() error { _, err := s.Apply(bg, smallBatch("a")); return err }},
		{"b", func() error { _, err := s.Apply(bg, smallBatch("b")); return err }},
		{"a", func() error { _, err := s.Apply(bg, stepsBatch("a", stepOf("a", 6, store.TypeRead))); return err }},
		{"b", func() error { return s.SetVerdict(bg, "b", store.Verdict{State: "approved"}) }},
		{"a", func() error {
			var err error
			note, err = s.AddNote(bg, "a", store.NoteInput{Seq: 2, Author: "rev", Text: "why?"})
			return err
		}},
		{"a", func() error {
			_, err := s.EditNote(bg, "a", note.ID, store.NoteInput{Author: "rev", Text: "ok"})
			return err
		}},
		{"c", func() error { _, err := s.Apply(bg, smallBatch("c")); return err }},
		{"a", func() error { return s.DeleteNote(bg, "a", note.ID) }},
		{"b", func() error { return s.ClearVerdict(bg, "b") }},
		{"a", func() error { _, err := s.EndSession(bg, "a", time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)); return err }},
		{"b", func() error { return s.Delete(bg, "b") }},
	}
	stamps := []int64{0}
	last := map[string]int64{}
	gone := map[string]bool{} // deleted by its last write
	for i, w := range writes {
		before := stamps[len(stamps)-1]
		if err := w.write(); err != nil {
			t.Fatalf("write %d (%s) = %v", i, w.session, err)
		}
		after := mustLatest(t, s)
		if after <= before {
			t.Errorf("write %d (%s): LatestStamp() = %d; want more than %d", i, w.session, after, before)
		}
		deleted := w.session == "b" && i == len(writes)-1
		cs, latest := mustChanges(t, s, before)
		if want := []store.Change{{SessionID: w.session, Stamp: after, Deleted: deleted}}; !reflect.DeepEqual(cs, want) || latest != after {
			t.Errorf("write %d (%s): ChangesSince(%d) = %v, %d; want %v, %d", i, w.session, before, cs, latest, want, after)
		}
		if !deleted {
			if got := mustDetail(t, s, w.session).UpdatedAt; got != store.FormatStamp(after) {
				t.Errorf("write %d: Detail(%s).UpdatedAt = %s; want %s", i, w.session, got, store.FormatStamp(after))
			}
		}
		stamps = append(stamps, after)
		last[w.session] = after
		gone[w.session] = deleted
	}
	// From each stamp on: every session written later, at its last stamp.
	for i, from := range stamps {
		var want []store.Change
		for id, stamp := range last {
			if stamp > from {
				want = append(want, store.Change{SessionID: id, Stamp: stamp, Deleted: gone[id]})
			}
		}
		slices.SortFunc(want, func(x, y store.Change) int { return cmp.Compare(x.Stamp, y.Stamp) })
		cs, latest := mustChanges(t, s, from)
		if len(cs) != len(want) || (len(want) > 0 && !reflect.DeepEqual(cs, want)) || latest != stamps[len(stamps)-1] {
			t.Errorf("ChangesSince(stamp %d) = %v, %d; want %v, %d", i, cs, latest, want, stamps[len(stamps)-1])
		}
	}
}

// Writers at once: a reader that follows ChangesSince from the latest
// stamp it was given sees every session written, none lost to a write
// that took an earlier stamp but committed later, and the final stamps
// are distinct.
func testConcurrentWrites(t *testing.T, s store.Backend) {
	const writers, perWriter = 4, 6
	done := make(chan struct{})
	seen := map[string]bool{}
	polled := make(chan error, 1)
	go func() {
		var since int64
		poll := func() error {
			cs, latest, err := s.ChangesSince(bg, since)
			if err != nil {
				return err
			}
			for _, c := range cs {
				seen[c.SessionID] = true
			}
			since = latest
			return nil
		}
		for {
			select {
			case <-done:
				polled <- poll()
				return
			default:
			}
			if err := poll(); err != nil {
				polled <- err
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range perWriter {
				b := smallBatch(fmt.Sprintf("w%d-%d", w, i))
				if _, err := s.Apply(bg, b); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Errorf("Apply = %v", err)
		}
	}
	close(done)
	if err := <-polled; err != nil {
		t.Fatalf("ChangesSince = %v", err)
	}
	cs, latest := mustChanges(t, s, 0)
	stamps := map[int64]string{}
	for _, c := range cs {
		if other, ok := stamps[c.Stamp]; ok {
			t.Errorf("sessions %s and %s have the same stamp %d", other, c.SessionID, c.Stamp)
		}
		stamps[c.Stamp] = c.SessionID
	}
	if len(cs) != writers*perWriter || latest != mustLatest(t, s) {
		t.Errorf("ChangesSince(0) = %d changes, latest %d; want %d, %d", len(cs), latest, writers*perWriter, mustLatest(t, s))
	}
	for w := range writers {
		for i := range perWriter {
			if id := fmt.Sprintf("w%d-%d", w, i); !seen[id] {
				t.Errorf("a reader following ChangesSince never saw %s", id)
			}
		}
	}
}
