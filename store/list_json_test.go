package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// TestListRemembersItsEncoding: List keeps each session's JSON beside its
// summary, counted in the memory bound, and Delete drops it.
func TestListRemembersItsEncoding(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("b"))
	l := mustList(t, s, "")
	for _, o := range l.Sessions {
		want, _ := json.Marshal(o)
		if got, total := s.RememberedListJSON(o.ID); !bytes.Equal(got, want) || total < 2*len(want) {
			t.Errorf("remembered JSON of %s = %q, %d bytes in all; want %q, counted in the bytes", o.ID, got, total, want)
		}
	}
	var buf bytes.Buffer
	if err := l.WriteJSON(&buf); err != nil {
		t.Fatalf("WriteJSON = %v", err)
	}
	if want, _ := json.Marshal(l); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("WriteJSON =\n%s\nwant json.Marshal's\n%s", buf.Bytes(), want)
	}

	a, before := s.RememberedListJSON("a")
	mustDelete(t, s, "a")
	if got, after := s.RememberedListJSON("a"); got != nil || after > before-len(a) {
		t.Errorf("after Delete(a): remembered JSON %q, %d bytes (from %d); want none of a's %d left", got, after, before, len(a))
	}
}

// TestListPageReadsOnlyAnIndex: the unfiltered list, whole or a page,
// reads pk, id and stamp from one covering index, in its order: no table
// row, no sort.
func TestListPageReadsOnlyAnIndex(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	for _, q := range []store.ListQuery{{}, {Limit: 2}, {Limit: 2, After: "1:a"}} {
		plan, err := s.ListPagePlan(q)
		if err != nil {
			t.Fatalf("ListPagePlan(%+v) = %v", q, err)
		}
		if !strings.Contains(plan, "COVERING INDEX sessions_list") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("plan of the list's page %+v =\n%s\nwant a scan of the covering index sessions_list and no sort", q, plan)
		}
	}
}

// TestSessionTitleReadsOnlyPrompts: the title's look-ups of a session's
// first user prompt and first task prompt each read an index of those
// steps alone; without one, a session with no user prompt had every step
// read for the task prompt.
func TestSessionTitleReadsOnlyPrompts(t *testing.T) {
	s := mustOpen(t)
	plan, err := s.SessionRowPlan()
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"steps_prompts", "steps_task_prompts"} {
		if !strings.Contains(plan, "INDEX "+index+" ") {
			t.Errorf("plan of a session's row =\n%s\nwant a search of %s for its title", plan, index)
		}
	}
}

// TestListRecountsLongSessionByBlocks: a session of more than a block of
// steps that the list showed before is counted again, after a write, from
// the partial results per block the session's page keeps too (it is then
// remembered there), and its counts stay those of a store that counts it
// afresh and of its page: with new steps, and with a step of its first
// block rewritten as failed and flagged.
func TestListRecountsLongSessionByBlocks(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	long := storetest.Batch("long", 0, 1<<store.BlockShift+500)
	if _, err := s.Apply(ctx, long); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, newBatch("small"))
	counts := func(s *store.Store) map[string]store.Summary {
		l := mustList(t, s, "")
		out := map[string]store.Summary{}
		for _, o := range l.Sessions {
			out[o.ID] = o.Summary
		}
		return out
	}
	first := counts(s)
	if n, _, _ := s.Remembered(""); n != 0 {
		t.Fatalf("%d sessions remembered whole after a first list; want none", n)
	}

	if _, err := s.Apply(ctx, storetest.Batch("long", (1<<store.BlockShift+500)/10+1, 10)); err != nil {
		t.Fatal(err)
	}
	var failed *store.Step
	for i := range long.Steps {
		if st := &long.Steps[i]; st.Type == store.TypeRead && st.Outcome == "ok" && len(st.Flags) == 0 {
			failed = st
			st.Outcome = "failed"
			st.Flags = append(st.Flags, store.Flag{Kind: "failed", Severity: "warn", Reason: "rewritten"})
			break
		}
	}
	if failed == nil || failed.Seq > 1<<store.BlockShift/2 {
		t.Fatalf("no read step early in the session to rewrite: %+v", failed)
	}
	if _, err := s.Apply(ctx, long); err != nil {
		t.Fatal(err)
	}
	got := counts(s)
	if n, _, held := s.Remembered("long"); n != 1 || !held {
		t.Errorf("after a list of the changed long session: %d sessions remembered whole; want it alone", n)
	}
	want := counts(mustOpenPath(t, s.Path())) // another store: counts every step afresh
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list after the writes =\n%+v\nwant, counted afresh,\n%+v", got, want)
	}
	if g, f := got["long"], first["long"]; g.Steps != f.Steps+10 || g.Failed != f.Failed+1 || g.Flags != f.Flags+1 {
		t.Errorf("long: %d steps, %d failed, %d flags; want %d, %d and %d", g.Steps, g.Failed, g.Flags, f.Steps+10, f.Failed+1, f.Flags+1)
	}
	if d := mustDetail(t, s, "long"); !reflect.DeepEqual(d.Summary, got["long"]) {
		t.Errorf("long's page summary %+v; want the list's %+v", d.Summary, got["long"])
	}
}
