package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

const (
	spawnSample = "testdata/spotter/258c7280_excerpt_lines_1472-1486_task_spawn.jsonl"
	spawnAgent  = "testdata/spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"
	spawnSID    = "258c7280-ae70-4798-800f-63464d01a85d"
)

// progressRecords returns the subagent records the agent_progress records
// of a transcript carry, as lines of the subagent's own file would hold
// them (isSidechain, agentId), read without the parser.
func progressRecords(t *testing.T, transcript []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(transcript))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Type string `json:"type"`
			Data struct {
				Type    string                     `json:"type"`
				AgentID string                     `json:"agentId"`
				Message map[string]json.RawMessage `json:"message"`
			} `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Type != "progress" || rec.Data.Type != "agent_progress" {
			continue
		}
		m := rec.Data.Message
		m["isSidechain"], m["agentId"] = json.RawMessage("true"), json.RawMessage(`"`+rec.Data.AgentID+`"`)
		b, _ := json.Marshal(m)
		out = append(out, b)
	}
	return out
}

// importSpawn lays out a session file (unless transcript is nil) and,
// when sub is set, its subagent file as Claude Code does, imports it into
// a temp store and returns it.
func importSpawn(t *testing.T, transcript []byte, sub bool) store.SessionDetail {
	t.Helper()
	files := map[string][]byte{}
	if transcript != nil {
		files[spawnSID+".jsonl"] = transcript
	}
	if sub {
		b, err := os.ReadFile(spawnAgent)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join(spawnSID, "subagents", filepath.Base(spawnAgent))] = b
	}
	return importFiles(t, files)
}

// importFiles writes files (by path under a temp folder), imports the one
// session Discover finds there into a temp store and returns it.
func importFiles(t *testing.T, files map[string][]byte) store.SessionDetail {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	for name, b := range files {
		mustWrite(t, filepath.Join(dir, name), b)
	}
	units, problems := Discover([]string{dir})
	if len(units) != 1 || len(problems) > 0 {
		t.Fatalf("Discover = %d units, %v; want 1 unit", len(units), problems)
	}
	s := adapterstest.ParseUnit(t, Agent, units[0])
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	defer s.Close()
	if err := s.Each(func(b *store.Batch) error { _, err := st.Apply(ctx, b); return err }); err != nil {
		t.Fatalf("Apply(batch of %s) = %v", s.ID, err)
	}
	d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", s.ID, err)
	}
	return d
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// actorSteps counts the steps of one actor, and how many of them failed.
func actorSteps(d store.SessionDetail, actor string) (sampleCounts, int) {
	var steps []store.Step
	failed := 0
	for _, st := range d.Steps {
		if st.ActorID == actor {
			steps = append(steps, st)
			if st.Outcome == "failed" {
				failed++
			}
		}
	}
	return storedCounts(steps), failed
}

// TestAgentProgressSubagent imports a Task's subagent from the
// agent_progress records of the parent transcript when the subagent's own
// file is missing (with a result marked failed in a variant, so its
// failures count), and from the file alone when it exists.
func TestAgentProgressSubagent(t *testing.T) {
	raw, err := os.ReadFile(spawnSample)
	if err != nil {
		t.Fatal(err)
	}
	failedVariant := bytes.Replace(raw, []byte(`"type":"tool_result","content"`), []byte(`"type":"tool_result","is_error":true,"content"`), 1)
	const actor = "agent-a881341"
	for _, tc := range []struct {
		name       string
		transcript []byte
		sub        bool
	}{
		{"progress only", raw, false},
		{"progress only, a failed result", failedVariant, false},
		{"with the subagent file", raw, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, seen := sampleCounts{}, map[string]bool{}
			wantFailed := 0
			if tc.sub {
				scanTranscript(t, spawnAgent, want, seen)
			} else {
				lines := progressRecords(t, tc.transcript)
				wantFailed = bytes.Count(bytes.Join(lines, nil), []byte(`"is_error":true`))
				p := filepath.Join(t.TempDir(), "agent-progress.jsonl")
				mustWrite(t, p, bytes.Join(lines, []byte("\n")))
				scanTranscript(t, p, want, seen)
			}
			if len(want) == 0 {
				t.Fatal("the sample holds no subagent step; the sample or the scan is wrong")
			}
			d := importSpawn(t, tc.transcript, tc.sub)
			got, failed := actorSteps(d, actor)
			if !maps.Equal(got, want) {
				t.Errorf("steps of %s = %v; the raw file has %v", actor, got, want)
			}
			if failed != wantFailed {
				t.Errorf("failed steps of %s = %d; the raw file has %d", actor, failed, wantFailed)
			}
			if !slices.ContainsFunc(d.Actors, func(a store.Actor) bool { return a.ID == actor && a.ParentID == "root" }) {
				t.Errorf("actors = %+v; want %s under root", d.Actors, actor)
			}
		})
	}
}

// TestSubagentOnlyTitleSkipsCompaction: with the compaction summariser's
// file beside the subagent's (its prompt comes first), the title is still
// the subagent's first prompt, read from the raw file: the summariser's
// prompt says nothing of the work.
func TestSubagentOnlyTitleSkipsCompaction(t *testing.T) {
	compact := filepath.Join(filepath.Dir(spawnAgent), "agent-acompact-fffbd0.jsonl")
	files := map[string][]byte{}
	for _, path := range []string{spawnAgent, compact} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join(spawnSID, "subagents", filepath.Base(path))] = b
	}
	var first struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(bytes.SplitN(files[filepath.Join(spawnSID, "subagents", filepath.Base(spawnAgent))], []byte("\n"), 2)[0], &first); err != nil {
		t.Fatal(err)
	}
	wantTitle, _, _ := strings.Cut(first.Message.Content, "\n")
	if d := importFiles(t, files); d.Summary.Title != wantTitle {
		t.Errorf("title = %q; want the subagent's first prompt %q", d.Summary.Title, wantTitle)
	}
}

// TestSubagentOnlySession imports a session folder that holds only a
// subagent's file (the main transcript is missing): the session is titled
// with the subagent's first prompt, taken from the raw file, and its root
// actor is marked as subagents only.
func TestSubagentOnlySession(t *testing.T) {
	f, err := os.Open(spawnAgent)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var first struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.NewDecoder(f).Decode(&first); err != nil || first.Message.Content == "" {
		t.Fatalf("first line of %s: %v; want a prompt", spawnAgent, err)
	}
	wantTitle, _, _ := strings.Cut(first.Message.Content, "\n")

	d := importSpawn(t, nil, true)
	if d.Summary.Title != wantTitle {
		t.Errorf("title = %q; want %q", d.Summary.Title, wantTitle)
	}
	if len(d.Actors) == 0 || d.Actors[0].ID != "root" || d.Actors[0].Label != adapters.SubagentsOnlyLabel {
		t.Errorf("actors = %+v; want root labelled %q", d.Actors, adapters.SubagentsOnlyLabel)
	}
	if d.Summary.Steps == 0 {
		t.Errorf("steps = 0; want the subagent's")
	}
}
