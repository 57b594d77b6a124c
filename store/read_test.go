package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// sessionAt is newBatch(sid) of agent kind started at start, with cost
// (nil: no metrics).
func sessionAt(sid, kind, start string, cost any) obj {
	b := newBatch(sid)
	set(b, "session.agent.kind", kind)
	set(b, "session.started_at", start)
	if cost == nil {
		del(b, "session.metrics")
	} else {
		set(b, "session.metrics.cost_usd", cost)
	}
	return b
}

func listIDs(l store.SessionList) []string {
	ids := []string{}
	for _, o := range l.Sessions {
		ids = append(ids, o.ID)
	}
	return ids
}

func TestList(t *testing.T) {
	s := mustOpen(t)
	// Sorted as text the start times would read tz, newest, new, old; in
	// time they are newest (10:00:00.5Z), new (10:00Z), tz (09:30Z), old.
	mustApply(t, s, sessionAt("old", "testagent", "2026-01-01T10:00:00Z", 1.25))
	mustApply(t, s, sessionAt("tz", "otheragent", "2026-01-02T11:30:00+02:00", nil))
	mustApply(t, s, sessionAt("new", "testagent", "2026-01-02T05:00:00-05:00", 0.5))
	mustApply(t, s, sessionAt("newest", "testagent", "2026-01-02T10:00:00.5Z", 2))

	tests := []struct {
		agent string
		ids   []string
		total store.Total
	}{
		{"", []string{"newest", "new", "tz", "old"}, store.Total{Sessions: 4, CostUSD: 3.75, CostNotRecorded: 1}},
		{"testagent", []string{"newest", "new", "old"}, store.Total{Sessions: 3, CostUSD: 3.75}},
		{"otheragent", []string{"tz"}, store.Total{Sessions: 1, CostNotRecorded: 1}},
		{"nobody", []string{}, store.Total{}},
	}
	for _, tc := range tests {
		t.Run("agent="+tc.agent, func(t *testing.T) {
			l := mustList(t, s, tc.agent)
			if got := listIDs(l); !reflect.DeepEqual(got, tc.ids) {
				t.Errorf("List(%q) = %v; want %v", tc.agent, got, tc.ids)
			}
			if l.Total != tc.total {
				t.Errorf("List(%q).Total = %+v; want %+v", tc.agent, l.Total, tc.total)
			}
			// The agent chips list every kind, whatever the filter.
			wantAgents := []store.AgentCount{{Kind: "otheragent", Sessions: 1}, {Kind: "testagent", Sessions: 3}}
			if !reflect.DeepEqual(l.Agents, wantAgents) {
				t.Errorf("List(%q).Agents = %+v; want %+v", tc.agent, l.Agents, wantAgents)
			}
			for _, o := range l.Sessions {
				if o.Summary.Steps != 5 || o.Summary.Turns != 1 || o.Summary.Title != "Fix the failing test" {
					t.Errorf("List(%q) row %s summary = %+v; want 5 steps, 1 turn and the prompt as title", tc.agent, o.ID, o.Summary)
				}
			}
		})
	}

	t.Run("rows match details", func(t *testing.T) {
		for _, o := range mustList(t, s, "").Sessions {
			if d := mustDetail(t, s, o.ID); !reflect.DeepEqual(d.SessionOverview, o) {
				t.Errorf("List row %s =\n%+v\nDetail =\n%+v", o.ID, o, d.SessionOverview)
			}
		}
	})
}

func TestListEmpty(t *testing.T) {
	l := mustList(t, mustOpen(t), "")
	if got, want := string(mustJSON(t, l)), `{"sessions":[],"agents":[],"verdicts":[],"unreviewed":0,"total":{"sessions":0,"cost_usd":0,"cost_not_recorded":0}}`; got != want {
		t.Errorf("List() = %s; want %s", got, want)
	}
}

func TestListSameStart(t *testing.T) {
	s := mustOpen(t)
	// The same instant written in two zones: a tie, broken by id.
	mustApply(t, s, sessionAt("b", "testagent", "2026-01-02T12:00:00+02:00", 1))
	mustApply(t, s, sessionAt("a", "testagent", "2026-01-02T10:00:00Z", 1))
	mustApply(t, s, sessionAt("c", "testagent", "2026-01-02T10:00:00.000000001Z", 1))
	if got, want := listIDs(mustList(t, s, "")), []string{"c", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %v; want %v", got, want)
	}
}

// A later push that moves started_at moves the session in the list.
func TestListStartRewritten(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, sessionAt("a", "testagent", "2026-01-01T10:00:00Z", 1))
	mustApply(t, s, sessionAt("b", "testagent", "2026-01-02T10:00:00Z", 1))
	b := stepsBatch("a")
	set(b, "session.started_at", "2026-01-03T10:00:00+09:00")
	mustApply(t, s, b)
	if got, want := listIDs(mustList(t, s, "")), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %v; want %v", got, want)
	}
}

func TestDetailSummary(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	b["segments"] = arr{segment(0), segment(1)}
	b["turns"] = append(b["turns"].(arr), turn("a", "t2", 2))
	reply := step("a", 6, "message")
	set(reply, "payload", obj{"role": "assistant", "text": "Done."})
	refOnly := step("a", 7, "command")
	refOnly["content_status"], refOnly["outcome"] = "reference_only", "failed"
	refOnly["payload"] = obj{"output_ref": "otel:1"}
	refOnly["flags"] = arr{obj{"kind": "failed", "severity": "info", "reason": "x"}, obj{"kind": "secret_in_output", "severity": "danger", "reason": "y"}}
	thinking := step("a", 8, "message")
	thinking["turn_id"] = "a-t2"
	set(thinking, "payload", obj{"role": "thinking", "text": "hmm"})
	thinking["at"] = "2026-01-02T10:05:00Z" // the last step's time is the last activity
	b["steps"] = append(b["steps"].(arr), reply, refOnly, thinking)
	mustApply(t, s, b)

	want := store.Summary{
		Title: "Fix the failing test",
		Steps: 8,
		StepsByType: map[string]int{
			"command": 2, "edit": 1, "read": 1, "message": 3, "other": 1,
		},
		Failed:        2, // the edit and the reference-only command
		ReferenceOnly: 1,
		Flags:         3,
		Turns:         2,
		Segments:      2,
		LastStepAt:    "2026-01-02T10:05:00Z",
	}
	if got := mustDetail(t, s, "a").Summary; !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Summary = %+v; want %+v", got, want)
	}
	if got := mustList(t, s, "").Sessions[0].Summary; !reflect.DeepEqual(got, want) {
		t.Errorf("List().Sessions[0].Summary = %+v; want %+v", got, want)
	}

	t.Run("no steps", func(t *testing.T) {
		mustApply(t, s, obj{"schema_version": "1.2", "session": header("empty")})
		want := store.Summary{StepsByType: map[string]int{"command": 0, "edit": 0, "read": 0, "message": 0, "other": 0}}
		if got := mustDetail(t, s, "empty").Summary; !reflect.DeepEqual(got, want) {
			t.Errorf("Detail(empty).Summary = %+v; want %+v", got, want)
		}
	})
}

func TestDetailTitle(t *testing.T) {
	msg := func(seq int, role string, text any) obj {
		st := step("a", seq, "message")
		p := obj{"role": role}
		if text != nil {
			p["text"] = text
		}
		st["payload"] = p
		return st
	}
	tests := []struct {
		name   string
		pushes [][]obj // steps of each push after newBatch without steps
		want   string
	}{
		{"first line", [][]obj{{msg(1, "user", "Fix the bug\nin parser.go\n")}}, "Fix the bug"},
		{"surrounding space", [][]obj{{msg(1, "user", "\n\n   Fix the bug  \r\nmore")}}, "Fix the bug"},
		{"first by seq, not by push", [][]obj{{msg(5, "user", "second prompt")}, {msg(2, "user", "first prompt")}}, "first prompt"},
		{"assistant and thinking do not count", [][]obj{{msg(1, "assistant", "Hello"), msg(2, "thinking", "hm"), msg(3, "user", "the prompt")}}, "the prompt"},
		{"no user prompt", [][]obj{{msg(1, "assistant", "Hello")}}, ""},
		{"long prompt", [][]obj{{msg(1, "user", strings.Repeat("x", 5000))}}, strings.Repeat("x", 1000)},
		{"characters, not bytes", [][]obj{{msg(1, "user", strings.Repeat("é", 5000))}}, strings.Repeat("é", 1000)},
		{"first prompt without text", [][]obj{{msg(1, "user", nil), msg(2, "user", "later")}}, ""},
		{"empty first prompt", [][]obj{{msg(1, "user", ""), msg(2, "user", "later")}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			b := newBatch("a")
			delete(b, "steps")
			mustApply(t, s, b)
			for _, steps := range tc.pushes {
				mustApply(t, s, stepsBatch("a", steps...))
			}
			if got := mustDetail(t, s, "a").Summary.Title; got != tc.want {
				t.Errorf("Detail(a).Summary.Title = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestTitleReadsOnlyThePromptsHead: the list and a session's header take
// the title from the first 1,000 characters of the first prompt without
// loading the rest, however long it is. Every connection is made to fail
// on a value over 1 MB, so a read that loads the 8 MB prompt fails.
func TestTitleReadsOnlyThePromptsHead(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	b["steps"].(arr)[0].(obj)["payload"] = obj{"role": "user", "text": "Fix the bug\n" + strings.Repeat("x", 8<<20)}
	mustApply(t, s, b)
	ctx := context.Background()
	if err := store.LimitLength(ctx, s, 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Detail(ctx, "a", store.DetailQuery{}); err == nil {
		t.Fatal("Detail(a) of the whole session = nil error; want the limit to refuse the long prompt, or this test means nothing")
	}
	l, err := s.List(ctx, store.ListQuery{})
	if err != nil || len(l.Sessions) != 1 || l.Sessions[0].Summary.Title != "Fix the bug" {
		t.Fatalf("List = %+v, %v; want session a titled %q", l.Sessions, err, "Fix the bug")
	}
	d, err := s.Detail(ctx, "a", store.DetailQuery{NoSteps: true})
	if err != nil || d.Summary.Title != "Fix the bug" {
		t.Fatalf("Detail(a, no steps) title = %q, %v; want %q", d.Summary.Title, err, "Fix the bug")
	}
}

func TestDetailTurnStepIDs(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	t1, t2, t3 := turn("a", "t1", 1), turn("a", "t2", 2), turn("a", "t3", 3)
	t1["step_ids"] = arr{"bogus", "a-s5"} // ignored: the store rebuilds it
	b["turns"] = arr{t3, t2, t1}
	in := func(seq int, tid string) obj { st := step("a", seq, "read"); st["turn_id"] = tid; return st }
	b["steps"] = arr{in(5, "a-t2"), in(3, "a-t1"), in(1, "a-t1")}
	mustApply(t, s, b)
	mustApply(t, s, stepsBatch("a", in(4, "a-t1"), in(2, "a-t2")))
	// A step moved to another turn leaves the first one.
	mustApply(t, s, stepsBatch("a", in(6, "a-t1")))
	mustApply(t, s, stepsBatch("a", in(6, "a-t2")))

	d := mustDetail(t, s, "a")
	got := map[string][]string{}
	var order []string
	for _, tr := range d.Turns {
		got[tr.ID] = tr.StepIDs
		order = append(order, tr.ID)
	}
	want := map[string][]string{
		"a-t1": {"a-s1", "a-s3", "a-s4"},
		"a-t2": {"a-s2", "a-s5", "a-s6"},
		"a-t3": {},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a) turn step_ids = %v; want %v", got, want)
	}
	if wantOrder := []string{"a-t1", "a-t2", "a-t3"}; !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("Detail(a) turn order = %v; want %v", order, wantOrder)
	}
	var seqs []int64
	for _, st := range d.Steps {
		seqs = append(seqs, st.Seq)
	}
	if !slices.IsSorted(seqs) || len(seqs) != 6 {
		t.Errorf("Detail(a) step seqs = %v; want 1..6 in order", seqs)
	}
	if !strings.Contains(string(mustJSON(t, d.Turns)), `"step_ids":[]`) {
		t.Errorf("Detail(a).Turns JSON = %s; want an empty step_ids array, not null", mustJSON(t, d.Turns))
	}
}

// Every field of every record reads back as it was pushed, including empty
// content strings and the open shapes.
func TestDetailReadsBackAsPushed(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	set(b, "session.ended_at", tEnd)
	b["segments"] = arr{
		obj{"index": 0, "start_reason": "start", "started_at": tStart, "ended_at": "2026-01-02T10:30:00+01:00", "source_files": arr{"/log/1.jsonl", "/log/2.jsonl"}},
		obj{"index": 3, "start_reason": "resume", "started_at": "2026-01-02T10:40:00.25Z", "source_files": arr{}},
	}
	b["actors"] = arr{
		obj{"id": "a-sub2", "parent_id": "a-sub", "type": "subagent"},
		obj{"id": "a-sub", "parent_id": "a-root", "type": "subagent", "label": "researcher"},
		rootActor("a"),
	}
	t2 := turn("a", "t2", 2)
	t2["prompt_id"], t2["segment_index"], t2["actor_id"] = "prompt-7", 3, "a-sub"
	delete(t2, "mode")
	b["turns"] = arr{turn("a", "t1", 1), t2}

	cmd := step("a", 6, "command")
	cmd["payload"] = obj{"command": "", "stdout": "", "stderr": "", "cwd": "", "output_ref": "", "exit_code": -9}
	cmd["error"] = obj{"type": "killed", "message": ""}
	cmd["channels"] = arr{"hook", "otel"}
	cmd["decision"], cmd["outcome"] = "rejected", "failed"
	cmd["flags"] = arr{obj{"kind": "rejected", "severity": "info", "reason": "user said no"}, obj{"kind": "dangerous_command", "severity": "danger", "reason": "rm -rf"}}
	edit := step("a", 7, "edit")
	edit["turn_id"], edit["actor_id"], edit["segment_index"] = "a-t2", "a-sub", 3
	edit["payload"] = obj{
		"path":       "/tmp/ws/new.go",
		"old_string": "",
		"new_string": "package main\n\n<tag> & \"quotes\" \u2028 ünïcode 🙂\n",
		"structured_patch": arr{obj{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 3,
			"lines": arr{"+package main", "+", "+<tag>"}}},
		"is_full_write":         true,
		"landed_in_final_state": false,
	}
	read := step("a", 8, "read")
	read["payload"] = obj{"path": "/tmp/ws/README.md"}
	read["channels"] = arr{}
	msg := step("a", 9, "message")
	msg["content_status"] = "reference_only"
	msg["payload"] = obj{"role": "assistant", "text": "", "text_ref": "transcript:42"}
	other := step("a", 10, "other")
	other["payload"] = obj{"tool_name": "mcp__db__query", "raw": obj{
		"query": "SELECT 1", "n": json.Number("1.50"), "big": json.Number("1e3"), "nested": obj{"z": arr{nil, true, "<b>"}, "a": obj{}},
	}}
	b["steps"] = append(b["steps"].(arr), cmd, edit, read, msg, other)
	// Pushed out of seq order.
	steps := b["steps"].(arr)
	slices.Reverse(steps)

	want := mustParse(t, b)
	mustApply(t, s, b)
	d := mustDetail(t, s, "a")

	wantSteps := slices.Clone(want.Steps)
	slices.SortFunc(wantSteps, func(x, y store.Step) int { return int(x.Seq - y.Seq) })
	if len(d.Steps) != len(wantSteps) {
		t.Fatalf("Detail(a) has %d steps; want %d", len(d.Steps), len(wantSteps))
	}
	for i := range wantSteps {
		if !reflect.DeepEqual(d.Steps[i], wantSteps[i]) {
			t.Errorf("Detail(a).Steps[%d] =\n%s\nwant\n%s", i, mustJSON(t, d.Steps[i]), mustJSON(t, wantSteps[i]))
		}
	}
	// The JSON the routes send is the JSON that was pushed for each step.
	if got, want := string(mustJSON(t, d.Steps)), string(mustJSON(t, wantSteps)); got != want {
		t.Errorf("Detail(a).Steps JSON =\n%s\nwant\n%s", got, want)
	}
	if !reflect.DeepEqual(d.Segments, want.Segments) {
		t.Errorf("Detail(a).Segments = %+v; want %+v", d.Segments, want.Segments)
	}
	wantActors := []store.Actor{want.Actors[2], want.Actors[1], want.Actors[0]} // root first, then by id
	if !reflect.DeepEqual(d.Actors, wantActors) {
		t.Errorf("Detail(a).Actors = %+v; want %+v", d.Actors, wantActors)
	}
	for i := range d.Turns {
		d.Turns[i].StepIDs = nil
	}
	if !reflect.DeepEqual(d.Turns, want.Turns) {
		t.Errorf("Detail(a).Turns = %+v; want %+v", d.Turns, want.Turns)
	}
	wantSession := store.Session{ID: "a", Agent: want.Session.Agent, Workspace: want.Session.Workspace,
		StartedAt: tStart, EndedAt: tEnd, Source: "push:testagent", Metrics: want.Session.Metrics,
		OwnerID: store.OwnerLocal, CapturedOn: d.CapturedOn, UpdatedAt: d.UpdatedAt}
	if !reflect.DeepEqual(d.Session, wantSession) {
		t.Errorf("Detail(a).Session = %+v; want %+v", d.Session, wantSession)
	}
}

func TestDetailNotFound(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("gone"))
	mustDelete(t, s, "gone")
	for _, id := range []string{"nope", "gone", "", "A", "a "} {
		t.Run(id, func(t *testing.T) {
			_, err := s.Detail(context.Background(), id, store.DetailQuery{})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Detail(%q) = %v; want ErrNotFound", id, err)
			}
		})
	}
}

func TestReport(t *testing.T) {
	edit := func(seq int, path string, full bool, outcome string) obj {
		st := step("a", seq, "edit")
		delete(st, "error")
		st["outcome"] = outcome
		st["payload"] = obj{"path": path, "new_string": "x", "is_full_write": full}
		return st
	}
	read := func(seq int, path, outcome string) obj {
		st := step("a", seq, "read")
		st["outcome"] = outcome
		st["payload"] = obj{"path": path}
		return st
	}
	command := func(seq int, payload obj, outcome, status string) obj {
		st := step("a", seq, "command")
		st["outcome"], st["content_status"], st["payload"] = outcome, status, payload
		return st
	}
	tool := func(seq int, name, outcome string) obj {
		st := step("a", seq, "other")
		st["outcome"], st["payload"] = outcome, obj{"tool_name": name, "raw": obj{"input": obj{}}}
		return st
	}
	steps := []obj{
		command(0, obj{"command": "make", "exit_code": 2}, "failed", "inline"), // seq 0, a step like any other
		edit(1, "/a.go", true, "ok"),     // created: not touched before
		edit(2, "/a.go", false, "ok"),    // edited
		edit(3, "/a.go", true, "ok"),     // a full write of a touched path: edited
		read(4, "/b.go", "ok"),           // read
		edit(5, "/b.go", true, "ok"),     // touched by the read: edited
		read(6, "/c.go", "failed"),       // read, failed
		edit(7, "/d.go", true, "failed"), // created, failed
		edit(8, "/a.go", false, "failed"),
		command(9, obj{"command": "go test ./...", "exit_code": 0, "stdout": "ok"}, "ok", "inline"),
		command(10, obj{"command": "go test ./...", "exit_code": 1}, "failed", "inline"), // its first failure
		command(11, obj{"command": "go test ./...", "exit_code": 1}, "failed", "inline"),
		command(12, obj{"command": "go test ./..."}, "ok", "inline"),
		command(13, obj{"output_ref": "otel:9"}, "ok", "reference_only"),
		command(14, obj{"command": "make", "output_ref": "file:/tmp/out", "exit_code": 2}, "failed", "inline"),
		command(15, obj{"command": "make", "exit_code": -1}, "ok", "inline"),
		command(16, obj{"command": "make", "exit_code": 2}, "ok", "inline"),
		step("a", 17, "message"),
		step("a", 18, "other"), // WebFetch
		tool(19, "TodoWrite", "ok"),
		tool(20, "Task", "failed"),
		tool(21, "mcp__github__get_issue", "ok"),
		tool(22, "Task", "ok"),
		tool(23, "TodoWrite", "ok"),
	}
	// From seq 14 on, a second turn. Every command keeps the flag step gives it.
	for _, st := range steps[14:] {
		st["turn_id"] = "a-t2"
	}
	s := mustOpen(t)
	b := newBatch("a")
	delete(b, "steps")
	b["turns"] = arr{turn("a", "t1", 1), turn("a", "t2", 2)}
	mustApply(t, s, b)
	// Pushed in reverse: the report follows seq order, not push order.
	slices.Reverse(steps)
	mustApply(t, s, stepsBatch("a", steps...))

	want := store.Report{
		Files: []store.FileTouched{
			{Path: "/a.go", Created: 1, Edited: 3, Failed: 1},
			{Path: "/b.go", Edited: 1, Read: 1},
			{Path: "/c.go", Read: 1, Failed: 1},
			{Path: "/d.go", Created: 1, Failed: 1},
		},
		Commands: []store.CommandRun{
			{Command: "make", FirstSeq: 0, FirstFailedSeq: new(int64(0)), Runs: 4, Failed: 2, ExitCodes: []int64{-1, 2}, OutputNotInline: true},
			{Command: "go test ./...", FirstSeq: 9, FirstFailedSeq: new(int64(10)), Runs: 4, Failed: 2, ExitCodes: []int64{0, 1}},
			{Command: "", FirstSeq: 13, Runs: 1, ExitCodes: []int64{}, OutputNotInline: true},
		},
		// By calls, most first, then by name.
		Tools: []store.ToolUse{
			{Tool: "Task", Calls: 2, Failed: 1},
			{Tool: "TodoWrite", Calls: 2},
			{Tool: "WebFetch", Calls: 1},
			{Tool: "mcp__github__get_issue", Calls: 1},
		},
		// Failed: 0, 6, 7, 8, 10 and 11, then 14 and 20; flagged: the
		// commands, 0 and 9 to 13, then 14 to 16.
		Turns: []store.TurnProblems{
			{TurnID: "a-t1", Failed: 6, FirstFailedSeq: new(int64(0)), Flags: 6, FirstFlaggedSeq: new(int64(0))},
			{TurnID: "a-t2", Failed: 2, FirstFailedSeq: new(int64(14)), Flags: 3, FirstFlaggedSeq: new(int64(14))},
		},
	}
	d := mustDetail(t, s, "a")
	if !reflect.DeepEqual(d.Report, want) {
		t.Errorf("Detail(a).Report =\n%+v\nwant\n%+v", d.Report, want)
	}
	// A read of the last turn: the problems of that turn alone, the rest
	// of the report the whole session's.
	last, err := s.Detail(context.Background(), "a", store.DetailQuery{Turns: 1})
	if err != nil {
		t.Fatal(err)
	}
	want.Turns = want.Turns[1:]
	if !reflect.DeepEqual(last.Report, want) {
		t.Errorf("Detail(a, the last turn).Report =\n%+v\nwant\n%+v", last.Report, want)
	}
}

func TestReportEmpty(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, obj{"schema_version": "1.2", "session": header("a")})
	got := string(mustJSON(t, mustDetail(t, s, "a").Report))
	if want := `{"files":[],"commands":[],"tools":[],"turns":[]}`; got != want {
		t.Errorf("Detail(a).Report = %s; want %s", got, want)
	}
}

// Start times outside the range of int64 nanoseconds (before 1678, after
// 2262), such as the zero time of an adapter that forgot to set it, sort
// after (or before) every start in range; among themselves they tie, and
// the tie goes by id.
func TestListFarDates(t *testing.T) {
	s := mustOpen(t)
	for sid, start := range map[string]string{
		"past-a":  "1677-01-01T00:00:00Z",
		"past-b":  "0001-01-01T00:00:00Z",
		"past-c":  "1000-06-01T00:00:00Z",
		"in-1680": "1680-01-01T00:00:00Z",
		"in-2026": "2026-01-02T10:00:00Z",
		"in-2260": "2260-01-01T00:00:00Z",
		"late-a":  "9999-12-31T23:59:59+14:00",
		"late-b":  "2300-01-01T00:00:00Z",
	} {
		mustApply(t, s, sessionAt(sid, "testagent", start, 1))
	}
	want := []string{"late-a", "late-b", "in-2260", "in-2026", "in-1680", "past-a", "past-b", "past-c"}
	if got := listIDs(mustList(t, s, "")); !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %v; want %v", got, want)
	}
}
