package copilotcli

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// stepKind is the step a Copilot tool maps to, read from the raw name and
// arguments: shells are "command", view a "read", create, edit and
// str_replace an "edit", anything else "other:<name>".
func stepKind(name string, args json.RawMessage) string {
	var a struct{ Command string }
	json.Unmarshal(args, &a)
	op := name
	if name == "str_replace_editor" {
		op = a.Command
	}
	switch op {
	case "bash":
		return "command"
	case "view":
		return "read"
	case "create", "edit", "str_replace":
		return "edit"
	}
	return "other:" + name
}

// rawCounts is what the raw files hold, counted here from their JSON:
// prompts, replies, thinking, tool calls by kind, failed calls, and the
// tokens of session.shutdown.
type rawCounts struct {
	steps  map[string]int
	failed int
	usage  *adapters.Usage
}

// scanEvents counts an events.jsonl log: user.message with content is a
// prompt (without, Copilot's nudge: a system message), assistant.message
// content a reply and reasoningText thinking, and each distinct toolCallId
// of a toolRequest or tool.execution_start one call.
func scanEvents(t *testing.T, path string) rawCounts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := rawCounts{steps: map[string]int{}}
	calls := map[string]bool{}
	call := func(id, name string, args json.RawMessage) {
		if !calls[id] {
			calls[id] = true
			c.steps[stepKind(name, args)]++
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev struct {
			Type string
			Data struct {
				Content, ReasoningText, ToolCallID, ToolName string
				Arguments                                    json.RawMessage
				Success                                      *bool
				ToolRequests                                 []struct {
					ToolCallID, Name string
					Arguments        json.RawMessage
				}
				ModelMetrics map[string]struct {
					Requests struct{ Count int64 }
					Usage    struct{ InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64 }
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		d := ev.Data
		switch ev.Type {
		case "user.message":
			if d.Content != "" {
				c.steps["message:user"]++
			} else {
				c.steps["message:system"]++
			}
		case "assistant.message":
			if d.Content != "" {
				c.steps["message:assistant"]++
			}
			if d.ReasoningText != "" {
				c.steps["message:thinking"]++
			}
			for _, r := range d.ToolRequests {
				call(r.ToolCallID, r.Name, r.Arguments)
			}
		case "tool.execution_start":
			call(d.ToolCallID, d.ToolName, d.Arguments)
		case "tool.execution_complete":
			if d.Success != nil && !*d.Success {
				c.failed++
			}
		case "session.shutdown": // accumulated over the session: the last counts
			c.usage = &adapters.Usage{}
			for _, m := range d.ModelMetrics {
				c.usage.APIRequests += m.Requests.Count
				// inputTokens counts every input token, the cached ones
				// included (github/copilot-sdk#1160): the usage's input is
				// the rest.
				if m.Usage.InputTokens < m.Usage.CacheReadTokens+m.Usage.CacheWriteTokens {
					t.Fatalf("%s: inputTokens %d under its cached tokens: not the total it should be", path, m.Usage.InputTokens)
				}
				c.usage.Input += m.Usage.InputTokens - m.Usage.CacheReadTokens - m.Usage.CacheWriteTokens
				c.usage.Output += m.Usage.OutputTokens
				c.usage.CacheRead += m.Usage.CacheReadTokens
				c.usage.CacheCreation += m.Usage.CacheWriteTokens
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// scanHistory counts a legacy file's timeline: user entries are prompts,
// copilot entries replies, tool_call_completed entries calls.
func scanHistory(t *testing.T, path string) rawCounts {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Timeline []struct {
			Type, Text, Name string
			Arguments        json.RawMessage
			Result           struct{ Type string }
		}
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	c := rawCounts{steps: map[string]int{}}
	for _, e := range h.Timeline {
		switch e.Type {
		case "user":
			c.steps["message:user"]++
		case "copilot":
			if e.Text != "" {
				c.steps["message:assistant"]++
			}
		case "tool_call_completed":
			c.steps[stepKind(e.Name, e.Arguments)]++
			if e.Result.Type != "success" {
				c.failed++
			}
		}
	}
	return c
}

// TestSamplesImport imports every sample through the import runner into a
// store file and compares the steps stored with counts taken from the raw
// files, and the reported tokens with session.shutdown's.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	units, problems := Discover([]string{"testdata"})
	if len(problems) > 0 || len(units) != 2 {
		t.Fatalf("Discover(testdata) = %d units, %v; want the 2 samples", len(units), problems)
	}
	sum, err := (&adapters.Importer{Store: st}).Run(ctx, Agent, []string{"testdata"})
	if err != nil || len(sum.Problems) > 0 || sum.New != 2 {
		t.Fatalf("Run = %v, %v; want 2 new sessions and no problems", sum, err)
	}
	for _, u := range units {
		path := u.Paths[0]
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := scanEvents
			if filepath.Ext(path) == ".json" {
				want = scanHistory
			}
			raw := want(t, path)
			if raw.steps["message:user"] == 0 || len(raw.steps) < 4 {
				t.Fatalf("scan of %s found %v; the sample or the scan is wrong", path, raw.steps)
			}
			s := Parse(u, filesOf(t, path))
			if s.Usage == nil && raw.usage != nil || s.Usage != nil && (raw.usage == nil || *s.Usage != *raw.usage) {
				t.Errorf("Usage = %+v; session.shutdown reports %+v", s.Usage, raw.usage)
			}
			d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
			if err != nil {
				t.Fatalf("Detail(%s) = %v", s.ID, err)
			}
			got, failed := map[string]int{}, 0
			for _, step := range d.Steps {
				switch step.Type {
				case store.TypeMessage:
					got["message:"+step.Payload.Role]++
				case store.TypeOther:
					got["other:"+step.Payload.ToolName]++
				default:
					got[step.Type]++
				}
				if step.Outcome == adapters.OutcomeFailed || step.Outcome == adapters.OutcomeNotRun {
					failed++
				}
			}
			if !maps.Equal(got, raw.steps) || failed != raw.failed {
				t.Errorf("stored steps %v, %d failed; the raw file has %v, %d failed", got, failed, raw.steps, raw.failed)
			}
			if d.Metrics != nil {
				t.Errorf("Metrics = %+v; Copilot reports no cost, so none", d.Metrics)
			}
		})
	}
}

func filesOf(t *testing.T, path string) []adapters.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []adapters.File{{Path: path, Body: f}}
}
