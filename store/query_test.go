package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// turnsBatch is session sid with n turns t1..tn, each with a command step
// whose stdout is out.
func turnsBatch(sid string, n int, out string) obj {
	b := newBatch(sid)
	turns, steps := arr{}, arr{}
	for i := 1; i <= n; i++ {
		turns = append(turns, turn(sid, fmt.Sprintf("t%d", i), i))
		st := step(sid, i, "command")
		st["turn_id"] = fmt.Sprintf("%s-t%d", sid, i)
		st["payload"].(obj)["stdout"] = out
		steps = append(steps, st)
	}
	b["turns"], b["steps"] = turns, steps
	return b
}

func mustQuery(t *testing.T, s *store.Store, id string, q store.DetailQuery) store.SessionDetail {
	t.Helper()
	d, err := s.Detail(context.Background(), id, q)
	if err != nil {
		t.Fatalf("Detail(%s, %+v) = %v", id, q, err)
	}
	return d
}

func turnIDs(d store.SessionDetail) string {
	var ids []string
	for _, t := range d.Turns {
		ids = append(ids, strings.TrimPrefix(t.ID, "q-"))
	}
	return strings.Join(ids, ",")
}

func TestDetailQueryTurns(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, turnsBatch("q", 10, "ok"))
	for _, c := range []struct {
		name  string
		q     store.DetailQuery
		turns string
		first int
	}{
		{"last 3", store.DetailQuery{Turns: 3}, "t8,t9,t10", 7},
		{"3 before position 7", store.DetailQuery{Turns: 3, Before: 7}, "t5,t6,t7", 4},
		{"more than there are", store.DetailQuery{Turns: 5, Before: 2}, "t1,t2", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mustQuery(t, s, "q", c.q)
			if got := turnIDs(d); got != c.turns {
				t.Errorf("turns = %s; want %s", got, c.turns)
			}
			if d.Window == nil || d.Window.First != c.first || d.Window.Total != 10 {
				t.Errorf("window = %+v; want first %d of 10", d.Window, c.first)
			}
			if len(d.Steps) != len(d.Turns) {
				t.Errorf("%d steps for %d turns; want only the steps of those turns", len(d.Steps), len(d.Turns))
			}
			if d.Summary.Steps != 10 || d.Summary.Turns != 10 || len(d.Report.Commands) != 1 || d.Report.Commands[0].Runs != 10 {
				t.Errorf("summary %+v, report %+v; want them over the whole session", d.Summary, d.Report)
			}
		})
	}
	if d := mustDetail(t, s, "q"); d.Window != nil || len(d.Turns) != 10 {
		t.Errorf("a whole read has window %+v and %d turns; want none and 10", d.Window, len(d.Turns))
	}
}

func TestDetailQuerySince(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, turnsBatch("q", 5, "ok"))
	since := mustLatest(t, s)
	st := step("q", 3, "command")
	st["turn_id"] = "q-t3"
	st["payload"].(obj)["stdout"] = "changed"
	b := stepsBatch("q", st)
	b["turns"] = arr{turn("q", "t6", 6)}
	mustApply(t, s, b)
	d := mustQuery(t, s, "q", store.DetailQuery{Since: since})
	if got := turnIDs(d); got != "t3,t6" {
		t.Errorf("turns changed since the stamp = %s; want t3 (a changed step) and t6 (new)", got)
	}
	if d := mustQuery(t, s, "q", store.DetailQuery{Since: mustLatest(t, s)}); len(d.Turns) != 0 || len(d.Steps) != 0 {
		t.Errorf("nothing changed since the latest stamp, got turns %s", turnIDs(d))
	}
}

func TestDetailQuerySeqAndHead(t *testing.T) {
	s := mustOpen(t)
	long := strings.Repeat("é", 5000) // characters, not bytes
	mustApply(t, s, turnsBatch("q", 3, long))
	seq := int64(2)
	d := mustQuery(t, s, "q", store.DetailQuery{Seq: &seq, Head: 100})
	if len(d.Steps) != 1 || d.Steps[0].Seq != 2 {
		t.Fatalf("Seq 2 read %d steps; want step 2 only", len(d.Steps))
	}
	got := d.Steps[0]
	if *got.Payload.Stdout != long[:200] || got.Cut["stdout"] != 5000 {
		t.Errorf("head 100: stdout %d characters, cut %v; want 100 characters and cut stdout 5000", len([]rune(*got.Payload.Stdout)), got.Cut)
	}
	if _, cut := got.Cut["stderr"]; cut || *got.Payload.Stderr != "" {
		t.Errorf("an empty stderr must read back empty and uncut, got %q cut %v", *got.Payload.Stderr, got.Cut)
	}
	if whole := mustDetail(t, s, "q"); whole.Steps[1].Cut != nil || *whole.Steps[1].Payload.Stdout != long {
		t.Errorf("a whole read must not cut")
	}
}

func TestListPages(t *testing.T) {
	s := mustOpen(t)
	for i := range 5 {
		b := newBatch(fmt.Sprintf("p%d", i))
		set(b, "session.started_at", fmt.Sprintf("2026-01-0%dT10:00:00Z", i+1))
		if i == 4 {
			del(b, "session.metrics")
		}
		mustApply(t, s, b)
	}
	var got []string
	after := ""
	for page := 0; ; page++ {
		l, err := s.List(context.Background(), store.ListQuery{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if l.Total.Sessions != 5 || l.Total.CostNotRecorded != 1 {
			t.Errorf("page %d total = %+v; want every session counted", page, l.Total)
		}
		for _, o := range l.Sessions {
			got = append(got, o.ID)
		}
		if l.Next == "" {
			break
		}
		after = l.Next
	}
	if strings.Join(got, ",") != "p4,p3,p2,p1,p0" {
		t.Errorf("pages of 2 listed %v; want p4..p0 once each, newest first", got)
	}
	if _, err := s.List(context.Background(), store.ListQuery{After: "nonsense"}); err != store.ErrBadCursor {
		t.Errorf("List(after nonsense) = %v; want ErrBadCursor", err)
	}
}

// TestDetailRemembersWholeSessionSafely: the counts and report a Detail
// remembers are copies, and a write (by any process) is seen at once.
func TestDetailRemembersWholeSessionSafely(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, turnsBatch("q", 3, "ok"))
	d := mustDetail(t, s, "q")
	d.Report.Commands[0].Command = "changed by a caller"
	d.Summary.StepsByType["command"] = 99
	again := mustDetail(t, s, "q")
	if again.Report.Commands[0].Command != "go test ./..." || again.Summary.StepsByType["command"] != 3 {
		t.Errorf("a caller's change reached the next read: %+v %v", again.Report.Commands, again.Summary.StepsByType)
	}
	other := mustOpenPath(t, s.Path())
	st := step("q", 9, "read")
	st["turn_id"] = "q-t1"
	mustApply(t, other, stepsBatch("q", st))
	if got := mustDetail(t, s, "q"); got.Summary.Steps != 4 || len(got.Report.Files) != 1 {
		t.Errorf("after another store's write: %d steps, %d files; want 4 and 1", got.Summary.Steps, len(got.Report.Files))
	}
}
