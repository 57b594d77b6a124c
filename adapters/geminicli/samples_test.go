package geminicli

import (
	"bufio"
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

// rawMessages reads a session file the way Gemini CLI documents it, apart
// from the adapter: a JSONL file's message lines, the last line of each id
// in the place of its first, or a JSON file's messages.
func rawMessages(t *testing.T, path string) []map[string]any {
	t.Helper()
	if strings.HasSuffix(path, ".json") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Messages []map[string]any }
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Messages
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	at := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		id, _ := m["id"].(string)
		if _, ok := m["type"]; !ok || id == "" {
			continue // the header, or a $set line
		}
		if i, ok := at[id]; ok {
			out[i] = m
			continue
		}
		at[id] = len(out)
		out = append(out, m)
	}
	return out
}

// scanSession counts, from the raw messages, the steps a session should
// have: prompts and replies as messages by role, each reply's thoughts as
// one thinking message, and each tool call by the step its tool maps to;
// and the token usage of the replies.
func scanSession(t *testing.T, path string) (map[string]int, adapters.Usage) {
	t.Helper()
	c := map[string]int{}
	var u adapters.Usage
	for _, m := range rawMessages(t, path) {
		switch m["type"] {
		case "user":
			c["message:user"]++
		case "info", "warning", "error":
			c["message:system"]++
		case "gemini":
			if th, _ := m["thoughts"].([]any); len(th) > 0 {
				c["message:thinking"]++
			}
			if s, _ := m["content"].(string); strings.TrimSpace(s) != "" {
				c["message:assistant"]++
			}
			calls, _ := m["toolCalls"].([]any)
			for _, call := range calls {
				name, _ := call.(map[string]any)["name"].(string)
				switch name {
				case "run_shell_command":
					c["command"]++
				case "replace", "edit", "write_file":
					c["edit"]++
				case "read_file":
					c["read"]++
				default:
					c["other:"+name]++
				}
			}
			if tok, ok := m["tokens"].(map[string]any); ok {
				in, out, cached := tok["input"].(float64), tok["output"].(float64), tok["cached"].(float64)
				thoughts, tool := tok["thoughts"].(float64), tok["tool"].(float64)
				// The Gemini API's total is the prompt (cached tokens
				// included), the candidates, the thoughts and a tool's
				// prompt; thoughts are billed as output, a tool's prompt
				// as input.
				if in+out+thoughts+tool != tok["total"].(float64) {
					t.Fatalf("%s: tokens %v do not add up to their total", path, tok)
				}
				u.APIRequests++
				u.Input += int64(in - cached + tool)
				u.Output += int64(out + thoughts)
				u.CacheRead += int64(cached)
			}
		}
	}
	return c, u
}

// TestSamplesImport imports every Gemini CLI sample (both formats) into a
// store and compares the stored steps and the usage with counts taken from
// the raw files.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	units, problems := Discover([]string{"testdata/tmp"})
	if len(problems) > 0 || len(units) != 2 {
		t.Fatalf("Discover(testdata/tmp) = %d units, %v; want the 2 samples", len(units), problems)
	}
	for _, u := range units {
		path := u.Paths[0]
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := adapterstest.ParseUnit(t, Agent, u)
			if len(s.Problems) > 0 {
				t.Errorf("Parse(%s) problems: %v", path, s.Problems)
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
			d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
			if err != nil {
				t.Fatalf("Detail(%s) = %v", s.ID, err)
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
			want, usage := scanSession(t, path)
			if want["message:user"] == 0 || want["edit"] == 0 || want["read"] == 0 || usage.APIRequests == 0 {
				t.Fatalf("scan of %s found %v, %+v; the sample or the scan is wrong", path, want, usage)
			}
			if !maps.Equal(got, want) {
				t.Errorf("stored steps %v; the raw file has %v", got, want)
			}
			// A turn per prompt, and one for what comes before the first
			// (the builder's rule).
			turns := want["message:user"]
			if first := rawMessages(t, path)[0]; first["type"] != "user" {
				turns++
			}
			if len(d.Turns) != turns {
				t.Errorf("stored %d turns; want %d from the raw file's user messages", len(d.Turns), turns)
			}
			// Each reply's thoughts as the model wrote them: the bold
			// subject, then its description, a paragraph each.
			var wantThoughts, gotThoughts []string
			for _, m := range rawMessages(t, path) {
				th, _ := m["thoughts"].([]any)
				var parts []string
				for _, x := range th {
					x := x.(map[string]any)
					parts = append(parts, "**"+x["subject"].(string)+"**\n\n"+strings.TrimSpace(x["description"].(string)))
				}
				if len(parts) > 0 {
					wantThoughts = append(wantThoughts, strings.Join(parts, "\n\n"))
				}
			}
			for _, step := range d.Steps {
				if step.Type == store.TypeMessage && step.Payload.Role == "thinking" && step.Payload.Text != nil {
					gotThoughts = append(gotThoughts, *step.Payload.Text)
				}
			}
			if len(wantThoughts) == 0 || !slices.Equal(gotThoughts, wantThoughts) {
				t.Errorf("thinking texts %q; the raw file's thoughts are %q", gotThoughts, wantThoughts)
			}
			if s.Usage == nil || *s.Usage != usage {
				t.Errorf("Usage = %+v; the raw file reports %+v", s.Usage, usage)
			}
			if d.Metrics != nil {
				t.Errorf("metrics = %+v; want none, Gemini reports no cost", d.Metrics)
			}
		})
	}
}
