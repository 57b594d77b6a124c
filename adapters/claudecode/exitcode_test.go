package claudecode

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentreview/service/store"
)

// TestSubagentBashExitCodes imports the Bash calls of a real transcript
// twice: as the main agent's (with Claude Code's structured toolUseResult)
// and as a subagent's, whose records carry no toolUseResult (a subagent's
// file, agent_progress). Both get the exit code the raw file gives each
// call: the one its failed result states, else 0 for a result that is not
// an error.
func TestSubagentBashExitCodes(t *testing.T) {
	lines := mustLines(t, "testdata/spotter/258c7280_excerpt_lines_481-630.jsonl")
	bash := map[string]bool{}
	want := map[string]int64{}
	stated := regexp.MustCompile(`^(?:Error: )?Exit code (-?\d+)`)
	var sub bytes.Buffer
	for _, r := range lines {
		msg, _ := r["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		keep := false
		for _, b := range blocks {
			b, _ := b.(map[string]any)
			switch {
			case b["type"] == "tool_use" && b["name"] == "Bash":
				bash[b["id"].(string)], keep = true, true
			case b["type"] == "tool_result" && bash[b["tool_use_id"].(string)]:
				keep = true
				text, _ := b["content"].(string)
				if m := stated.FindStringSubmatch(text); m != nil {
					want[b["tool_use_id"].(string)], _ = strconv.ParseInt(m[1], 10, 64)
				} else if b["is_error"] != true {
					want[b["tool_use_id"].(string)] = 0
				}
			}
		}
		if keep {
			delete(r, "toolUseResult")
			r["isSidechain"], r["agentId"] = true, "abash"
			sub.WriteString(mustJSON(t, r) + "\n")
		}
	}
	if len(want) < 2 {
		t.Fatalf("the sample has %d Bash results; want several", len(want))
	}
	mainRaw, err := os.ReadFile("testdata/spotter/258c7280_excerpt_lines_481-630.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	mainDetail := importFiles(t, map[string][]byte{spawnSID + ".jsonl": mainRaw})
	subDetail := importFiles(t, map[string][]byte{filepath.Join(spawnSID, "subagents", "agent-abash.jsonl"): sub.Bytes()})
	for _, d := range []struct {
		name  string
		steps []store.Step
	}{{"main", mainDetail.Steps}, {"subagent", subDetail.Steps}} {
		got := map[string]store.Step{}
		for _, st := range d.steps {
			got[st.ID] = st
		}
		for id, code := range want {
			st, ok := got[id]
			wantOutcome := "ok"
			if code != 0 {
				wantOutcome = "failed"
			}
			if !ok || st.Payload.ExitCode == nil || *st.Payload.ExitCode != code || st.Outcome != wantOutcome {
				t.Errorf("%s: %s exit code %v, %s; the raw file gives %d, %s", d.name, id, st.Payload.ExitCode, st.Outcome, code, wantOutcome)
			}
		}
	}
}
