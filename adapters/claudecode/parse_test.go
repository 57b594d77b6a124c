package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// parseRoots discovers and parses every session under roots.
// mustValid asserts that every batch passes ParseBatch after encoding.
func mustValid(t testing.TB, s *adapters.Session) {
	t.Helper()
	for i, b := range s.Batches {
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("session %s batch %d: json.Marshal = %v", s.ID, i, err)
		}
		if _, err := store.ParseBatch(body); err != nil {
			var inv *store.InvalidError
			errors.As(err, &inv)
			t.Fatalf("session %s batch %d: ParseBatch = %v %+v", s.ID, i, err, inv)
		}
	}
}

// all gathers a session's records over its batches.
type all struct {
	header   store.SessionHeader
	segments []store.Segment
	actors   []store.Actor
	turns    []store.Turn
	steps    []store.Step
}

func gather(s *adapters.Session) all {
	var a all
	err := s.Each(func(b *store.Batch) error {
		a.header = b.Session
		a.segments = append(a.segments, b.Segments...)
		a.actors = append(a.actors, b.Actors...)
		a.turns = append(a.turns, b.Turns...)
		a.steps = append(a.steps, b.Steps...)
		return nil
	})
	if err != nil {
		panic(err)
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

func (a all) reasons() string {
	var r []string
	for _, g := range a.segments {
		r = append(r, g.StartReason)
	}
	return strings.Join(r, ",")
}

func (a all) actorList() string {
	var r []string
	for _, x := range a.actors {
		r = append(r, fmt.Sprintf("%s<%s>%s", x.ID, x.ParentID, x.Label))
	}
	return strings.Join(r, " ")
}

func (a all) modes() string {
	var r []string
	for _, t := range a.turns {
		r = append(r, t.Mode)
	}
	return strings.Join(r, ",")
}

// TestSamplesPassParseBatch is the contract of every adapter: each batch it
// produces for a real file is a valid v1.2 batch, and the batches apply in
// order to a store.
func TestSamplesPassParseBatch(t *testing.T) {
	sessions := adapterstest.ParseRoots(t, Agent, "testdata")
	if len(sessions) != 7 {
		t.Fatalf("found %d sessions in testdata; want 7", len(sessions))
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, s := range sessions {
		t.Run(id, func(t *testing.T) {
			if len(s.Batches) == 0 {
				t.Fatal("no batches")
			}
			mustValid(t, s)
			for _, b := range s.Batches {
				if _, err := st.Apply(context.Background(), b); err != nil {
					t.Fatalf("Apply = %v", err)
				}
			}
			if len(s.Problems) > 0 || len(s.Incomplete) > 0 {
				t.Errorf("problems %v, incomplete %v; want none", s.Problems, s.Incomplete)
			}
		})
	}
}

func TestSampleSessions(t *testing.T) {
	sessions := adapterstest.ParseRoots(t, Agent, "testdata")
	cases := []struct {
		id, file string
		types    string
		turns    int
		modes    string
		segments string
		actors   string
		version  string
		root     string
	}{
		{"8122657c-fe54-4dc9-89a3-20049e8a84f7", "agentlogs_crud.jsonl",
			"command=1 edit=2 read=1 message=7 other=5", 1, "", "start", "root<>main",
			"2.0.14", "/Users/philipp/dev/vibeinsights/fixtures/claudecode"},
		{"0db46778-18a1-4d84-853f-d4dc72a07a1b", "agentlogs_todos.jsonl",
			"command=0 edit=0 read=0 message=7 other=5", 1, "", "start", "root<>main", "2.0.14", ""},
		{"0e26ec2f-937e-482c-b889-bc126f996913", "agentlogs_clear_compact.jsonl",
			"command=0 edit=0 read=0 message=4 other=2", 3, ",,", "clear,compaction", "root<>main", "2.0.13", ""},
		{"609efeca-2f51-4118-b077-e91c9fe63f73", "agentlogs_subagent_inline_sidechain.jsonl",
			"command=0 edit=0 read=0 message=7 other=1", 1, "", "start",
			"root<>main sidechain-cd49a45d-dd15-4ec8-8963-410e62666fbc<root>general-purpose", "2.0.13", "/Users/philipp/dev/studio"},
		{"55604662-cf2a-4331-851a-ec234028f8ca", "spotter/short.jsonl",
			"command=1 edit=0 read=0 message=4 other=2", 2, "bypassPermissions,bypassPermissions", "start", "root<>main", "2.1.38", ""},
		{"d6e0bada-1959-4eec-a9d2-0bfade768d8f", "spotter/tool_heavy.jsonl",
			"command=2 edit=0 read=1 message=6 other=5", 4, "bypassPermissions,bypassPermissions,bypassPermissions,bypassPermissions",
			"start", "root<>main", "2.1.38", "/home/marco/projects/spotter"},
		{"258c7280-ae70-4798-800f-63464d01a85d", "spotter (two excerpts and two subagent files)",
			"command=14 edit=1 read=0 message=18 other=6", 1, "", "start",
			"root<>main agent-acompact-fffbd0<root>compact agent-a881341<root>claude-code-guide", "2.1.39",
			"/home/USER/projects/spotter-worktrees/spotter-gqc"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			s := sessions[c.id]
			if s == nil {
				t.Fatalf("no session %s", c.id)
			}
			a := gather(s)
			if got := a.byType(); got != c.types {
				t.Errorf("steps by type = %s; want %s", got, c.types)
			}
			if len(a.turns) != c.turns || a.modes() != c.modes {
				t.Errorf("turns = %d with modes %q; want %d with %q", len(a.turns), a.modes(), c.turns, c.modes)
			}
			if got := a.reasons(); got != c.segments {
				t.Errorf("segments = %s; want %s", got, c.segments)
			}
			if got := a.actorList(); got != c.actors {
				t.Errorf("actors = %s; want %s", got, c.actors)
			}
			h := a.header
			if h.Agent.Kind != "claude-code" || h.Agent.Version != c.version || h.Source != "import:claude-code" || h.Metrics != nil {
				t.Errorf("header = %+v; want claude-code %s, source import:claude-code, no metrics", h, c.version)
			}
			if c.root != "" && h.Workspace.Root != c.root {
				t.Errorf("workspace.root = %s; want %s", h.Workspace.Root, c.root)
			}
			for i, st := range a.steps {
				if st.Seq != int64(i+1) {
					t.Fatalf("step %d has seq %d; want %d", i, st.Seq, i+1)
				}
				if !slices.Equal(st.Channels, []string{"transcript"}) || st.ContentStatus != "inline" {
					t.Errorf("step %s channels %v content %s; want [transcript] inline", st.ID, st.Channels, st.ContentStatus)
				}
				if st.Type != store.TypeOther && st.Type != store.TypeMessage && st.Decision == "n/a" {
					t.Errorf("tool step %s has decision n/a", st.ID)
				}
			}
		})
	}
}

func ptrStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestSampleSteps(t *testing.T) {
	sessions := adapterstest.ParseRoots(t, Agent, "testdata")
	crud := gather(sessions["8122657c-fe54-4dc9-89a3-20049e8a84f7"])
	spotter := gather(sessions["258c7280-ae70-4798-800f-63464d01a85d"])
	short := gather(sessions["55604662-cf2a-4331-851a-ec234028f8ca"])
	heavy := gather(sessions["d6e0bada-1959-4eec-a9d2-0bfade768d8f"])
	compact := gather(sessions["0e26ec2f-937e-482c-b889-bc126f996913"])
	inline := gather(sessions["609efeca-2f51-4118-b077-e91c9fe63f73"])

	t.Run("failed Bash with its exit code", func(t *testing.T) {
		s := spotter.step(t, "toolu_01CLY7LZY81zMjsfM27ZmeTa")
		p := s.Payload
		if s.Type != "command" || s.Outcome != "failed" || p.ExitCode == nil || *p.ExitCode != 128 ||
			s.Error == nil || *s.Error != (store.StepError{Type: "exit_code", Message: "Exit code 128"}) {
			t.Errorf("git push = %s %s exit %v error %+v; want a failed command, exit 128", s.Type, s.Outcome, p.ExitCode, s.Error)
		}
		if ptrStr(p.Command) != "git push 2>&1" || !strings.HasPrefix(ptrStr(p.Stdout), "fatal: The current branch spotter-gqc has no upstream branch.") ||
			ptrStr(p.Cwd) != "/home/USER/projects/spotter-worktrees/spotter-gqc" {
			t.Errorf("git push payload = %q %q %q", ptrStr(p.Command), ptrStr(p.Stdout), ptrStr(p.Cwd))
		}
		if s.Decision != "auto" {
			t.Errorf("decision in bypassPermissions mode = %s; want auto", s.Decision)
		}
	})
	t.Run("successful Bash", func(t *testing.T) {
		s := crud.step(t, "toolu_012tuX26pk8gokoCtkcQi6fh")
		p := s.Payload
		if s.Outcome != "ok" || p.ExitCode == nil || *p.ExitCode != 0 || p.Stdout == nil || p.Stderr == nil || s.Decision != "accepted" {
			t.Errorf("rm = %s exit %v stdout %v stderr %v decision %s; want ok, exit 0, empty outputs, accepted", s.Outcome, p.ExitCode, p.Stdout, p.Stderr, s.Decision)
		}
	})
	t.Run("background Bash has no exit code", func(t *testing.T) {
		s := heavy.step(t, "toolu_018GZVh9ymkrdx1TnR8reg5Y")
		if s.Payload.ExitCode != nil || !strings.HasPrefix(ptrStr(s.Payload.Stdout), "Command running in background") {
			t.Errorf("background command exit %v stdout %q", s.Payload.ExitCode, ptrStr(s.Payload.Stdout))
		}
	})
	t.Run("user rejection", func(t *testing.T) {
		for _, id := range []string{"toolu_0116Hyi5v8ut7Ffb7d8qV1Sc", "toolu_01FdQ8qTyVyZjE3Kw4dguQGx"} {
			s := short.step(t, id)
			if s.Decision != "rejected" || s.Outcome != "not_run" || s.Error == nil || s.Error.Type != "rejected" ||
				!strings.HasPrefix(s.Error.Message, "The user doesn't want to proceed with this tool use.") {
				t.Errorf("%s = %s %s %+v; want rejected, not_run, error rejected", id, s.Decision, s.Outcome, s.Error)
			}
		}
		if s := spotter.step(t, "toolu_011NXYeWWxrZPLNNT8pFAZPi"); s.Decision != "rejected" {
			t.Errorf("rejected TaskOutput decision = %s", s.Decision)
		}
	})
	t.Run("Edit with old and new strings and structured patch", func(t *testing.T) {
		s := crud.step(t, "toolu_0198ui9CWP2HfDM9uYGahBxZ")
		p := s.Payload
		if s.Type != "edit" || p.Path != "/Users/philipp/dev/vibeinsights/fixtures/claudecode/JOKE.md" || *p.IsFullWrite {
			t.Fatalf("edit = %s %s full %v", s.Type, p.Path, *p.IsFullWrite)
		}
		if ptrStr(p.OldString) != "Because it has too many bugs!" || !strings.HasPrefix(ptrStr(p.NewString), "Because it has too many bugs! 🐛\n\n**Alternative answer:**") {
			t.Errorf("old/new = %q / %q", ptrStr(p.OldString), ptrStr(p.NewString))
		}
		var hunks []struct {
			OldStart, OldLines, NewStart, NewLines int
			Lines                                  []string
		}
		if err := json.Unmarshal(p.StructuredPatch, &hunks); err != nil || len(hunks) != 1 || hunks[0].OldStart != 1 ||
			!slices.Contains(hunks[0].Lines, "-Because it has too many bugs!") {
			t.Errorf("structured patch = %s (%v)", p.StructuredPatch, err)
		}
	})
	t.Run("Write is a full write", func(t *testing.T) {
		s := crud.step(t, "toolu_01QJVoGNGRGH9v9TNN9LQzK9")
		p := s.Payload
		if s.Type != "edit" || p.IsFullWrite == nil || !*p.IsFullWrite || !strings.HasPrefix(ptrStr(p.NewString), "# Why Don't Programmers Like Nature?") ||
			p.OldString != nil || p.StructuredPatch != nil {
			t.Errorf("write = %s full %v new %q old %v patch %s", s.Type, p.IsFullWrite, ptrStr(p.NewString), p.OldString, p.StructuredPatch)
		}
	})
	t.Run("Read with its line range", func(t *testing.T) {
		for _, c := range []struct {
			a    all
			id   string
			want [2]int64
		}{{crud, "toolu_017mrzqS3EfzPfNvf3Lywt9o", [2]int64{1, 8}}, {heavy, "toolu_01VpPeBD2ziigLLpybShAGoU", [2]int64{1, 83}}} {
			s := c.a.step(t, c.id)
			if s.Type != "read" || s.Payload.Range == nil || *s.Payload.Range != c.want {
				t.Errorf("read %s = %s range %v; want %v", c.id, s.Type, s.Payload.Range, c.want)
			}
		}
	})
	t.Run("thinking is role thinking", func(t *testing.T) {
		s := compact.step(t, "14c028b4-e074-4062-9c69-5a7e5794ce7c")
		if s.Type != "message" || s.Payload.Role != "thinking" || !strings.HasPrefix(ptrStr(s.Payload.Text), "The user is asking") {
			t.Errorf("thinking = %s %s %q", s.Type, s.Payload.Role, ptrStr(s.Payload.Text))
		}
	})
	t.Run("slash commands and the compaction summary", func(t *testing.T) {
		clear := compact.step(t, "8bab5784-63f2-437f-8b71-b20a85327b44")
		if clear.Payload.ToolName != "/clear" || clear.SegmentIndex != 0 {
			t.Errorf("/clear = %s in segment %d", clear.Payload.ToolName, clear.SegmentIndex)
		}
		sum := compact.step(t, "cff5fe4f-d7c3-4631-8580-3176d62c0e62")
		if sum.Payload.Role != "summary" || sum.SegmentIndex != 1 {
			t.Errorf("compaction summary = role %s segment %d; want summary in segment 1", sum.Payload.Role, sum.SegmentIndex)
		}
		if compact.segments[0].EndedAt != compact.segments[1].StartedAt || compact.segments[1].EndedAt != "" {
			t.Errorf("segments = %+v; the first ends where the second starts, which is open", compact.segments)
		}
	})
	t.Run("subagent file under the Task call that spawned it", func(t *testing.T) {
		task := spotter.step(t, "toolu_01VmaERAwhb19LGUwu9GenaK")
		n := 0
		for _, s := range spotter.steps {
			if s.ActorID == "agent-a881341" {
				n++
				if s.TurnID != task.TurnID || s.SegmentIndex != task.SegmentIndex || s.Seq <= task.Seq {
					t.Errorf("subagent step %s in turn %s seq %d; want turn %s after seq %d", s.ID, s.TurnID, s.Seq, task.TurnID, task.Seq)
				}
			}
		}
		if n != 6 {
			t.Errorf("subagent a881341 has %d steps; want 6", n)
		}
		if first := spotter.step(t, "99c77085-8ebd-4871-bdf6-ea5801acb7c9"); first.Payload.Role != "task" {
			t.Errorf("the subagent's prompt has role %s; want task", first.Payload.Role)
		}
	})
	t.Run("inline sidechain", func(t *testing.T) {
		s := inline.step(t, "cd49a45d-dd15-4ec8-8963-410e62666fbc")
		if s.ActorID != "sidechain-cd49a45d-dd15-4ec8-8963-410e62666fbc" || s.Payload.Role != "task" {
			t.Errorf("sidechain prompt = actor %s role %s", s.ActorID, s.Payload.Role)
		}
	})
	t.Run("token usage counted once per response", func(t *testing.T) {
		want := adapters.Usage{APIRequests: 10, Input: 25, Output: 1508, CacheRead: 148958, CacheCreation: 12593}
		if u := sessions["8122657c-fe54-4dc9-89a3-20049e8a84f7"].Usage; u == nil || *u != want {
			t.Errorf("usage = %+v; want %+v (15 lines, 10 responses)", u, want)
		}
	})
}

// writeFile writes a test transcript.
func writeFile(t testing.TB, path string, lines ...string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func sampleLines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestBrokenLines(t *testing.T) {
	lines := sampleLines(t, "agentlogs_crud.jsonl")
	lines[4] = `{"type":"user","message":` // line 5: the first TodoWrite result
	lines = append(lines, "")
	path := filepath.Join(t.TempDir(), "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
	writeFile(t, path, append(lines, `{"type":"assistant","uuid":"half`)...) // a line still being written
	s := adapterstest.ParseRoots(t, Agent, path)["8122657c-fe54-4dc9-89a3-20049e8a84f7"]
	if len(s.Problems) != 1 || s.Problems[0].String() != path+":5: invalid JSON" {
		t.Errorf("problems = %v; want %s:5: invalid JSON", s.Problems, path)
	}
	if !slices.Equal(s.Incomplete, []string{path}) {
		t.Errorf("incomplete = %v; want the file, its last line unfinished", s.Incomplete)
	}
	a := gather(s)
	if len(a.steps) != 16 {
		t.Errorf("%d steps; want all 16 (only a result line was lost)", len(a.steps))
	}
	if st := a.step(t, "toolu_01DNPAC6nXbsWffwiQU8RMEb"); st.Outcome != "unknown" || st.Decision != "unknown" {
		t.Errorf("the call whose result was lost = %s %s; want unknown, unknown", st.Decision, st.Outcome)
	}
	mustValid(t, s)
}

func TestUnknownRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0db46778-18a1-4d84-853f-d4dc72a07a1b.jsonl")
	lines := sampleLines(t, "agentlogs_todos.jsonl")
	lines = append(lines[:3:3],
		`{"type":"pr-link","url":"https://example.com/pr/1"}`,
		`{"type":"assistant","uuid":"u-odd","timestamp":"2025-10-12T21:40:32Z","message":{"id":"m","content":[{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"q":"x"}}]}}`,
		`{"type":"user","uuid":"u-num","timestamp":"2025-10-12T21:40:32Z","message":{"content":42}}`,
		`[1,2,3]`,
		`{"type":"system","subtype":"brand_new","uuid":"u-sys"}`,
	)
	writeFile(t, path, append(lines, sampleLines(t, "agentlogs_todos.jsonl")[3:]...)...)
	s := adapterstest.ParseRoots(t, Agent, path)["0db46778-18a1-4d84-853f-d4dc72a07a1b"]
	if s.Skipped["pr-link"] != 1 || s.Skipped["system:brand_new"] != 1 || s.Skipped["empty user record"] != 1 {
		t.Errorf("skipped = %v; want the new record types counted", s.Skipped)
	}
	if len(s.Problems) != 1 || s.Problems[0].Message != "not a JSON object" {
		t.Errorf("problems = %v; want the array line reported", s.Problems)
	}
	a := gather(s)
	if st := a.step(t, "u-odd"); st.Type != "other" || st.Payload.ToolName != "server_tool_use" {
		t.Errorf("an unknown content block = %s %s; want an other step", st.Type, st.Payload.ToolName)
	}
	if len(a.steps) != 13 {
		t.Errorf("%d steps; want the 12 of the sample and the new block", len(a.steps))
	}
	mustValid(t, s)
}

// TestAppendKeepsIDsAndSeqs reads a transcript as it grows: every step of
// the shorter read keeps its id and seq in the longer one, so a re-import
// updates the same steps.
func TestAppendKeepsIDsAndSeqs(t *testing.T) {
	lines := sampleLines(t, "agentlogs_crud.jsonl")
	dir := t.TempDir()
	path := filepath.Join(dir, "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
	var prev []store.Step
	for n := 3; n <= len(lines); n += 4 {
		writeFile(t, path, lines[:n]...)
		a := gather(adapterstest.ParseRoots(t, Agent, path)["8122657c-fe54-4dc9-89a3-20049e8a84f7"])
		for i, p := range prev {
			if a.steps[i].ID != p.ID || a.steps[i].Seq != p.Seq || a.steps[i].TurnID != p.TurnID {
				t.Fatalf("after %d lines step %d is %s/%d; it was %s/%d", n, i, a.steps[i].ID, a.steps[i].Seq, p.ID, p.Seq)
			}
		}
		prev = a.steps
	}
}

// TestSiblingSubagentFile covers the 2.0.x layout: agent-<id>.jsonl next to
// the session's file, linked by the Task prompt.
func TestSiblingSubagentFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "11111111-2222-3333-4444-555555555555.jsonl"),
		`{"type":"user","uuid":"p1","sessionId":"11111111-2222-3333-4444-555555555555","timestamp":"2025-12-01T10:00:00Z","cwd":"/w","version":"2.0.61","message":{"role":"user","content":"look around"}}`,
		`{"type":"assistant","uuid":"a1","timestamp":"2025-12-01T10:00:01Z","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{"subagent_type":"Explore","prompt":"List the files"}}]}}`,
		`{"type":"user","uuid":"r1","timestamp":"2025-12-01T10:00:09Z","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_task","content":[{"type":"text","text":"done"}]}]},"toolUseResult":{"status":"completed"}}`,
		`{"type":"assistant","uuid":"a2","timestamp":"2025-12-01T10:00:10Z","message":{"id":"m2","content":[{"type":"text","text":"All listed."}]}}`,
	)
	writeFile(t, filepath.Join(dir, "agent-5f3e2a1b.jsonl"),
		`{"type":"user","uuid":"s1","isSidechain":true,"agentId":"5f3e2a1b","sessionId":"11111111-2222-3333-4444-555555555555","timestamp":"2025-12-01T10:00:02Z","message":{"role":"user","content":"List the files"}}`,
		`{"type":"assistant","uuid":"s2","isSidechain":true,"agentId":"5f3e2a1b","timestamp":"2025-12-01T10:00:03Z","message":{"id":"m3","content":[{"type":"tool_use","id":"toolu_ls","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","uuid":"s3","isSidechain":true,"agentId":"5f3e2a1b","timestamp":"2025-12-01T10:00:04Z","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_ls","content":"a\nb","is_error":false}]},"toolUseResult":{"stdout":"a\nb","stderr":"","interrupted":false}}`,
	)
	sessions := adapterstest.ParseRoots(t, Agent, dir)
	s := sessions["11111111-2222-3333-4444-555555555555"]
	if len(sessions) != 1 || s == nil {
		t.Fatalf("sessions = %v; want the sibling file in its parent's session", sessions)
	}
	mustValid(t, s)
	a := gather(s)
	if got := a.actorList(); got != "root<>main agent-5f3e2a1b<root>Explore" {
		t.Errorf("actors = %s", got)
	}
	var order []string
	for _, st := range a.steps {
		order = append(order, st.ID)
	}
	if got := strings.Join(order, " "); got != "p1 toolu_task s1 toolu_ls a2" {
		t.Errorf("steps in seq order = %s; want the subagent's between the Task call and the reply", got)
	}
	ls := a.step(t, "toolu_ls")
	if ls.ActorID != "agent-5f3e2a1b" || ls.TurnID != "turn-p1" || ptrStr(ls.Payload.Stdout) != "a\nb" || ls.Decision != "accepted" {
		t.Errorf("subagent command = actor %s turn %s stdout %q decision %s", ls.ActorID, ls.TurnID, ptrStr(ls.Payload.Stdout), ls.Decision)
	}
}

func TestPlanModeAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "22222222-2222-3333-4444-555555555555.jsonl")
	writeFile(t, path,
		`{"type":"progress","uuid":"h0","timestamp":"2026-01-01T09:00:00Z","version":"2.1.40","cwd":"/w","data":{"type":"hook_progress","hookEvent":"SessionStart","hookName":"SessionStart:startup"}}`,
		`{"type":"user","uuid":"p1","timestamp":"2026-01-01T09:00:01Z","permissionMode":"plan","message":{"role":"user","content":"plan it"}}`,
		`{"type":"assistant","uuid":"a1","timestamp":"2026-01-01T09:00:02Z","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_plan","name":"ExitPlanMode","input":{"plan":"1. do it"}}]}}`,
		`{"type":"user","uuid":"r1","timestamp":"2026-01-01T09:00:03Z","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_plan","content":"ok"}]}}`,
		`{"type":"progress","uuid":"h1","timestamp":"2026-01-02T09:00:00Z","version":"2.1.41","data":{"type":"hook_progress","hookEvent":"SessionStart","hookName":"SessionStart:resume"}}`,
		`{"type":"user","uuid":"p2","timestamp":"2026-01-02T09:00:01Z","version":"2.1.41","permissionMode":"acceptEdits","message":{"role":"user","content":"go"}}`,
		`{"type":"assistant","uuid":"a2","timestamp":"2026-01-02T09:00:02Z","version":"2.1.41","message":{"id":"m2","content":[{"type":"tool_use","id":"toolu_w","name":"Write","input":{"file_path":"/w/x","content":"x"}}]}}`,
		`{"type":"user","uuid":"r2","timestamp":"2026-01-02T09:00:03Z","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_w","content":"ok"}]},"toolUseResult":{"type":"create","filePath":"/w/x","content":"x","structuredPatch":[]}}`,
		`{"type":"user","uuid":"p3","timestamp":"2026-01-02T09:01:00Z","message":{"role":"user","content":[{"type":"text","text":"<bash-input>make</bash-input>"}]}}`,
		`{"type":"user","uuid":"o3","timestamp":"2026-01-02T09:01:01Z","message":{"role":"user","content":"<bash-stdout>built</bash-stdout><bash-stderr></bash-stderr>"}}`,
	)
	s := adapterstest.ParseRoots(t, Agent, path)["22222222-2222-3333-4444-555555555555"]
	mustValid(t, s)
	a := gather(s)
	if a.reasons() != "start,resume" || a.modes() != "plan,acceptEdits,acceptEdits" {
		t.Errorf("segments %s, modes %s; want start,resume and plan,acceptEdits,acceptEdits", a.reasons(), a.modes())
	}
	if st := a.step(t, "toolu_plan"); st.Decision != "accepted" || st.SegmentIndex != 0 {
		t.Errorf("ExitPlanMode = %s in segment %d", st.Decision, st.SegmentIndex)
	}
	if st := a.step(t, "toolu_w"); st.Decision != "auto" || st.SegmentIndex != 1 {
		t.Errorf("Write in acceptEdits mode = %s in segment %d; want auto in 1", st.Decision, st.SegmentIndex)
	}
	if st := a.step(t, "p3"); st.Type != "command" || ptrStr(st.Payload.Command) != "make" || ptrStr(st.Payload.Stdout) != "built" {
		t.Errorf("! command = %s %q %q", st.Type, ptrStr(st.Payload.Command), ptrStr(st.Payload.Stdout))
	}
	if a.header.Agent.Version != "2.1.41" {
		t.Errorf("version = %s; want the latest", a.header.Agent.Version)
	}
}

// TestLargeSessionSplits makes a session with more steps than one batch
// may carry.
func TestLargeSessionSplits(t *testing.T) {
	const calls = 6000
	lines := []string{`{"type":"user","uuid":"p","sessionId":"big","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","message":{"role":"user","content":"loop"}}`}
	for i := range calls {
		ts := fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60%60, i%60)
		lines = append(lines,
			fmt.Sprintf(`{"type":"assistant","uuid":"a%d","timestamp":"%s","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"echo %d"}}]}}`, i, ts, i, i, i),
			fmt.Sprintf(`{"type":"user","uuid":"r%d","timestamp":"%s","message":{"content":[{"type":"tool_result","tool_use_id":"t%d","content":"%d"}]},"toolUseResult":{"stdout":"%d","stderr":""}}`, i, ts, i, i, i))
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	writeFile(t, path, lines...)
	s := adapterstest.ParseRoots(t, Agent, path)["big"]
	if len(s.Batches) != 2 || len(s.Batches[0].Steps) != store.MaxItems || len(s.Batches[1].Steps) != calls+1-store.MaxItems {
		t.Fatalf("%d batches; want 2 of %d and %d steps", len(s.Batches), store.MaxItems, calls+1-store.MaxItems)
	}
	if len(s.Batches[1].Turns) != 0 || len(s.Batches[0].Turns) != 1 {
		t.Errorf("turns per batch = %d, %d; want the turn first", len(s.Batches[0].Turns), len(s.Batches[1].Turns))
	}
	mustValid(t, s)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, b := range s.Batches {
		if _, err := st.Apply(context.Background(), b); err != nil {
			t.Fatalf("Apply = %v", err)
		}
	}
	if seqs, _ := st.StepSeqs(context.Background(), "big"); len(seqs) != calls+1 {
		t.Errorf("stored %d steps; want %d", len(seqs), calls+1)
	}
}

// TestLongFolderOfManyCalls derives a variant of the real transcript whose
// lines name a 64 KiB working folder and whose Bash call's message holds
// 3,000 more Bash calls: each is still a command step, but the folder its
// line names once is copied into them only while the copies stay within
// twice the file and 64 KiB (adapters.Builder.Folder), not 3,000 times.
func TestLongFolderOfManyCalls(t *testing.T) {
	const calls = 3000
	folder := "/" + strings.Repeat("d", 64<<10)
	lines := sampleLines(t, "agentlogs_crud.jsonl")
	var ids []string
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec["cwd"]; ok {
			rec["cwd"] = folder
		}
		if msg, _ := rec["message"].(map[string]any); ids == nil && strings.Contains(l, `"name":"Bash"`) {
			content := msg["content"].([]any)
			call := content[0].(map[string]any)
			for k := range calls {
				c := maps.Clone(call)
				c["id"] = fmt.Sprint("many_", k)
				content = append(content, c)
				ids = append(ids, c["id"].(string))
			}
			msg["content"] = content
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	if ids == nil {
		t.Fatal("agentlogs_crud.jsonl: no Bash call")
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeFile(t, path, lines...)
	sessions := adapterstest.ParseRoots(t, Agent, path)
	if len(sessions) != 1 {
		t.Fatalf("%d sessions; want the sample's one", len(sessions))
	}
	var s *adapters.Session
	for _, s = range sessions {
	}
	mustValid(t, s)
	a := gather(s)
	for _, id := range ids {
		if st := a.step(t, id); st.Type != store.TypeCommand {
			t.Fatalf("%s: a %s step; want a command", id, st.Type)
		}
	}
	size := len(strings.Join(lines, "\n"))
	cwdBytes, _, withCwd := adapterstest.Folders(t, s)
	if limit := 2*size + 64<<10; cwdBytes > limit || withCwd == 0 {
		t.Errorf("a %d-byte transcript: %d steps record the folder, %d bytes; want some, at most %d", size, withCwd, cwdBytes, limit)
	}
}

// TestAPIRetryNotices: Claude Code's system api_error records (one per
// retry of a failed request, in the shapes seen in real transcripts: an
// error object with its formatted text, or with a status alone) put into
// the real sample: the notices of one stall, one after another, are one
// system step named for the first, saying the last attempt; a notice after
// another step is a step of its own; none is a failure, so the sample's
// failed steps stay as they were.
func TestAPIRetryNotices(t *testing.T) {
	lines := sampleLines(t, "agentlogs_crud.jsonl")
	var head map[string]any // the sample's first prompt: its session and time
	prompt := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"type":"user"`) })
	if err := json.Unmarshal([]byte(lines[prompt]), &head); err != nil {
		t.Fatal(err)
	}
	notice := func(uuid string, attempt int, e map[string]any) string {
		b, _ := json.Marshal(map[string]any{"parentUuid": head["uuid"], "isSidechain": false, "type": "system", "subtype": "api_error",
			"level": "error", "error": e, "retryInMs": 600, "retryAttempt": attempt, "maxRetries": 10, "source": "request_retry",
			"timestamp": head["timestamp"], "uuid": uuid, "sessionId": head["sessionId"], "version": head["version"], "cwd": head["cwd"]})
		return string(b)
	}
	overloaded := map[string]any{"message": "529 overloaded", "status": 529, "formatted": "529 overloaded_error", "connection": nil}
	stall := []string{notice("retry-1", 1, overloaded), notice("retry-2", 2, overloaded), notice("retry-3", 3, overloaded)}
	later := notice("retry-later", 1, map[string]any{"status": 500})
	last := len(lines) - 1
	withRetries := slices.Concat(lines[:prompt+1], stall, lines[prompt+1:last], []string{later}, lines[last:])
	path := filepath.Join(t.TempDir(), "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
	writeFile(t, path, append(withRetries, "")...)
	before := gather(adapterstest.ParseRoots(t, Agent, filepath.Join("testdata", "agentlogs_crud.jsonl"))["8122657c-fe54-4dc9-89a3-20049e8a84f7"])
	s := adapterstest.ParseRoots(t, Agent, path)["8122657c-fe54-4dc9-89a3-20049e8a84f7"]
	mustValid(t, s)
	after := gather(s)
	if len(after.steps) != len(before.steps)+2 {
		t.Errorf("%d steps with the notices; want the sample's %d and 2", len(after.steps), len(before.steps))
	}
	failed := func(a all) (n int) {
		for _, st := range a.steps {
			if st.Outcome == "failed" {
				n++
			}
		}
		return n
	}
	if failed(after) != failed(before) {
		t.Errorf("%d failed steps with the notices; want the sample's %d", failed(after), failed(before))
	}
	for id, want := range map[string]string{
		"retry-1":     "API error, retrying: 529 overloaded_error (attempt 3 of 10)",
		"retry-later": "API error, retrying: status 500 (attempt 1 of 10)",
	} {
		st := after.step(t, id)
		if st.Type != store.TypeMessage || st.Payload.Role != "system" || st.Payload.Text == nil || *st.Payload.Text != want || st.Outcome != "ok" {
			t.Errorf("notice %s = %+v %+v; want an ok system message %q", id, st, st.Payload, want)
		}
	}
}
