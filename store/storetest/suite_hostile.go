package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// unstorableTexts are ids and filter values no backend stores every one
// of: a NUL and bytes that are not UTF-8 (PostgreSQL holds neither).
var unstorableTexts = []string{"a\x00b", "a\xffb"}

// A session asked for by an id no session has, whatever its bytes, is
// not found, and a filter with such a value keeps nothing: the answers a
// backend gives for any unknown id or value, never a failed query (a team
// server's 500). The stored session is untouched.
func testUnknownText(t *testing.T, s store.Backend) {
	b := smallBatch("a")
	b.Usage = []store.UsageRecord{usageRecord("a", "1", tStart, "claude-sonnet-4-5", pricing.Tokens{Input: 10}, 1, nil, store.UsageFromFile)}
	mustApply(t, s, b)
	before, err := s.Detail(bg, "a", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s = %v; want ErrNotFound", what, err)
		}
	}
	for _, x := range unstorableTexts {
		_, err := s.Detail(bg, x, store.DetailQuery{})
		notFound("Detail", err)
		_, err = s.FileChanges(bg, x)
		notFound("FileChanges", err)
		_, err = s.Image(bg, x, 1, 0)
		notFound("Image", err)
		_, err = s.TurnSteps(bg, x, "a-t1", 0, 10)
		notFound("TurnSteps", err)
		if steps, err := s.TurnSteps(bg, "a", x, 0, 10); err != nil || len(steps) != 0 {
			t.Errorf("TurnSteps(a, %q) = %d steps, %v; want none", x, len(steps), err)
		}
		_, err = s.EndSession(bg, x, time.Now())
		notFound("EndSession", err)
		notFound("SetVerdict", s.SetVerdict(bg, x, store.Verdict{State: "approved"}))
		notFound("ClearVerdict", s.ClearVerdict(bg, x))
		_, err = s.AddNote(bg, x, store.NoteInput{Seq: 1, Author: "ann", Text: "n"})
		notFound("AddNote", err)
		_, err = s.EditNote(bg, x, 1, store.NoteInput{Author: "ann", Text: "n"})
		notFound("EditNote", err)
		notFound("DeleteNote", s.DeleteNote(bg, x, 1))
		notFound("Delete", s.Delete(bg, x))

		for _, q := range []store.ListQuery{{Agent: x}, {Verdict: x}, {Owner: x}, {Workspace: x}} {
			l, err := s.List(bg, q)
			if err != nil || len(l.Sessions) != 0 || l.Total.Sessions != 0 {
				t.Errorf("List(%+v) = %d sessions, total %d, %v; want none", q, len(l.Sessions), l.Total.Sessions, err)
			}
		}
		// The chips count under the other filters: a's agent under a
		// workspace filter that keeps nothing is 0, under an agent filter
		// that keeps nothing it is a's own count.
		if l, err := s.List(bg, store.ListQuery{Agent: x}); err != nil || len(l.Agents) != 1 || l.Agents[0].Sessions != 1 {
			t.Errorf("List(agent %q).Agents = %+v, %v; want a's agent, 1 session", x, l.Agents, err)
		}
		later := store.StartedNS(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
		// A cursor is read or refused as not one of the list (PostgreSQL
		// made none with such an id).
		if l, err := s.List(bg, store.ListQuery{After: store.ListCursor(later, x)}); err != nil && !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("List(after a cursor of id %q) = %v; want a page or ErrBadCursor", x, err)
		} else if err == nil && len(l.Sessions) != 1 {
			t.Errorf("List(after a cursor of id %q in 2100) = %d sessions; want a, started before", x, len(l.Sessions))
		}
		if r, err := s.Search(bg, store.SearchQuery{Q: "test", Session: x}); err != nil || len(r.Hits) != 0 {
			t.Errorf("Search(test in session %q) = %d hits, %v; want none", x, len(r.Hits), err)
		}
		for _, q := range []store.UsageQuery{{Group: "day", Agent: x}, {Group: "day", Model: x}, {Group: "day", Sessions: []string{x}}} {
			if rows, err := store.UsageReport(bg, s, q); err != nil || len(rows) != 0 {
				t.Errorf("UsageReport(%+v) = %+v, %v; want no rows", q, rows, err)
			}
		}
	}
	after, err := s.Detail(bg, "a", store.DetailQuery{})
	if err != nil || len(after.Steps) != len(before.Steps) || after.Verdict != nil || len(after.Notes) != 0 {
		t.Errorf("Detail(a) after = %+v, %v; want it as before", after.Summary, err)
	}
}
