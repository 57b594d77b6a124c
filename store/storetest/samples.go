package storetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
	"github.com/agentreview/service/store"
)

// SampleBatches are the batches the adapters make of the real sample
// transcripts (their golden files, adapters/*/testdata/golden), in a fixed
// order: real agent text (paths, commands, code, prose) for tests that
// compare backends. They carry no usage records (Batch.Usage is not JSON).
func SampleBatches(t testing.TB) []*store.Batch {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("storetest: no source path for the golden files")
	}
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "adapters", "*", "testdata", "golden", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("storetest: no golden batches (%v)", err)
	}
	var all []*store.Batch
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var batches []*store.Batch
		if err := json.Unmarshal(data, &batches); err != nil {
			t.Fatalf("storetest: %s: %v", p, err)
		}
		all = append(all, batches...)
	}
	return all
}

// AgentSamples are the batches, usage records included, that the adapters
// make of the real samples in ../shared/samples of each agent, agent by
// agent, each agent's sessions by id. Without the samples the test is
// skipped.
func AgentSamples(t testing.TB) []*store.Batch {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("storetest: no source path for the samples")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no samples at %s: %v", dir, err)
	}
	var out []*store.Batch
	for _, a := range []struct {
		agent adapters.Agent
		dir   string
	}{
		{claudecode.Agent, "claude-code"}, {codex.Agent, "codex"}, {cline.Agent, "cline/tasks"},
		{geminicli.Agent, "gemini"}, {copilotcli.Agent, "copilot-cli"}, {opencode.Agent, "opencode"},
		{crush.Agent, "crush"},
		{qwencode.Agent, "qwen-code/splitrail/qwen_code.jsonl"}, // not in a chats folder: named
		// The other excerpt of Aider's history starts inside a run.
		{aider.Agent, "aider/aider-ai/chat-history_lines_2706-4009.aider.chat.history.md"},
	} {
		root := filepath.Join(dir, a.dir)
		exports, _ := filepath.Glob(filepath.Join(root, "*_export.json")) // opencode reads only named exports
		batches := adapterstest.Batches(t, a.agent, append([]string{root}, exports...)...)
		if len(batches) == 0 {
			t.Fatalf("no %s sessions under %s", a.agent.Kind, root)
		}
		out = append(out, batches...)
	}
	return out
}

// SearchText is what the index holds of st as Apply stores it
// (store.SplitStep, then StepDoc.SearchText); it fails tb on a step that
// Apply would refuse.
func SearchText(tb testing.TB, st *store.Step) string {
	tb.Helper()
	r, err := store.SplitStep(st)
	if err != nil {
		tb.Fatalf("SplitStep(%s): %v", st.ID, err)
	}
	return r.Doc(st).SearchText()
}
