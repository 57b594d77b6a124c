package cline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

func file(t testing.TB, path string) *adapters.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &adapters.File{Path: path, Body: bytes.NewReader(b)}
}

func mustValid(t testing.TB, s *adapters.Session) {
	t.Helper()
	if len(s.Batches) == 0 {
		t.Fatalf("session %s has no batches", s.ID)
	}
	for i, b := range s.Batches {
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ParseBatch(body); err != nil {
			var inv *store.InvalidError
			errors.As(err, &inv)
			t.Fatalf("session %s batch %d: ParseBatch = %v %+v", s.ID, i, err, inv)
		}
	}
}

type all struct {
	header store.SessionHeader
	actors []store.Actor
	turns  []store.Turn
	steps  []store.Step
	segs   []store.Segment
}

func gather(s *adapters.Session) all {
	var a all
	for _, b := range s.Batches {
		a.header = b.Session
		a.actors = append(a.actors, b.Actors...)
		a.turns = append(a.turns, b.Turns...)
		a.steps = append(a.steps, b.Steps...)
		a.segs = append(a.segs, b.Segments...)
	}
	return a
}

func (a all) step(t testing.TB, id string) store.Step {
	t.Helper()
	for _, s := range a.steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %s", id)
	return store.Step{}
}

func (a all) byType() string {
	n := map[string]int{}
	for _, s := range a.steps {
		n[s.Type]++
	}
	var parts []string
	for _, typ := range store.StepTypes {
		parts = append(parts, fmt.Sprintf("%s=%d", typ, n[typ]))
	}
	return strings.Join(parts, " ")
}

func (a all) modes() string {
	var r []string
	for _, t := range a.turns {
		r = append(r, t.Mode)
	}
	return strings.Join(r, ",")
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestSampleTask reads the real Cline CLI task (native tool calls, results
// as "[tool for 'x'] Result:" text, no ui_messages.json).
func TestSampleTask(t *testing.T) {
	s := ParseTask(Task{
		ID:         "1770913324842",
		APIHistory: file(t, "testdata/agentlogs_api_conversation_history.excerpt.json"),
		Metadata:   file(t, "testdata/agentlogs_task_metadata.json"),
	})
	mustValid(t, s)
	if len(s.Problems) > 0 {
		t.Errorf("problems = %v", s.Problems)
	}
	a := gather(s)
	if got, want := a.byType(), "command=0 edit=0 read=3 message=3 other=0"; got != want {
		t.Errorf("steps by type = %s; want %s", got, want)
	}
	if len(a.turns) != 1 || a.modes() != "act" {
		t.Errorf("turns = %d, modes %q; want 1 in act mode", len(a.turns), a.modes())
	}
	h := a.header
	if h.Agent != (store.Agent{Kind: "cline", Version: "3.58.0"}) || h.Workspace.Root != "/Users/bee/dev/agentlogs" ||
		h.StartedAt != "2026-02-12T16:22:04.842Z" || h.Source != "import:cline" {
		t.Errorf("header = %+v", h)
	}
	if h.Metrics != nil {
		t.Errorf("metrics = %+v; want none (the history reports tokens, not cost)", h.Metrics)
	}
	want := adapters.Usage{APIRequests: 2, Input: 38, Output: 659, CacheRead: 24191}
	if s.Usage == nil || *s.Usage != want {
		t.Errorf("usage = %+v; want %+v", s.Usage, want)
	}
	read := a.step(t, "toolu_01EhCWNGGmZr4dvkP22yASsD")
	if read.Type != "read" || read.Payload.Path != "/Users/bee/dev/agentlogs/package.json" || read.Decision != "accepted" || read.Outcome != "ok" {
		t.Errorf("read = %s %s %s %s", read.Type, read.Payload.Path, read.Decision, read.Outcome)
	}
	prompt := a.step(t, "m0")
	if prompt.Payload.Role != "user" || deref(prompt.Payload.Text) != "tell me abouth this repo" {
		t.Errorf("prompt = %s %q", prompt.Payload.Role, deref(prompt.Payload.Text))
	}
	done := a.step(t, "toolu_01Ng6dknos9gMuy4N8iXtYX2")
	if done.Type != "message" || done.Payload.Role != "assistant" || !strings.HasPrefix(deref(done.Payload.Text), "**AgentLogs** is an open-source") {
		t.Errorf("attempt_completion = %s %s", done.Type, done.Payload.Role)
	}
	for _, st := range a.steps {
		if len(st.Channels) != 1 || st.Channels[0] != "task_files" || st.ContentStatus != "inline" {
			t.Errorf("step %s channels %v content %s", st.ID, st.Channels, st.ContentStatus)
		}
	}
}

// TestHandmadeTask reads a VS Code task with XML tool calls and
// ui_messages.json (hand-made, see testdata/handmade/README.md).
func TestHandmadeTask(t *testing.T) {
	s := adapterstest.ParseRoots(t, Agent, "testdata/handmade/tasks")["1769000000000"]
	mustValid(t, s)
	a := gather(s)
	if got, want := a.byType(), "command=2 edit=2 read=1 message=8 other=0"; got != want {
		t.Errorf("steps by type = %s; want %s", got, want)
	}
	if got := a.modes(); got != "plan,act,act" {
		t.Errorf("turn modes = %s; want plan,act,act", got)
	}
	m := a.header.Metrics
	if m == nil || math.Abs(m.CostUSD-0.09) > 1e-9 || m.APIRequests != 8 ||
		m.Tokens != (store.Tokens{Input: 800, Output: 80, CacheRead: 400, CacheCreation: 40}) {
		t.Errorf("metrics = %+v; want the sum of the 8 requests' reported cost 0.09 and tokens", m)
	}
	if a.header.Agent.Version != "3.30.0" || a.header.StartedAt != "2026-01-21T12:53:20Z" {
		t.Errorf("header = %+v", a.header)
	}
	denied := a.step(t, "m9.t0")
	if denied.Type != "command" || denied.Decision != "rejected" || denied.Outcome != "not_run" || denied.Error.Type != "rejected" {
		t.Errorf("denied command = %s %s %s %+v", denied.Type, denied.Decision, denied.Outcome, denied.Error)
	}
	failed := a.step(t, "m11.t0")
	if p := failed.Payload; failed.Outcome != "failed" || p.ExitCode == nil || *p.ExitCode != 1 || deref(p.Stdout) != "hello" ||
		deref(p.Cwd) != "/home/dev/hello" || failed.Error.Type != "exit_code" {
		t.Errorf("failed command = %s exit %v stdout %q cwd %q error %+v", failed.Outcome, p.ExitCode, deref(p.Stdout), deref(p.Cwd), failed.Error)
	}
	write := a.step(t, "m5.t0")
	if p := write.Payload; write.Type != "edit" || !*p.IsFullWrite || deref(p.NewString) != "echo hi" || p.Path != "/home/dev/hello/hello.sh" {
		t.Errorf("write_to_file = %s full %v new %q path %s", write.Type, *p.IsFullWrite, deref(p.NewString), p.Path)
	}
	edit := a.step(t, "m7.t0")
	if p := edit.Payload; *p.IsFullWrite || deref(p.OldString) != "echo hi" || deref(p.NewString) != "echo hello" || len(p.StructuredPatch) == 0 {
		t.Errorf("replace_in_file = full %v old %q new %q patch %s", *p.IsFullWrite, deref(p.OldString), deref(p.NewString), p.StructuredPatch)
	}
	if th := a.step(t, "m1.thinking"); th.Payload.Role != "thinking" || deref(th.Payload.Text) != "Read the README first." {
		t.Errorf("thinking = %s %q", th.Payload.Role, deref(th.Payload.Text))
	}
	feedback := a.step(t, "m14")
	if feedback.Payload.Role != "user" || deref(feedback.Payload.Text) != "also print the date" || feedback.TurnID != "turn-m14" {
		t.Errorf("feedback = %s %q in %s; want a user prompt opening turn 3", feedback.Payload.Role, deref(feedback.Payload.Text), feedback.TurnID)
	}
	if a.step(t, "m11.t0").At != "2026-01-21T12:58:21Z" {
		t.Errorf("a reply's step is at %s; want the time of its API request", a.step(t, "m11.t0").At)
	}
}

// TestHandmadeSDKSession reads a Cline 4 session folder.
func TestHandmadeSDKSession(t *testing.T) {
	s := adapterstest.ParseRoots(t, Agent, "testdata/handmade/sessions")["1769100000000_ab12c"]
	mustValid(t, s)
	a := gather(s)
	if got, want := a.byType(), "command=1 edit=0 read=1 message=6 other=0"; got != want {
		t.Errorf("steps by type = %s; want %s", got, want)
	}
	h := a.header
	if h.Workspace.Root != "/home/dev/app" || h.StartedAt != "2026-01-22T16:40:00.000Z" || h.EndedAt != "2026-01-22T16:45:00.000Z" {
		t.Errorf("header = %+v", h)
	}
	if m := h.Metrics; m == nil || m.CostUSD != 0.75 || m.APIRequests != 2 || m.Tokens != (store.Tokens{Input: 11, Output: 22, CacheRead: 33, CacheCreation: 44}) {
		t.Errorf("metrics = %+v", m)
	}
	if len(a.actors) != 2 || a.actors[1] != (store.Actor{ID: "agent-1769100000000_ab12c__helper", ParentID: "root", Type: "subagent", Label: "subagent"}) {
		t.Errorf("actors = %+v", a.actors)
	}
	var order []string
	for _, st := range a.steps {
		order = append(order, st.ID)
	}
	if got := strings.Join(order, " "); got != "msg_u1 msg_a1 call_1 msg_a2 s1 call_2 s4 msg_u3" {
		t.Errorf("steps in order = %s", got)
	}
	if st := a.step(t, "call_2"); st.ActorID != "agent-1769100000000_ab12c__helper" || st.TurnID != "turn-msg_u1" || st.Payload.Path != "/home/dev/app/main.go" {
		t.Errorf("subagent read = %s %s %s", st.ActorID, st.TurnID, st.Payload.Path)
	}
	if st := a.step(t, "call_1"); st.Outcome != "failed" || st.Error.Type != "tool_error" {
		t.Errorf("failed tool_result = %s %+v", st.Outcome, st.Error)
	}
	if st := a.step(t, "msg_u1"); deref(st.Payload.Text) != "fix the failing test" {
		t.Errorf("prompt = %q; want <user_input> unwrapped", deref(st.Payload.Text))
	}
}

func TestDiscover(t *testing.T) {
	units, problems := Discover([]string{"testdata/handmade", "testdata/handmade/tasks/1769000000000/ui_messages.json"})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var got []string
	for _, u := range units {
		var names []string
		for _, p := range u.Paths {
			names = append(names, filepath.Base(p))
		}
		got = append(got, u.ID+":"+strings.Join(names, ","))
	}
	want := "[1769100000000_ab12c:1769100000000_ab12c.json,1769100000000_ab12c.messages.json,1769100000000_ab12c__helper.messages.json " +
		"1769000000000:api_conversation_history.json,ui_messages.json,task_metadata.json]"
	if fmt.Sprint(got) != want {
		t.Errorf("Discover = %v; want %s", got, want)
	}
	if _, problems := Discover([]string{"testdata/nope"}); len(problems) != 1 {
		t.Errorf("a missing folder gave %v; want one problem", problems)
	}
}

func TestBrokenTaskFile(t *testing.T) {
	broken := "[\n  {\"role\": \"user\", \"content\": \"<task>x</task>\"},\n  {\"role\": \"assistant\" \"content\": []}\n]"
	s := ParseTask(Task{
		ID:         "1769000000000",
		APIHistory: &adapters.File{Path: "/t/api_conversation_history.json", Body: strings.NewReader(broken)},
		UIMessages: file(t, "testdata/handmade/tasks/1769000000000/ui_messages.json"),
	})
	if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0].String(), "/t/api_conversation_history.json:3: invalid JSON") {
		t.Errorf("problems = %v; want the line of the error", s.Problems)
	}
	if len(s.Batches) != 0 {
		t.Errorf("a task without a readable history gave %d batches", len(s.Batches))
	}
}

// TestHandmadeApplies writes both hand-made sessions and the sample to a
// store, twice: the second time changes nothing.
func TestHandmadeApplies(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 2 {
		for _, s := range adapterstest.ParseRoots(t, Agent, "testdata/handmade") {
			for _, b := range s.Batches {
				res, err := st.Apply(ctx, b)
				if err != nil {
					t.Fatalf("Apply(%s) = %v", s.ID, err)
				}
				if !res.Created && res.Changed {
					t.Errorf("re-applying %s changed it", s.ID)
				}
			}
		}
	}
}

// TestLongFolderOfManyCalls derives a variant of the real task whose
// working folder is 64 KiB long and whose first reply makes 3,000 more
// read_file calls of relative paths and 3,000 execute_command calls:
// each call is still a step, but the folder Cline wrote once is joined to
// the paths and copied into the commands only while the copies stay
// within twice the files and 64 KiB (adapters.Builder.Folder).
func TestLongFolderOfManyCalls(t *testing.T) {
	const calls = 3000
	dir := filepath.Join("testdata", "tasks", "1770913324799")
	body, err := os.ReadFile(filepath.Join(dir, apiHistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(body, &msgs); err != nil {
		t.Fatal(err)
	}
	cwd := cwdRE.FindStringSubmatch(string(body))
	if cwd == nil || len(msgs) < 2 || msgs[1]["role"] != "assistant" {
		t.Fatalf("%s: no working folder, or no reply second", dir)
	}
	folder := "/" + strings.Repeat("d", 64<<10)
	blocks := msgs[1]["content"].([]any)
	for i := range calls {
		blocks = append(blocks,
			map[string]any{"type": "tool_use", "id": fmt.Sprint("read_", i), "name": "read_file", "input": map[string]any{"path": fmt.Sprint("f", i)}},
			map[string]any{"type": "tool_use", "id": fmt.Sprint("cmd_", i), "name": "execute_command", "input": map[string]any{"command": "ls"}})
	}
	msgs[1]["content"] = blocks
	variant, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	variant = bytes.ReplaceAll(variant, []byte("("+cwd[1]+")"), []byte("("+folder+")"))
	meta := file(t, filepath.Join(dir, metadataFile))
	s := ParseTask(Task{ID: "1770913324799", APIHistory: &adapters.File{Path: apiHistoryFile, Body: bytes.NewReader(variant)}, Metadata: meta})
	mustValid(t, s)
	a := gather(s)
	if a.header.Workspace.Root != folder {
		t.Fatalf("workspace root %.40q; want the 64 KiB folder", a.header.Workspace.Root)
	}
	for i := range calls {
		if a.step(t, fmt.Sprint("read_", i)).Type != store.TypeRead || a.step(t, fmt.Sprint("cmd_", i)).Type != store.TypeCommand {
			t.Fatalf("calls %d: not a read and a command", i)
		}
	}
	size := len(variant) + int(meta.Body.(*bytes.Reader).Size())
	cwdBytes, pathBytes, withCwd := adapterstest.Folders(t, s)
	if limit := 2*size + 64<<10; cwdBytes > limit || withCwd == 0 {
		t.Errorf("a %d-byte task: %d steps record the folder, %d bytes; want some, at most %d", size, withCwd, cwdBytes, limit)
	}
	if limit := 3*size + 64<<10; pathBytes > limit || !strings.HasPrefix(a.step(t, "read_0").Payload.Path, folder+"/") {
		t.Errorf("a %d-byte task: paths of %d bytes, the first %.20q…; want at most %d, the first in the folder", size, pathBytes, a.step(t, "read_0").Payload.Path, limit)
	}
}

// TestSubagentFilesListedOnce: a session of 50 resumptions and 50
// subagents, each a messages file of its own (derived from the handmade
// Cline 4 session): each file is a source of the segments its steps are
// in, the manifest of every segment; listed by every segment, as before,
// the files grew as the segments times the subagents.
func TestSubagentFilesListedOnce(t *testing.T) {
	const n = 50
	src := filepath.Join("testdata", "handmade", "sessions", "1769100000000_ab12c")
	dir := filepath.Join(t.TempDir(), "1769100000000_ab12c")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	read := func(name string) map[string]any {
		var v map[string]any
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil || json.Unmarshal(b, &v) != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write("1769100000000_ab12c.json", read("1769100000000_ab12c.json"))
	main := read("1769100000000_ab12c.messages.json")
	msgs := main["messages"].([]any)
	helper := read("1769100000000_ab12c__helper.messages.json")
	at := int64(1769100100000)
	for i := range n {
		at += 1000
		msgs = append(msgs,
			map[string]any{"id": fmt.Sprint("r", i), "role": "user", "ts": at, "content": "[TASK RESUMPTION] go on"},
			map[string]any{"id": fmt.Sprint("a", i), "role": "assistant", "ts": at + 100, "content": "going on"})
		h := maps.Clone(helper)
		h["messages"] = []any{map[string]any{"id": fmt.Sprint("h", i), "role": "user", "ts": at + 200, "content": "help"}}
		write(fmt.Sprintf("1769100000000_ab12c__h%d.messages.json", i), h)
	}
	main["messages"] = msgs
	write("1769100000000_ab12c.messages.json", main)
	write("1769100000000_ab12c__helper.messages.json", helper)

	s := adapterstest.ParseRoots(t, Agent, filepath.Dir(dir))["1769100000000_ab12c"]
	mustValid(t, s)
	a := gather(s)
	if len(a.segs) < n {
		t.Fatalf("%d segments; want at least %d", len(a.segs), n)
	}
	segsOf := map[string]map[int64]bool{} // the segments each file's steps are in
	for _, st := range a.steps {
		f := filepath.Join(dir, "1769100000000_ab12c.messages.json")
		if st.ActorID != adapters.RootActor {
			f = filepath.Join(dir, strings.TrimPrefix(st.ActorID, "agent-")+".messages.json")
		}
		if segsOf[f] == nil {
			segsOf[f] = map[int64]bool{}
		}
		segsOf[f][st.SegmentIndex] = true
	}
	for _, g := range a.segs {
		for _, f := range g.SourceFiles {
			if strings.HasSuffix(f, ".messages.json") && !segsOf[f][g.Index] {
				t.Fatalf("segment %d lists %s, which has no step in it", g.Index, filepath.Base(f))
			}
		}
	}
}
