package store_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
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
