package cline

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// scanHistory counts the tool_use blocks of an api_conversation_history.json
// by the step each maps to (the talk tools attempt_completion,
// plan_mode_respond and ask_followup_question are the agent's replies),
// and the assistant's text blocks as replies, without the parser.
func scanHistory(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []struct {
		Role    string `json:"role"`
		Content []struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Text  string            `json:"text"`
			Input map[string]string `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := map[string]int{}
	for _, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		for _, blk := range m.Content {
			switch {
			case blk.Type == "text" && strings.TrimSpace(blk.Text) != "":
				c["message:assistant"]++
			case blk.Type != "tool_use":
			case blk.Name == "attempt_completion" || blk.Name == "plan_mode_respond" || blk.Name == "ask_followup_question":
				c["message:assistant"]++
			case blk.Name == "execute_command":
				c["command"]++
			case blk.Name == "read_file" && blk.Input["path"] != "":
				c["read"]++
			case (blk.Name == "write_to_file" || blk.Name == "replace_in_file") && blk.Input["path"] != "":
				c["edit"]++
			default:
				c["other:"+blk.Name]++
			}
		}
	}
	return c
}

// agentlogsHistory is the sample task's history. Its files are not named as
// Cline names them, so Discover does not find them: the task is built by
// hand.
const agentlogsHistory = "testdata/agentlogs_api_conversation_history.excerpt.json"

func parseAgentlogsTask(t testing.TB) *adapters.Session {
	t.Helper()
	return ParseTask(Task{
		ID:         "1770913324842",
		APIHistory: file(t, agentlogsHistory),
		Metadata:   file(t, "testdata/agentlogs_task_metadata.json"),
	})
}

// TestSamplesImport imports the Cline sample task into a store and
// compares the steps stored with counts taken from the raw history.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	s := parseAgentlogsTask(t)
	if s == nil || len(s.Problems) > 0 {
		t.Fatalf("ParseTask(%s) = %v", agentlogsHistory, s)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, b := range s.Batches {
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatalf("Apply = %v", err)
		}
	}
	d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", s.ID, err)
	}
	got, prompts := map[string]int{}, 0
	for _, step := range d.Steps {
		switch {
		case step.Type == store.TypeMessage && step.Payload.Role == "user":
			prompts++
		case step.Type == store.TypeMessage && step.Payload.Role == "system":
			// Text Cline injected into a user message (task_progress,
			// environment details): not a prompt, not a tool call.
		case step.Type == store.TypeMessage:
			got["message:"+step.Payload.Role]++
		case step.Type == store.TypeOther:
			got["other:"+step.Payload.ToolName]++
		default:
			got[step.Type]++
		}
	}
	want := scanHistory(t, agentlogsHistory)
	if want["read"] == 0 {
		t.Fatalf("scan of %s found no read_file calls; the sample or the scan is wrong", agentlogsHistory)
	}
	if !maps.Equal(got, want) {
		t.Errorf("stored steps %v; the raw history has %v", got, want)
	}
	// The excerpt holds one human prompt: the <task> of the first message.
	if prompts != 1 {
		t.Errorf("stored %d user prompts; the raw history has 1 (<task>)", prompts)
	}
}
