package qwencode

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// rawRecords reads a chat recording the way Qwen Code's ChatRecord
// describes it, apart from the adapter: one JSON object per line.
func rawRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawParts are a record's message parts.
func rawParts(m map[string]any) []map[string]any {
	msg, _ := m["message"].(map[string]any)
	list, _ := msg["parts"].([]any)
	var out []map[string]any
	for _, p := range list {
		if pm, ok := p.(map[string]any); ok {
			out = append(out, pm)
		}
	}
	return out
}

// failure is a tool call the raw file says failed.
type failure struct{ errorType, message string }

// scanned is what a session should hold, counted from the raw records.
type scanned struct {
	steps    map[string]int // by type, messages by role, other steps by tool
	turns    int
	failures map[string]failure // by call id
	usage    adapters.Usage     // from the assistant records' usageMetadata
	reported adapters.Usage     // from the ui_telemetry api_response events
}

// scanSession counts, from the raw records, the steps a session should
// have: prompts as user messages (each a turn), each reply's thought parts
// as one thinking message and its other text parts as one assistant
// message, each functionCall by the step its tool maps to, a compression's
// summary; the calls whose result has status error; and the token usage,
// both as the replies carry it and as the telemetry reports it.
func scanSession(t *testing.T, path string) scanned {
	t.Helper()
	sc := scanned{steps: map[string]int{}, failures: map[string]failure{}}
	num := func(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }
	for _, m := range rawRecords(t, path) {
		switch m["type"] {
		case "user":
			if m["subtype"] == nil {
				sc.steps["message:user"]++
				sc.turns++
			}
		case "assistant":
			var thought, text bool
			for _, p := range rawParts(m) {
				s, isText := p["text"].(string)
				switch {
				case isText && p["thought"] == true:
					thought = thought || strings.TrimSpace(s) != ""
				case isText:
					text = text || strings.TrimSpace(s) != ""
				}
				fc, ok := p["functionCall"].(map[string]any)
				if !ok {
					continue
				}
				switch name, _ := fc["name"].(string); name {
				case "run_shell_command":
					sc.steps["command"]++
				case "edit", "replace", "write_file":
					sc.steps["edit"]++
				case "read_file":
					sc.steps["read"]++
				default:
					sc.steps["other:"+name]++
				}
			}
			if thought {
				sc.steps["message:thinking"]++
			}
			if text {
				sc.steps["message:assistant"]++
			}
			if u, ok := m["usageMetadata"].(map[string]any); ok {
				sc.usage.APIRequests++
				sc.usage.Input += num(u, "promptTokenCount") - num(u, "cachedContentTokenCount")
				// Thoughts are output; they are among the candidates unless
				// the total counts them apart (Gemini's API).
				sc.usage.Output += num(u, "candidatesTokenCount")
				if th := num(u, "thoughtsTokenCount"); th > 0 && num(u, "totalTokenCount") == num(u, "promptTokenCount")+num(u, "candidatesTokenCount")+th {
					sc.usage.Output += th
				}
				sc.usage.CacheRead += num(u, "cachedContentTokenCount")
			}
		case "tool_result":
			r, _ := m["toolCallResult"].(map[string]any)
			if r["status"] != "error" || r["errorType"] == "execution_denied" {
				continue
			}
			for _, p := range rawParts(m) {
				fr, _ := p["functionResponse"].(map[string]any)
				resp, _ := fr["response"].(map[string]any)
				id, _ := r["callId"].(string)
				et, _ := r["errorType"].(string)
				msg, _ := resp["error"].(string)
				sc.failures[id] = failure{et, msg}
			}
		case "system":
			payload, _ := m["systemPayload"].(map[string]any)
			switch m["subtype"] {
			case "chat_compression":
				sc.steps["message:summary"]++
			case "ui_telemetry":
				ev, _ := payload["uiEvent"].(map[string]any)
				if name, _ := ev["event.name"].(string); strings.HasSuffix(name, ".api_response") {
					sc.reported.APIRequests++
					sc.reported.Input += num(ev, "input_token_count") - num(ev, "cached_content_token_count")
					sc.reported.Output += num(ev, "output_token_count")
					sc.reported.CacheRead += num(ev, "cached_content_token_count")
				}
			}
		}
	}
	return sc
}

// TestSamplesImport imports the real sample and the hand-made fixture into
// a store and compares the stored steps, turns, failed calls and usage with
// what the raw files say.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	units, problems := Discover([]string{"testdata"})
	if len(problems) > 0 || len(units) != 2 {
		t.Fatalf("Discover(testdata) = %d units, %v; want the sample and the hand-made file", len(units), problems)
	}
	for _, u := range units {
		path := u.Paths[0]
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := adapterstest.ParseUnit(t, Agent, u)
			if len(s.Problems) > 0 || len(s.Incomplete) > 0 {
				t.Errorf("Parse(%s) problems %v, incomplete %v; want none", path, s.Problems, s.Incomplete)
			}
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			im := &adapters.Importer{Store: st}
			sum, err := im.Run(ctx, Agent, []string{path})
			if err != nil || sum.New != 1 {
				t.Fatalf("import %s = %+v, %v; want 1 new session", path, sum, err)
			}
			d, err := st.Detail(ctx, u.ID, store.DetailQuery{})
			if err != nil {
				t.Fatalf("Detail(%s) = %v", u.ID, err)
			}
			want := scanSession(t, path)
			if want.steps["message:user"] == 0 || len(want.failures) == 0 || want.usage.APIRequests == 0 {
				t.Fatalf("scan of %s found %+v; the sample or the scan is wrong", path, want)
			}
			got := map[string]int{}
			byID := map[string]store.Step{}
			for _, step := range d.Steps {
				byID[step.ID] = step
				switch step.Type {
				case store.TypeMessage:
					got["message:"+step.Payload.Role]++
				case store.TypeOther:
					got["other:"+step.Payload.ToolName]++
				default:
					got[step.Type]++
				}
			}
			if !maps.Equal(got, want.steps) {
				t.Errorf("stored steps %v; the raw file has %v", got, want.steps)
			}
			if len(d.Turns) != want.turns {
				t.Errorf("stored %d turns; want %d, one per prompt", len(d.Turns), want.turns)
			}
			for id, f := range want.failures {
				step, ok := byID[id]
				if !ok || step.Outcome != adapters.OutcomeFailed || step.Error == nil || *step.Error != (store.StepError{Type: f.errorType, Message: f.message}) {
					t.Errorf("call %s stored as %+v (error %+v); want failed, %s: %q", id, step, step.Error, f.errorType, f.message)
				}
			}
			if s.Usage == nil || *s.Usage != want.usage {
				t.Errorf("Usage = %+v; the replies report %+v", s.Usage, want.usage)
			}
			wantTokens := pricing.Tokens{Input: want.usage.Input, Output: want.usage.Output, CacheRead: want.usage.CacheRead}
			if d.Usage == nil || d.Usage.APIRequests != want.usage.APIRequests || d.Usage.Tokens != wantTokens {
				t.Errorf("stored usage = %+v; want %d requests of %+v", d.Usage, want.usage.APIRequests, wantTokens)
			}
			if want.reported.APIRequests > 0 && want.reported != want.usage {
				t.Errorf("telemetry reports %+v, the replies %+v; want the same responses", want.reported, want.usage)
			}
			if d.Metrics != nil {
				t.Errorf("metrics = %+v; want none, Qwen Code reports no cost", d.Metrics)
			}
			if d.Session.Agent.Kind != Kind || d.Session.Agent.Version != rawRecords(t, path)[0]["version"] {
				t.Errorf("agent = %+v; want %s and the first record's version", d.Session.Agent, Kind)
			}
		})
	}
}
