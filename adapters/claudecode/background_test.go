package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
)

// backgroundVariant derives a transcript from two real samples: the
// excerpt that holds a task notification, with the background Bash call
// and its "running in background" result from tool_heavy.jsonl inserted
// before the notification, renamed to the notification's task id. It
// returns the transcript, the call's id and the notification's text.
func backgroundVariant(t *testing.T, edit func(notification string) string) ([]byte, string, string) {
	t.Helper()
	excerpt := mustLines(t, "testdata/spotter/258c7280_excerpt_lines_481-630.jsonl")
	heavy := mustLines(t, "testdata/spotter/tool_heavy.jsonl")
	var call, result map[string]any
	for _, r := range heavy {
		if tur, ok := r["toolUseResult"].(map[string]any); ok && tur["backgroundTaskId"] != nil {
			result = r
		}
	}
	if result == nil {
		t.Fatal("tool_heavy.jsonl has no background command")
	}
	oldTask := result["toolUseResult"].(map[string]any)["backgroundTaskId"].(string)
	callID := result["message"].(map[string]any)["content"].([]any)[0].(map[string]any)["tool_use_id"].(string)
	for _, r := range heavy {
		if r["type"] == "assistant" && strings.Contains(mustJSON(t, r), `"id":"`+callID+`"`) {
			call = r
		}
	}
	at, notification := -1, ""
	for i, r := range excerpt {
		msg, _ := r["message"].(map[string]any)
		if s, ok := msg["content"].(string); ok && strings.HasPrefix(s, "<task-notification>") {
			at, notification = i, edit(s)
			msg["content"] = notification
		}
	}
	if call == nil || at < 1 {
		t.Fatal("the samples have no background call or no task notification")
	}
	task := regexp.MustCompile(`<task-id>(.*?)</task-id>`).FindStringSubmatch(notification)[1]
	var out bytes.Buffer
	for i, r := range excerpt {
		if i == at {
			for _, ins := range []map[string]any{call, result} {
				ins["sessionId"], ins["timestamp"] = r["sessionId"], excerpt[at-1]["timestamp"]
				out.WriteString(strings.ReplaceAll(mustJSON(t, ins), oldTask, task) + "\n")
			}
		}
		out.WriteString(mustJSON(t, r) + "\n")
	}
	return out.Bytes(), callID, notification
}

func mustLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBackgroundCommandNotification imports a background Bash call and the
// notification of its completion (as recorded, and a variant where it
// failed): the command step gets the exit code and outcome the
// notification states and shows the notification in its output, which
// makes no message of its own.
func TestBackgroundCommandNotification(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spill bool // every finished step spilled: the command must wait for its notification unspilled
		edit  func(string) string
	}{
		{"completed", false, func(s string) string { return s }},
		{"completed, spilled", true, func(s string) string { return s }},
		{"failed", false, func(s string) string {
			s = strings.Replace(s, "<status>completed</status>", "<status>failed</status>", 1)
			return strings.Replace(s, "completed (exit code 0)", "failed with exit code 2 (exit code 2)", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spill {
				was := adapters.SpillAfter
				adapters.SpillAfter = 0
				t.Cleanup(func() { adapters.SpillAfter = was })
			}
			transcript, callID, notification := backgroundVariant(t, tc.edit)
			m := regexp.MustCompile(`\(exit code (-?\d+)\)`).FindStringSubmatch(notification)
			if m == nil {
				t.Fatalf("notification %q states no exit code", notification)
			}
			wantCode, _ := strconv.ParseInt(m[1], 10, 64)
			wantOutcome := "ok"
			if wantCode != 0 {
				wantOutcome = "failed"
			}
			d := importSpawn(t, transcript, false)
			found := false
			for _, st := range d.Steps {
				if st.ID == callID {
					found = true
					if st.Payload.ExitCode == nil || *st.Payload.ExitCode != wantCode || st.Outcome != wantOutcome ||
						!strings.Contains(deref(st.Payload.Stdout), notification) {
						t.Errorf("background command = exit %v %s stdout %q; want exit %d %s with the notification",
							st.Payload.ExitCode, st.Outcome, deref(st.Payload.Stdout), wantCode, wantOutcome)
					}
				}
				if st.Type == "message" && strings.HasPrefix(deref(st.Payload.Text), "<task-notification>") {
					t.Errorf("the notification is a message of its own (step %s); want it in the command's step", st.ID)
				}
			}
			if !found {
				t.Fatalf("no step %s", callID)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
