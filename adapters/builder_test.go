package adapters_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

func mustTime(t testing.TB, s string) adapters.Time {
	t.Helper()
	at, ok := adapters.ParseTime(s)
	if !ok {
		t.Fatalf("ParseTime(%q) failed", s)
	}
	return at
}

// built finishes b and returns its records, each batch checked by the
// store's validation.
func built(t *testing.T, b *adapters.Builder) (*adapters.Session, *store.Batch) {
	t.Helper()
	b.Header.Agent = store.Agent{Kind: "test", Version: "1"}
	b.Header.Workspace = store.Workspace{Root: "/w"}
	b.Header.Source = "import:test"
	sess := b.Finish()
	if len(sess.Batches) != 1 {
		t.Fatalf("Finish gave %d batches; want 1", len(sess.Batches))
	}
	mustParse(t, sess.Batches[0])
	return sess, sess.Batches[0]
}

func stepByID(t *testing.T, b *store.Batch, id string) store.Step {
	t.Helper()
	for _, st := range b.Steps {
		if st.ID == id {
			return st
		}
	}
	t.Fatalf("no step %q in %+v", id, b.Steps)
	return store.Step{}
}

// TestBuilderRules checks the rules the builder applies to every agent:
// the first segment starts with the session, a turn without a mode takes
// the one before, steps of two streams are ordered by time and numbered,
// a step with no time gets the session's start, and a rejected call is
// not_run.
func TestBuilderRules(t *testing.T) {
	b := adapters.NewBuilder(adapters.Unit{ID: "s1"}, "test")
	t0, t1, t2, t3 := mustTime(t, "2026-01-02T03:04:00Z"), mustTime(t, "2026-01-02T03:04:01Z"),
		mustTime(t, "2026-01-02T03:04:02Z"), mustTime(t, "2026-01-02T03:04:03Z")
	b.Observe(t1)
	b.Observe(t0)
	main, other := b.Stream("a.jsonl"), b.Stream("b.jsonl")
	b.NewTurn("p1", "plan", t1)
	main.Message(nil, "p1", "user", "first", t1)
	call := main.Add(nil, store.Step{ID: "c1", Type: store.TypeCommand, Decision: adapters.DecisionUnknown,
		Outcome: adapters.OutcomeUnknown, Payload: store.Payload{Command: adapters.Text("rm -rf /tmp/x")}}, t3)
	b.Call("c1", call)
	other.Message(nil, "o1", "assistant", "between", t2)
	other.Message(nil, "o2", "assistant", "no time", adapters.Time{})
	b.NewSegment("compaction", t3)
	b.NewTurn("p2", "", t3)
	main.Message(nil, "p2", "user", "second", t3)
	steps, known := b.Result("c1")
	if !known || len(steps) != 1 {
		t.Fatalf("Result(c1) = %d steps, %v; want 1, true", len(steps), known)
	}
	steps[0].St.Decision = adapters.DecisionRejected // set by hand: Finish makes it not_run
	if again, _ := b.Result("c1"); len(again) != 0 {
		t.Errorf("second Result(c1) = %d steps; want none", len(again))
	}
	_, batch := built(t, b)

	if got := batch.Session.StartedAt; got != t0.Text {
		t.Errorf("session started_at = %s; want the earliest observed %s", got, t0.Text)
	}
	if got := batch.Segments[0].StartedAt; got != t0.Text {
		t.Errorf("first segment started_at = %s; want the session's start %s", got, t0.Text)
	}
	if got := batch.Segments[0].EndedAt; got != t3.Text {
		t.Errorf("first segment ended_at = %s; want the next one's start %s", got, t3.Text)
	}
	if got := batch.Segments[1].SourceFiles; len(got) != 1 || got[0] != "a.jsonl" {
		t.Errorf("second segment's source files = %v; want [a.jsonl]", got)
	}
	if got := batch.Turns[1].Mode; got != "plan" {
		t.Errorf("second turn's mode = %q; want plan carried from the first", got)
	}
	var order []string
	for _, st := range batch.Steps {
		order = append(order, st.ID)
	}
	want := []string{"p1", "o1", "o2", "c1", "p2"}
	if len(order) != len(want) {
		t.Fatalf("steps %v; want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] || batch.Steps[i].Seq != int64(i+1) {
			t.Fatalf("steps %v; want %v numbered 1..%d", order, want, len(want))
		}
	}
	if got := stepByID(t, batch, "o2").At; got != t0.Text {
		t.Errorf("o2 (no time) at = %s; want the session's start %s", got, t0.Text)
	}
	c1 := stepByID(t, batch, "c1")
	if c1.Outcome != adapters.OutcomeNotRun {
		t.Errorf("rejected call's outcome = %s; want not_run", c1.Outcome)
	}
	if len(c1.Flags) == 0 {
		t.Errorf("rm -rf step has no flags; want dangerous_command")
	}
}

// TestBuilderSubagent checks that a subagent's steps join the turn of the
// call that spawned it, under that call's actor, and without a call the
// turn current when it started.
func TestBuilderSubagent(t *testing.T) {
	b := adapters.NewBuilder(adapters.Unit{ID: "s2", ModTime: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, "test")
	t1, t2, t3 := mustTime(t, "2026-01-02T03:04:01Z"), mustTime(t, "2026-01-02T03:04:02Z"), mustTime(t, "2026-01-02T03:04:03Z")
	main, sub, lost := b.Stream("main"), b.Stream("sub"), b.Stream("lost")
	b.NewTurn("p1", "", t1)
	spawn := main.Add(nil, store.Step{ID: "task", Type: store.TypeOther, Decision: adapters.DecisionAuto, Outcome: adapters.OutcomeOK,
		Payload: store.Payload{ToolName: "Task", Raw: adapters.Raw(map[string]any{})}}, t1)
	b.NewTurn("p2", "", t2)
	main.Message(nil, "p2", "user", "next", t2)
	a := b.Subagent("agent-1")
	a.Label = "explorer"
	sub.Message(a, "a1", "task", "look", t3) // after p2 started, but spawned in p1
	a.SpawnedBy(spawn)
	orphan := b.Subagent("agent-2")
	lost.Message(orphan, "o1", "task", "alone", t3)
	_, batch := built(t, b)

	if got := stepByID(t, batch, "a1"); got.TurnID != "turn-p1" || got.ActorID != "agent-1" {
		t.Errorf("spawned subagent step in turn %s as %s; want turn-p1 as agent-1", got.TurnID, got.ActorID)
	}
	if got := stepByID(t, batch, "o1"); got.TurnID != "turn-p2" {
		t.Errorf("unspawned subagent step in turn %s; want turn-p2, current at its time", got.TurnID)
	}
	if len(batch.Actors) != 3 || batch.Actors[1].ParentID != adapters.RootActor || batch.Actors[1].Label != "explorer" {
		t.Errorf("actors = %+v; want root, agent-1 (explorer) and agent-2 under root", batch.Actors)
	}
	if got, want := batch.Session.StartedAt, "2026-01-02T00:00:00Z"; got != want {
		t.Errorf("started_at = %s; want the files' modification time %s (no time observed)", got, want)
	}
}

// TestBuilderSegmentInsideTurn checks the segment rule: a compaction in
// the middle of a turn leaves the turn in the segment it started in, the
// steps after it are in the new segment, a subagent's steps stay in its
// spawning call's segment, and the next turn starts in the new one.
func TestBuilderSegmentInsideTurn(t *testing.T) {
	b := adapters.NewBuilder(adapters.Unit{ID: "s3"}, "test")
	t1, t2, t3, t4 := mustTime(t, "2026-01-02T03:04:01Z"), mustTime(t, "2026-01-02T03:04:02Z"),
		mustTime(t, "2026-01-02T03:04:03Z"), mustTime(t, "2026-01-02T03:04:04Z")
	main, sub := b.Stream("main"), b.Stream("sub")
	b.NewTurn("p1", "", t1)
	main.Message(nil, "p1", "user", "start", t1)
	spawn := main.Add(nil, store.Step{ID: "task", Type: store.TypeOther, Decision: adapters.DecisionAuto, Outcome: adapters.OutcomeOK,
		Payload: store.Payload{ToolName: "Task", Raw: adapters.Raw(map[string]any{})}}, t1)
	b.NewSegment("compaction", t2)
	main.Message(nil, "after", "assistant", "carry on", t3)
	a := b.Subagent("agent-1")
	sub.Message(a, "a1", "task", "look", t3) // after the compaction, spawned before it
	a.SpawnedBy(spawn)
	b.NewTurn("p2", "", t4)
	main.Message(nil, "p2", "user", "next", t4)
	_, batch := built(t, b)

	turnSeg := map[string]int64{}
	for _, tr := range batch.Turns {
		turnSeg[tr.ID] = tr.SegmentIndex
	}
	if turnSeg["turn-p1"] != 0 || turnSeg["turn-p2"] != 1 {
		t.Errorf("turn segments = %v; want turn-p1 in 0 (where it started), turn-p2 in 1", turnSeg)
	}
	for _, c := range []struct {
		id   string
		turn string
		seg  int64
	}{
		{"p1", "turn-p1", 0}, {"task", "turn-p1", 0}, {"after", "turn-p1", 1}, {"a1", "turn-p1", 0}, {"p2", "turn-p2", 1},
	} {
		if got := stepByID(t, batch, c.id); got.TurnID != c.turn || got.SegmentIndex != c.seg {
			t.Errorf("step %s in %s segment %d; want %s segment %d", c.id, got.TurnID, got.SegmentIndex, c.turn, c.seg)
		}
	}
}

// TestFoldersCopiedStayBounded: a folder copied into each of many steps
// (a turn's, which Codex records once) is kept while the session's copies
// stay within twice what was read and 64 KiB; past that a step records
// none. Steps of real size, a line each and a folder of 100 bytes, all
// keep theirs.
func TestFoldersCopiedStayBounded(t *testing.T) {
	for _, c := range []struct {
		name       string
		folder     int // bytes
		lineBytes  int // read for each step
		wantAllCwd bool
	}{
		{"real", 100, 150, true},
		{"real, nothing read", 100, 0, false},
		{"a 64 KiB folder", 64 << 10, 150, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			const steps = 5000
			b := adapters.NewBuilder(adapters.Unit{ID: "s"}, "test")
			s := b.Stream("")
			folder := "/" + strings.Repeat("d", c.folder-1)
			b.Read(len(folder)) // the record that names it
			read := len(folder)
			for i := range steps {
				b.Read(c.lineBytes)
				read += c.lineBytes
				s.Add(nil, store.Step{ID: fmt.Sprint("c", i), Type: store.TypeCommand, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown,
					Payload: store.Payload{Command: adapters.Text("ls"), Cwd: adapters.Text(folder)}}, adapters.Time{})
			}
			b.Header.Agent = store.Agent{Kind: "test", Version: "1"}
			b.Header.Workspace = store.Workspace{Root: "/w"}
			b.Header.Source = "import:test"
			cwdBytes, _, withCwd := adapterstest.Folders(t, b.Finish())
			if limit := 2*read + 64<<10; cwdBytes > limit || withCwd == 0 {
				t.Errorf("%d steps in a %d-byte folder, %d bytes read: %d keep it (%d bytes); want some, at most %d bytes", steps, c.folder, read, withCwd, cwdBytes, limit)
			}
			if c.wantAllCwd && withCwd != steps {
				t.Errorf("%d of %d steps keep their %d-byte folder; want all", withCwd, steps, c.folder)
			}
		})
	}
}

// TestLongIDsStayBounded: a session's, a turn's and a subagent's ids are
// copied into each of their steps, so an id of 64 KiB in a hostile file
// is cut to at most 256 bytes with a hash of the whole: the same for the
// same files, and two ids that differ only past the cut stay two.
func TestLongIDsStayBounded(t *testing.T) {
	long := func(last string) string { return strings.Repeat("i", 64<<10) + last }
	build := func(session, turn, agent string) *store.Batch {
		b := adapters.NewBuilder(adapters.Unit{ID: session}, "test")
		s := b.Stream("")
		b.NewTurn(turn, "", adapters.Time{})
		sub := b.Subagent(agent)
		for i := range 1000 {
			a := sub
			if i%2 == 0 {
				a = nil
			}
			s.Add(a, store.Step{ID: fmt.Sprint("s", i), Type: store.TypeCommand, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown,
				Payload: store.Payload{Command: adapters.Text("ls")}}, adapters.Time{})
		}
		_, batch := built(t, b)
		return batch
	}
	one, again, other := build(long("a"), long("t"), long("x")), build(long("a"), long("t"), long("x")), build(long("b"), long("u"), long("y"))
	for _, st := range one.Steps {
		if n := len(st.SessionID) + len(st.TurnID) + len(st.ActorID); n > 3*(256+len("turn-")) {
			t.Fatalf("step %s: ids of %d bytes; want each at most 256", st.ID, n)
		}
	}
	subStep := func(b *store.Batch) store.Step {
		for _, st := range b.Steps {
			if st.ActorID != adapters.RootActor {
				return st
			}
		}
		t.Fatal("no subagent step")
		return store.Step{}
	}
	s1, s2, s3 := subStep(one), subStep(again), subStep(other)
	if s1.SessionID != s2.SessionID || s1.TurnID != s2.TurnID || s1.ActorID != s2.ActorID {
		t.Errorf("ids of the same files differ: %q %q %q, then %q %q %q", s1.SessionID, s1.TurnID, s1.ActorID, s2.SessionID, s2.TurnID, s2.ActorID)
	}
	if s1.SessionID == s3.SessionID || s1.TurnID == s3.TurnID || s1.ActorID == s3.ActorID {
		t.Errorf("ids that differ past the cut are the same: %q %q %q", s1.SessionID, s1.TurnID, s1.ActorID)
	}
	if short := subStep(build("s1", "p1", "agent-1")); short.SessionID != "s1" || short.TurnID != "turn-p1" || short.ActorID != "agent-1" {
		t.Errorf("short ids = %q %q %q; want them as written", short.SessionID, short.TurnID, short.ActorID)
	}
}

// TestLongModeStaysBounded: a turn without a mode carries the one before,
// so a 64 KiB mode recorded once is cut to 256 bytes, not stored whole by
// each of 1,000 turns after it; a real mode is kept as written.
func TestLongModeStaysBounded(t *testing.T) {
	for _, mode := range []string{"acceptEdits", strings.Repeat("é", 32<<10)} {
		b := adapters.NewBuilder(adapters.Unit{ID: "s"}, "test")
		s := b.Stream("")
		for i := range 1000 {
			m := ""
			if i == 0 {
				m = mode
			}
			b.NewTurn(fmt.Sprint("p", i), m, adapters.Time{})
			s.Message(nil, fmt.Sprint("p", i), "user", "go on", adapters.Time{})
		}
		_, batch := built(t, b)
		want := mode
		if len(mode) > 256 {
			want = strings.Repeat("é", 128)
		}
		for _, turn := range batch.Turns {
			if turn.Mode != want {
				t.Fatalf("turn %s: mode of %d bytes; want %.20q… of %d", turn.ID, len(turn.Mode), want, len(want))
			}
		}
	}
}
