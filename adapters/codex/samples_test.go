package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// tokenCounts are the counts of a token_count event's total.
type tokenCounts struct {
	Input  int64 `json:"input_tokens"` // the cached tokens included
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

// scanRollout counts a rollout's tool calls straight from its lines, by
// the step each maps to: shell calls are "command", each file of an
// apply_patch is one "edit", view_image is "read", any other tool is
// "other:<name>"; and the user's prompts (event_msg user_message) and the
// agent's replies (event_msg agent_message) as messages. It also gives
// the rollout's usage as Codex reckons it: the running total of its last
// token_count event, and its requests, one for each event whose total
// moved (Codex writes the same event again after the next turn_context).
func scanRollout(t *testing.T, path string) (c map[string]int, total tokenCounts, requests int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c = map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type      string `json:"type"`
				Name      string `json:"name"`
				Input     string `json:"input"`
				Arguments string `json:"arguments"`
				Info      *struct {
					Total tokenCounts `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		p := rec.Payload
		switch {
		case rec.Type == "event_msg" && p.Type == "token_count":
			if p.Info != nil && p.Info.Total != total {
				requests++
				total = p.Info.Total
			}
		case rec.Type == "event_msg" && p.Type == "user_message":
			c["message:user"]++
		case rec.Type == "event_msg" && p.Type == "agent_message":
			c["message:assistant"]++
		case rec.Type != "response_item":
		case p.Type == "local_shell_call":
			c["command"]++
		case p.Type == "web_search_call":
			c["other:web_search"]++
		case p.Type == "function_call" || p.Type == "custom_tool_call":
			switch p.Name {
			case "exec_command", "shell", "shell_command", "container.exec":
				c["command"]++
			case "apply_patch":
				body := p.Input + p.Arguments
				if p.Type == "function_call" {
					var a struct{ Input string }
					json.Unmarshal([]byte(p.Arguments), &a)
					body = a.Input
				}
				for _, line := range strings.Split(body, "\n") {
					if strings.HasPrefix(line, "*** Add File: ") || strings.HasPrefix(line, "*** Update File: ") || strings.HasPrefix(line, "*** Delete File: ") {
						c["edit"]++
					}
				}
			case "view_image":
				c["read"]++
			default:
				c["other:"+p.Name]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return c, total, requests
}

// TestSamplesImport imports every Codex sample into a store and compares
// the steps stored with counts taken from the raw file.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no Codex samples in testdata")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			sessions := adapterstest.ParseRoots(t, Agent, path)
			if len(sessions) != 1 {
				t.Fatalf("Parse(%s) = %d sessions; want 1", path, len(sessions))
			}
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, s := range sessions {
				if len(s.Problems) > 0 {
					t.Errorf("Parse(%s) problems: %v", path, s.Problems)
				}
				for _, b := range s.Batches {
					if _, err := st.Apply(ctx, b); err != nil {
						t.Fatalf("Apply = %v", err)
					}
				}
				d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
				if err != nil {
					t.Fatalf("Detail(%s) = %v", s.ID, err)
				}
				got := map[string]int{}
				for _, step := range d.Steps {
					switch step.Type {
					case store.TypeMessage:
						if step.Payload.Role == "user" || step.Payload.Role == "assistant" {
							got["message:"+step.Payload.Role]++
						}
					case store.TypeOther:
						got["other:"+step.Payload.ToolName]++
					default:
						got[step.Type]++
					}
				}
				want, total, requests := scanRollout(t, path)
				if want["command"] == 0 {
					t.Fatalf("scan of %s found no shell calls; the sample or the scan is wrong", path)
				}
				if !maps.Equal(got, want) {
					t.Errorf("stored steps %v; the raw file has %v", got, want)
				}
				// The tokens shown are the rollout's own total, each request
				// once: input without the cached tokens, which are cache reads.
				if requests == 0 {
					t.Fatalf("scan of %s found no token counts; the sample or the scan is wrong", path)
				}
				if u := d.Usage; u == nil || u.Tokens.Input != total.Input-total.Cached || u.Tokens.CacheRead != total.Cached || u.Tokens.Output != total.Output || u.APIRequests != requests {
					t.Errorf("stored usage %+v; the rollout's own total is %+v over %d requests", u, total, requests)
				}
			}
		})
	}
}
