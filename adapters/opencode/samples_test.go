package opencode

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/opencode/opencodetest"
	"github.com/agentreview/service/store"
)

// rawMessage is a message with its parts as plain JSON values, read by the
// test itself rather than by the adapter's types.
type rawMessage struct {
	info  map[string]any
	parts []map[string]any
}

// rawExport reads an `opencode export` file.
func rawExport(t *testing.T, path string) []rawMessage {
	var ex struct {
		Messages []struct {
			Info  map[string]any   `json:"info"`
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	opencodetest.MustJSON(t, path, &ex)
	var out []rawMessage
	for _, m := range ex.Messages {
		out = append(out, rawMessage{m.Info, m.Parts})
	}
	return out
}

// rawStorage reads every message and part file of a storage folder.
func rawStorage(t *testing.T, storage string) []rawMessage {
	var out []rawMessage
	msgs, _ := filepath.Glob(filepath.Join(storage, "message", "*", "*.json"))
	for _, mf := range msgs {
		var m rawMessage
		opencodetest.MustJSON(t, mf, &m.info)
		parts, _ := filepath.Glob(filepath.Join(storage, "part", m.info["id"].(string), "*.json"))
		for _, pf := range parts {
			var p map[string]any
			opencodetest.MustJSON(t, pf, &p)
			m.parts = append(m.parts, p)
		}
		out = append(out, m)
	}
	return out
}

// counts counts the steps a session's raw records make, by kind: user
// prompts (user messages with text of their own), assistant text and
// reasoning with text, and tool parts by the step they map to (bash is a
// command, read a read, write and edit an edit, each file of an
// apply_patch an edit, any other tool other:<name>); and the tokens the
// assistant messages report.
func counts(msgs []rawMessage) (map[string]int, store.Tokens) {
	c := map[string]int{}
	var tok store.Tokens
	num := func(m map[string]any, keys ...string) int64 {
		var v any = m
		for _, k := range keys {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		f, _ := v.(float64)
		return int64(f)
	}
	for _, m := range msgs {
		role := m.info["role"]
		if role == "assistant" {
			tok.Input += num(m.info, "tokens", "input")
			tok.Output += num(m.info, "tokens", "output")
			tok.CacheRead += num(m.info, "tokens", "cache", "read")
			tok.CacheCreation += num(m.info, "tokens", "cache", "write")
		}
		prompt := false
		for _, p := range m.parts {
			text, _ := p["text"].(string)
			synthetic, _ := p["synthetic"].(bool)
			hasText := strings.TrimSpace(text) != "" && !synthetic
			switch {
			case role == "user" && p["type"] == "text" && hasText:
				prompt = true
			case role != "assistant":
			case p["type"] == "text" && hasText:
				c["message:assistant"]++
			case p["type"] == "reasoning" && strings.TrimSpace(text) != "":
				c["message:thinking"]++
			case p["type"] == "tool":
				tool, _ := p["tool"].(string)
				switch tool {
				case "bash":
					c["command"]++
				case "read":
					c["read"]++
				case "write", "edit":
					c["edit"]++
				case "apply_patch":
					in, _ := p["state"].(map[string]any)["input"].(map[string]any)
					patch, _ := in["patchText"].(string)
					for _, line := range strings.Split(patch, "\n") {
						if strings.HasPrefix(line, "*** Add File: ") || strings.HasPrefix(line, "*** Update File: ") || strings.HasPrefix(line, "*** Delete File: ") {
							c["edit"]++
						}
					}
				default:
					c["other:"+tool]++
				}
			}
		}
		if prompt {
			c["message:user"]++
		}
	}
	return c, tok
}

// TestSamplesImport imports every opencode sample (the two exports, the
// JSON storage of opencode 1.1, and that storage as the SQLite files of 1.2
// and 1.16) through the import runner into a store, and compares the
// stored steps and metrics with counts taken from the raw files.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	storage := filepath.Join("testdata", "storage-derived", "storage")
	cases := []struct {
		name  string
		root  func(t *testing.T) string
		raw   []rawMessage
		usage bool
	}{
		{"crud export", func(*testing.T) string { return "testdata/agentlogs_crud_export.json" }, rawExport(t, "testdata/agentlogs_crud_export.json"), false},
		{"all tools export", func(*testing.T) string { return "testdata/agentlogs_all_tools_export.json" }, rawExport(t, "testdata/agentlogs_all_tools_export.json"), false},
		{"storage 1.1", func(*testing.T) string { return "testdata/storage-derived" }, rawStorage(t, storage), false},
		{"sqlite 1.2", func(t *testing.T) string { return opencodetest.MustDB(t, storage, t.TempDir(), false) }, rawStorage(t, storage), false},
		{"sqlite 1.16", func(t *testing.T) string { return opencodetest.MustDB(t, storage, t.TempDir(), true) }, rawStorage(t, storage), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			im := &adapters.Importer{Store: st}
			sum, err := im.Run(ctx, Agent, []string{tc.root(t)})
			if err != nil || len(sum.Problems) > 0 {
				t.Fatalf("Run = %v, problems %v", err, sum.Problems)
			}
			if sum.Sessions != 1 || sum.New != 1 {
				t.Fatalf("Run = %s; want 1 new session", sum)
			}
			list, err := st.List(ctx, store.ListQuery{})
			if err != nil || len(list.Sessions) != 1 {
				t.Fatalf("List = %v, %v; want 1 session", list, err)
			}
			d, err := st.Detail(ctx, list.Sessions[0].ID, store.DetailQuery{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, step := range d.Steps {
				switch step.Type {
				case store.TypeMessage:
					got["message:"+step.Payload.Role]++
				case store.TypeOther:
					got["other:"+step.Payload.ToolName]++
				default:
					got[step.Type]++
				}
			}
			want, tokens := counts(tc.raw)
			if want["command"] == 0 || want["edit"] == 0 || want["message:user"] == 0 {
				t.Fatalf("raw counts %v lack commands, edits or prompts; the sample or the count is wrong", want)
			}
			if !maps.Equal(got, want) {
				t.Errorf("stored steps %v; the raw files have %v", got, want)
			}
			if len(d.Turns) != want["message:user"] {
				t.Errorf("stored %d turns; the raw files have %d prompts", len(d.Turns), want["message:user"])
			}
			if d.Metrics == nil {
				t.Fatal("stored metrics = nil; want the reported ones")
			}
			if d.Metrics.Tokens != tokens {
				t.Errorf("stored tokens %+v; the raw files report %+v", d.Metrics.Tokens, tokens)
			}
			if tc.usage && d.Metrics.CostUSD != opencodetest.FixtureCost {
				t.Errorf("stored cost %v; the session row reports %v", d.Metrics.CostUSD, opencodetest.FixtureCost)
			}
		})
	}
}
