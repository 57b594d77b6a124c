package cline

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

// TestTaskFolderTimes imports the real task folder (history and metadata,
// no ui_messages.json): the prompt is at the task's start (its id), and the
// steps of a reply with file tool calls are at the first time
// task_metadata records Cline reading one of those files, not all at the
// task's start.
func TestTaskFolderTimes(t *testing.T) {
	const dir = "testdata/tasks/1770913324799"
	var meta struct {
		Files []struct {
			Path     string `json:"path"`
			ReadDate *int64 `json:"cline_read_date"`
		} `json:"files_in_context"`
	}
	var history []struct {
		Role    string `json:"role"`
		Content []struct {
			Type  string `json:"type"`
			ID    string `json:"id"`
			Input struct {
				Path string `json:"path"`
			} `json:"input"`
		} `json:"content"`
	}
	for name, v := range map[string]any{"task_metadata.json": &meta, "api_conversation_history.json": &history} {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	read := map[string]int64{}
	for _, f := range meta.Files {
		if f.ReadDate != nil && (read[f.Path] == 0 || *f.ReadDate < read[f.Path]) {
			read[f.Path] = *f.ReadDate
		}
	}
	want := map[string]string{} // tool_use id -> time
	for _, m := range history {
		var first int64
		var ids []string
		for _, b := range m.Content {
			if b.Type == "tool_use" && read[b.Input.Path] != 0 {
				ids = append(ids, b.ID)
				if first == 0 || read[b.Input.Path] < first {
					first = read[b.Input.Path]
				}
			}
		}
		for _, id := range ids {
			want[id] = adapters.UnixMilli(first).Text
		}
	}
	if len(want) == 0 {
		t.Fatal("no tool call of the sample reads a file task_metadata records")
	}
	s := adapterstest.ParseRoots(t, Agent, dir)["1770913324799"]
	if s == nil {
		t.Fatal("the task folder gives no session 1770913324799")
	}
	mustValid(t, s)
	a := gather(s)
	for id, at := range want {
		if got := a.step(t, id).At; got != at {
			t.Errorf("step %s at %s; want %s, when Cline read its file", id, got, at)
		}
	}
	start := adapters.UnixMilli(1770913324799).Text
	if a.header.StartedAt != start || a.turns[0].StartedAt != start {
		t.Errorf("session and first turn start at %s, %s; want the task's id %s", a.header.StartedAt, a.turns[0].StartedAt, start)
	}
	last, _ := time.Parse(time.RFC3339Nano, a.steps[len(a.steps)-1].At)
	if first, _ := time.Parse(time.RFC3339Nano, a.steps[0].At); !last.After(first) {
		t.Errorf("steps span %s to %s; want a duration", a.steps[0].At, a.steps[len(a.steps)-1].At)
	}
}
