package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

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
	turns  []store.Turn
	steps  []store.Step
	segs   []store.Segment
}

func gather(s *adapters.Session) all {
	var a all
	err := s.Each(func(b *store.Batch) error {
		a.header = b.Session
		a.turns = append(a.turns, b.Turns...)
		a.steps = append(a.steps, b.Steps...)
		a.segs = append(a.segs, b.Segments...)
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

func (a all) summary() string {
	var segs, modes []string
	for _, g := range a.segs {
		segs = append(segs, g.StartReason)
	}
	for _, t := range a.turns {
		modes = append(modes, t.Mode)
	}
	return strings.Join(segs, ",") + " / " + strings.Join(modes, ",")
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestSampleRollout(t *testing.T) {
	sessions := adapterstest.ParseRoots(t, Agent, "testdata/agentlogs_crud_rollout.jsonl")
	s := sessions["019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b"]
	if len(sessions) != 1 || s == nil {
		t.Fatalf("sessions = %v", sessions)
	}
	mustValid(t, s)
	a := gather(s)
	if got, want := a.byType(), "command=3 edit=1 read=0 message=5 other=0"; got != want {
		t.Errorf("steps by type = %s; want %s", got, want)
	}
	if got := a.summary(); got != "start / custom" {
		t.Errorf("segments / modes = %s; want one start segment and one turn in collaboration mode custom", got)
	}
	h := a.header
	if h.Agent != (store.Agent{Kind: "codex", Version: "0.89.0"}) || h.Workspace.Root != "/Users/philipp/dev/agentlogs/fixtures" ||
		h.StartedAt != "2026-01-25T10:32:00.688Z" || h.Source != "import:codex" || h.Metrics != nil {
		t.Errorf("header = %+v; want codex 0.89.0, no metrics (no cost reported)", h)
	}
	if want := (adapters.Usage{APIRequests: 5, Input: 3097, Output: 300, CacheRead: 44160}); s.Usage == nil || *s.Usage != want {
		t.Errorf("usage = %+v; want %+v (repeated token_count events counted once)", s.Usage, want)
	}
	cat := a.step(t, "call_Cxwk4ioosZkYyeToIOOH3NB6")
	if p := cat.Payload; deref(p.Command) != "cat /Users/philipp/dev/agentlogs/fixtures/JOKE.md" || p.ExitCode == nil || *p.ExitCode != 0 ||
		!strings.HasPrefix(deref(p.Stdout), "# The Late Comedian") || deref(p.Cwd) != "/Users/philipp/dev/agentlogs/fixtures" ||
		cat.Decision != "auto" || cat.Outcome != "ok" {
		t.Errorf("cat = %q exit %v stdout %q cwd %q %s %s", deref(p.Command), p.ExitCode, deref(p.Stdout), deref(p.Cwd), cat.Decision, cat.Outcome)
	}
	patch := a.step(t, "call_jNxPfZXnxjqCPQxUeOy07aR1")
	var hunks []adapters.PatchHunk
	json.Unmarshal(patch.Payload.StructuredPatch, &hunks)
	if patch.Type != "edit" || patch.Payload.Path != "/Users/philipp/dev/agentlogs/fixtures/JOKE.md" || *patch.Payload.IsFullWrite ||
		len(hunks) != 1 || !slices.Contains(hunks[0].Lines, "+Footer note: The office cactus applauds politely.") ||
		!strings.Contains(hunks[0].Patch, "*** Update File: ") || patch.Outcome != "ok" {
		t.Errorf("apply_patch = %s %s full %v patch %+v %s", patch.Type, patch.Payload.Path, *patch.Payload.IsFullWrite, hunks, patch.Outcome)
	}
	if st := a.step(t, "agentlogs_crud_rollout.jsonl:10"); st.Payload.Role != "thinking" || deref(st.Payload.Text) != "**Planning file operations and command sequence**" {
		t.Errorf("reasoning = %s %q", st.Payload.Role, deref(st.Payload.Text))
	}
	for _, st := range a.steps {
		if len(st.Channels) != 1 || st.Channels[0] != "rollout" || st.ContentStatus != "inline" {
			t.Errorf("step %s channels %v", st.ID, st.Channels)
		}
	}
}

func TestHandmadeRollout(t *testing.T) {
	sessions := adapterstest.ParseRoots(t, Agent, "testdata/handmade")
	if len(sessions) != 1 {
		t.Fatalf("sessions = %d; want 1 (history.jsonl is not a rollout)", len(sessions))
	}
	s := sessions["0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"]
	mustValid(t, s)
	a := gather(s)
	if got, want := a.byType(), "command=3 edit=2 read=0 message=6 other=1"; got != want {
		t.Errorf("steps by type = %s; want %s", got, want)
	}
	if got := a.summary(); got != "start,compaction,resume / ,,plan" {
		t.Errorf("segments / modes = %s", got)
	}
	h := a.header
	if h.Workspace.Repo != "https://github.com/example/proj.git" || h.Agent.Version != "0.31.0" {
		t.Errorf("header = %+v; want the repo and the latest CLI version", h)
	}
	failed := a.step(t, "call_a")
	if p := failed.Payload; deref(p.Command) != "go test ./..." || p.ExitCode == nil || *p.ExitCode != 1 || failed.Outcome != "failed" ||
		failed.Error.Type != "exit_code" || failed.Decision != "accepted" || deref(p.Stdout) != "FAIL\tproj\t0.01s\n" {
		t.Errorf("failed shell = %q exit %v %s %+v %s %q", deref(p.Command), p.ExitCode, failed.Outcome, failed.Error, failed.Decision, deref(p.Stdout))
	}
	add, upd := a.step(t, "call_b"), a.step(t, "call_b#1")
	if add.Payload.Path != "/home/dev/proj/x_test.go" || !*add.Payload.IsFullWrite || upd.Payload.Path != "/home/dev/proj/x.go" || *upd.Payload.IsFullWrite {
		t.Errorf("patch steps = %s full %v, %s full %v", add.Payload.Path, *add.Payload.IsFullWrite, upd.Payload.Path, *upd.Payload.IsFullWrite)
	}
	if rej := a.step(t, "call_c"); rej.Decision != "rejected" || rej.Outcome != "not_run" || rej.Payload.Stdout != nil {
		t.Errorf("rejected = %s %s stdout %v", rej.Decision, rej.Outcome, rej.Payload.Stdout)
	}
	if st := a.step(t, "call_e"); st.Decision != "auto" || st.SegmentIndex != 2 {
		t.Errorf("a command under approval_policy never = %s in segment %d; want auto in 2", st.Decision, st.SegmentIndex)
	}
	if s.Usage == nil || s.Usage.APIRequests != 1 || s.Usage.Input != 60 || s.Usage.CacheRead != 40 {
		t.Errorf("usage = %+v", s.Usage)
	}
}

func TestBrokenRolloutLines(t *testing.T) {
	b, _ := os.ReadFile("testdata/agentlogs_crud_rollout.jsonl")
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines[12] = "not json" // the output of the first command
	path := filepath.Join(t.TempDir(), "rollout-x.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n{\"timestamp\":"), 0o600)
	s := adapterstest.ParseRoots(t, Agent, path)["019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b"]
	if len(s.Problems) != 1 || s.Problems[0].String() != path+":13: invalid JSON" {
		t.Errorf("problems = %v", s.Problems)
	}
	if len(s.Incomplete) != 1 {
		t.Errorf("incomplete = %v; want the unfinished last line noted", s.Incomplete)
	}
	mustValid(t, s)
	if st := gather(s).step(t, "call_3LP2FP4eeep7JxJRvO3h42Oh"); st.Outcome != "unknown" {
		t.Errorf("the call whose output line broke = %s; want unknown", st.Outcome)
	}
}

func TestRolloutsApplyTwice(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for round := range 2 {
		for _, s := range adapterstest.ParseRoots(t, Agent, "testdata") {
			for _, b := range s.Batches {
				res, err := st.Apply(ctx, b)
				if err != nil || (round == 1 && res.Changed) {
					t.Fatalf("round %d Apply(%s) = %+v, %v", round, s.ID, res, err)
				}
			}
		}
	}
}

// A model may run apply_patch as a shell command given its patch as a
// here-document, after a cd, which Codex reads as the patch: the real
// rollout with its apply_patch call written that way (the patch's path
// made relative to the cd's folder) gives the same edit step as the
// rollout itself.
func TestApplyPatchAsAShellHeredoc(t *testing.T) {
	const sid, callID = "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b", "call_jNxPfZXnxjqCPQxUeOy07aR1"
	raw, err := os.ReadFile("testdata/agentlogs_crud_rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var patch string
	for i, l := range lines {
		var rec struct {
			Payload struct {
				Type, Input string
				CallID      string `json:"call_id"`
			}
		}
		json.Unmarshal([]byte(l), &rec)
		if rec.Payload.CallID != callID {
			continue
		}
		switch rec.Payload.Type {
		case "custom_tool_call":
			patch = rec.Payload.Input
			root, rel, _ := strings.Cut(patch, "*** Update File: ")
			dir, file := path.Split(rel[:strings.IndexByte(rel, '\n')])
			script := "cd " + dir + " && apply_patch <<'EOF'\n" + root + "*** Update File: " + file + rel[strings.IndexByte(rel, '\n'):] + "\nEOF\n"
			args, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", script}})
			call, _ := json.Marshal(map[string]any{"type": "function_call", "name": "shell", "call_id": callID, "arguments": string(args)})
			lines[i] = `{"timestamp":"2026-01-25T10:32:08.476Z","type":"response_item","payload":` + string(call) + `}`
		case "custom_tool_call_output":
			lines[i] = strings.Replace(l, `"type":"custom_tool_call_output"`, `"type":"function_call_output"`, 1)
		}
	}
	if patch == "" {
		t.Fatal("the sample has no apply_patch call")
	}
	shell := filepath.Join(t.TempDir(), "rollout-shell.jsonl")
	if err := os.WriteFile(shell, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := gather(adapterstest.ParseRoots(t, Agent, "testdata/agentlogs_crud_rollout.jsonl")[sid]).step(t, callID)
	got := gather(adapterstest.ParseRoots(t, Agent, shell)[sid]).step(t, callID)
	g, w := got.Payload, want.Payload // their structured_patch holds the patch as written
	if got.Type != store.TypeEdit || g.Path != w.Path || deref(g.OldString) != deref(w.OldString) || deref(g.NewString) != deref(w.NewString) ||
		*g.IsFullWrite != *w.IsFullWrite || got.Outcome != want.Outcome {
		t.Errorf("the shell's patch = %s %s %q → %q (%s); want the edit of %s %q → %q (%s)", got.Type, g.Path, deref(g.OldString), deref(g.NewString), got.Outcome,
			w.Path, deref(w.OldString), deref(w.NewString), want.Outcome)
	}
	for _, line := range []string{"apply_patch < p.diff", "cat <<'EOF' > x\n" + patch + "\nEOF", "cd a && cd b && apply_patch <<'EOF'\n" + patch + "\nEOF"} {
		if _, _, ok := heredocPatch(line); ok {
			t.Errorf("heredocPatch(%q) is a patch; want not", line)
		}
	}
}
