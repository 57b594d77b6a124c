package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/agentreview/service/store"
)

func TestStampsIncrease(t *testing.T) {
	s := mustOpen(t)
	if got := mustLatest(t, s); got != 0 {
		t.Errorf("LatestStamp() of an empty store = %d; want 0", got)
	}
	if cs, latest := mustChanges(t, s, 0); len(cs) != 0 || latest != 0 {
		t.Errorf("ChangesSince(0) of an empty store = %+v, %d; want nothing, 0", cs, latest)
	}
	rewrite := func(out string) func() {
		return func() {
			st := step("a", 2, "command")
			st["payload"].(obj)["stdout"] = out
			mustApply(t, s, stepsBatch("a", st))
		}
	}
	writes := []struct {
		name    string
		write   func()
		changes bool
	}{
		{"create a", func() { mustApply(t, s, newBatch("a")) }, true},
		{"add a step", func() { mustApply(t, s, stepsBatch("a", step("a", 6, "read"))) }, true},
		{"identical re-send", func() { mustApply(t, s, stepsBatch("a", step("a", 6, "read"))) }, false},
		{"create b", func() { mustApply(t, s, newBatch("b")) }, true},
		{"rewrite a step", rewrite("first"), true},
		{"rewrite it again", rewrite("second"), true},
		{"end a", func() {
			b := stepsBatch("a")
			set(b, "session.ended_at", tEnd)
			mustApply(t, s, b)
		}, true},
		{"delete b", func() { mustDelete(t, s, "b") }, true},
		{"create c", func() { mustApply(t, s, newBatch("c")) }, true},
	}
	// Writes far quicker than the clock ticks still get distinct stamps.
	for i := range 30 {
		writes = append(writes, struct {
			name    string
			write   func()
			changes bool
		}{fmt.Sprintf("quick rewrite %d", i), rewrite(fmt.Sprint(i)), true})
	}
	last := mustLatest(t, s)
	for _, w := range writes {
		w.write()
		got := mustLatest(t, s)
		switch {
		case w.changes && got <= last:
			t.Errorf("LatestStamp() after %s = %d; want more than %d", w.name, got, last)
		case !w.changes && got != last:
			t.Errorf("LatestStamp() after %s = %d; want %d, unchanged", w.name, got, last)
		}
		last = got
	}
	// The last write was to a: its updated_at is the latest stamp.
	if got, want := mustDetail(t, s, "a").UpdatedAt, store.FormatStamp(last); got != want {
		t.Errorf("Detail(a).UpdatedAt = %s; want FormatStamp(LatestStamp()) = %s", got, want)
	}
}

func TestChangesSince(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("b"))
	mustApply(t, s, newBatch("c"))
	cs, latest := mustChanges(t, s, 0)
	if got := changeIDs(cs); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("ChangesSince(0) = %v; want [a b c], oldest first", got)
	}
	if latest != cs[2].Stamp || latest != mustLatest(t, s) {
		t.Errorf("ChangesSince(0) latest = %d; want %d (the last change) = LatestStamp()", latest, cs[2].Stamp)
	}
	for _, c := range cs {
		if got := mustDetail(t, s, c.SessionID).UpdatedAt; got != store.FormatStamp(c.Stamp) {
			t.Errorf("Detail(%s).UpdatedAt = %s; want FormatStamp(%d) = %s", c.SessionID, got, c.Stamp, store.FormatStamp(c.Stamp))
		}
	}

	// A session shows once, at its latest write.
	mustApply(t, s, stepsBatch("a", step("a", 6, "read")))
	mustDelete(t, s, "b")
	tests := []struct {
		since int64
		want  []string
	}{
		{0, []string{"c", "a", "b"}},
		{cs[0].Stamp, []string{"c", "a", "b"}},
		{cs[2].Stamp, []string{"a", "b"}},
	}
	for _, tc := range tests {
		got, latest := mustChanges(t, s, tc.since)
		if ids := changeIDs(got); !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("ChangesSince(%d) = %v; want %v", tc.since, ids, tc.want)
		}
		if latest != mustLatest(t, s) {
			t.Errorf("ChangesSince(%d) latest = %d; want LatestStamp() %d", tc.since, latest, mustLatest(t, s))
		}
	}
	now := mustLatest(t, s)
	if got, latest := mustChanges(t, s, now); len(got) != 0 || latest != now {
		t.Errorf("ChangesSince(latest) = %+v, %d; want nothing, %d", got, latest, now)
	}
	if got, latest := mustChanges(t, s, now+1000); len(got) != 0 || latest != now+1000 {
		t.Errorf("ChangesSince(future) = %+v, %d; want nothing and the stamp given", got, latest)
	}
}

func changeIDs(cs []store.Change) []string {
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.SessionID)
	}
	return ids
}

// A second *Store on the same file stands for another process (capture,
// import, the terminal delete): the first one sees its writes.
func TestChangesFromAnotherStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	server := mustOpenPath(t, path)
	other := mustOpenPath(t, path)
	mustApply(t, server, newBatch("a"))
	stamp := mustLatest(t, server)

	mustApply(t, other, newBatch("x"))
	cs, latest := mustChanges(t, server, stamp)
	if len(cs) != 1 || cs[0].SessionID != "x" || cs[0].Stamp <= stamp {
		t.Fatalf("ChangesSince(%d) after the other store's write = %+v; want one change of x, later", stamp, cs)
	}
	if d := mustDetail(t, server, "x"); len(d.Steps) != 5 {
		t.Errorf("Detail(x) from the first store has %d steps; want 5", len(d.Steps))
	}

	// Stamps keep increasing across the two writers.
	mustApply(t, server, stepsBatch("a", step("a", 6, "read")))
	cs2, latest2 := mustChanges(t, other, latest)
	if len(cs2) != 1 || cs2[0].SessionID != "a" || latest2 <= latest {
		t.Errorf("other.ChangesSince(%d) = %+v, %d; want a later change of a", latest, cs2, latest2)
	}

	// The other process deletes; the server sees it and refuses the id.
	mustDelete(t, other, "x")
	cs3, _ := mustChanges(t, server, latest2)
	if len(cs3) != 1 || cs3[0].SessionID != "x" {
		t.Errorf("ChangesSince(%d) after the other store's delete = %+v; want x", latest2, cs3)
	}
	if _, err := server.Detail(context.Background(), "x", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Detail(x) after the other store's delete = %v; want ErrNotFound", err)
	}
	var de *store.DeletedError
	if err := applyErr(t, server, newBatch("x")); !errors.As(err, &de) {
		t.Errorf("Apply(x) after the other store's delete = %v; want *DeletedError", err)
	}
}

// Two writers at once on one file: every write lands, and every write gets
// its own stamp.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	stores := []*store.Store{mustOpenPath(t, path), mustOpenPath(t, path)}
	const each = 15
	batches := make([][]*store.Batch, len(stores))
	for w := range stores {
		for i := range each {
			batches[w] = append(batches[w], mustParse(t, newBatch(fmt.Sprintf("w%d-%d", w, i))))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range batches[w] {
				if _, err := s.Apply(context.Background(), b); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Apply() from a concurrent writer = %v; want no error", err)
	}
	cs, _ := mustChanges(t, stores[0], 0)
	seen := map[int64]bool{}
	for _, c := range cs {
		if seen[c.Stamp] {
			t.Errorf("stamp %d given to two writes", c.Stamp)
		}
		seen[c.Stamp] = true
	}
	if len(cs) != 2*each {
		t.Errorf("ChangesSince(0) = %d changes; want %d", len(cs), 2*each)
	}
}

func TestFormatStamp(t *testing.T) {
	for stamp, want := range map[int64]string{
		0:                "1970-01-01T00:00:00Z",
		1767348000000000: "2026-01-02T10:00:00Z",
		1767348000000001: "2026-01-02T10:00:00.000001Z",
	} {
		if got := store.FormatStamp(stamp); got != want {
			t.Errorf("FormatStamp(%d) = %q; want %q", stamp, got, want)
		}
	}
}
