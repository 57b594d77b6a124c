package claudecode

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

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// sampleCounts are the steps a transcript should give, counted straight
// from its lines: tool calls by the step they map to ("command", "read",
// "edit", or "other:<tool name>"), and messages by role.
type sampleCounts map[string]int

// scanTranscript counts a Claude Code transcript's tool_use blocks (once
// per id), user prompts (string content, or text blocks, of user records
// that are not meta, not tool results and not compaction summaries) and
// assistant text and thinking blocks, without the parser.
func scanTranscript(t *testing.T, path string, into sampleCounts, seen map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Type             string `json:"type"`
			UUID             string `json:"uuid"`
			Subtype          string `json:"subtype"`
			Content          string `json:"content"`
			IsSidechain      bool   `json:"isSidechain"`
			AgentID          string `json:"agentId"`
			IsMeta           bool   `json:"isMeta"`
			IsCompactSummary bool   `json:"isCompactSummary"`
			Message          struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if rec.Type == "system" && rec.Subtype == "local_command" && strings.HasPrefix(strings.TrimSpace(rec.Content), "<command-name>") {
			countUserText(rec.Content, false, "", into, seen) // a slash command the CLI ran itself
			continue
		}
		if rec.Type != "user" && rec.Type != "assistant" {
			continue
		}
		if rec.UUID != "" {
			if seen["line:"+rec.UUID] {
				continue
			}
			seen["line:"+rec.UUID] = true
		}
		agent := ""
		if rec.IsSidechain || strings.HasPrefix(filepath.Base(path), "agent-") {
			agent = "agent:" + rec.AgentID
		}
		var text string
		if json.Unmarshal(rec.Message.Content, &text) == nil {
			if rec.Type == "user" && !rec.IsMeta {
				countUserText(text, rec.IsCompactSummary, agent, into, seen)
			}
			continue
		}
		var blocks []struct {
			Type     string                     `json:"type"`
			ID       string                     `json:"id"`
			Name     string                     `json:"name"`
			Text     string                     `json:"text"`
			Thinking string                     `json:"thinking"`
			Input    map[string]json.RawMessage `json:"input"`
		}
		json.Unmarshal(rec.Message.Content, &blocks)
		var texts []string
		for _, b := range blocks {
			switch {
			case b.Type == "tool_use" && !seen["tool:"+b.ID]:
				seen["tool:"+b.ID] = true
				into[toolStep(b.Name, b.Input)]++
			case rec.Type == "assistant" && b.Type == "text" && strings.TrimSpace(b.Text) != "":
				into["message:assistant"]++
			case rec.Type == "assistant" && b.Type == "thinking" && strings.TrimSpace(b.Thinking) != "":
				into["message:thinking"]++
			case rec.Type == "user" && b.Type == "text":
				texts = append(texts, b.Text)
			}
		}
		if len(texts) > 0 && !rec.IsMeta {
			countUserText(strings.Join(texts, "\n"), rec.IsCompactSummary, agent, into, seen)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// countUserText counts a user record's text as the transcript format
// documents it (AGENT-FORMATS.md 1.4, 1.7, 1.8): a compaction summary, a
// slash command, command output (no step), text the CLI injected, a
// subagent's task (its first prompt), or a human prompt.
func countUserText(text string, summary bool, agent string, into sampleCounts, seen map[string]bool) {
	t := strings.TrimSpace(text)
	switch {
	case summary:
		into["message:summary"]++
		return
	case strings.HasPrefix(t, "<command-name>") || strings.HasPrefix(t, "<command-message>"):
		name := t
		if i := strings.Index(t, "<command-name>"); i >= 0 {
			name = t[i+len("<command-name>"):]
			name, _, _ = strings.Cut(name, "</command-name>")
		}
		into["other:"+strings.TrimSpace(name)]++
		return
	case strings.HasPrefix(t, "<local-command-stdout>") || strings.HasPrefix(t, "<local-command-stderr>") ||
		strings.HasPrefix(t, "<bash-stdout>") || strings.HasPrefix(t, "<bash-stderr>"):
		return
	}
	for _, prefix := range []string{"[Request interrupted", "<task-notification>", "<system-reminder>",
		"<bash-notification>", "<local-command-caveat>", "<user-prompt-submit-hook>", "Caveat: The messages below"} {
		if strings.HasPrefix(t, prefix) {
			into["message:system"]++
			return
		}
	}
	if agent != "" {
		if seen[agent] {
			into["message:system"]++
		} else {
			seen[agent] = true
			into["message:task"]++
		}
		return
	}
	into["message:user"]++
}

// toolStep is the step a tool call maps to, per AGENT-FORMATS.md 7.2.
func toolStep(name string, input map[string]json.RawMessage) string {
	has := func(k string) bool { return len(input[k]) > 2 }
	switch {
	case name == "Bash":
		return "command"
	case name == "Read" && has("file_path"):
		return "read"
	case (name == "Write" || name == "Edit" || name == "MultiEdit") && has("file_path"),
		name == "NotebookEdit" && has("notebook_path"):
		return "edit"
	}
	return "other:" + name
}

// storedCounts counts a stored session's steps the same way.
func storedCounts(steps []store.Step) sampleCounts {
	c := sampleCounts{}
	for _, st := range steps {
		switch st.Type {
		case store.TypeMessage:
			c["message:"+st.Payload.Role]++
		case store.TypeOther:
			c["other:"+st.Payload.ToolName]++
		default:
			c[st.Type]++
		}
	}
	return c
}

// TestSamplesImport imports every Claude Code sample into a store and
// compares the steps stored with counts taken from the raw files.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	units, problems := Discover([]string{"testdata"})
	if len(problems) > 0 {
		t.Fatalf("Discover(testdata) problems: %v", problems)
	}
	imported := map[string]bool{}
	for _, u := range units {
		t.Run(filepath.Base(u.Paths[0]), func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			s := adapterstest.ParseUnit(t, Agent, u)
			if s == nil {
				t.Fatalf("Parse(%v) = nil; want a session", u.Paths)
			}
			if len(s.Problems) > 0 {
				t.Errorf("Parse(%v) problems: %v", u.Paths, s.Problems)
			}
			for _, b := range s.Batches {
				if _, err := st.Apply(ctx, b); err != nil {
					t.Fatalf("Apply(batch of %s) = %v", s.ID, err)
				}
			}
			d, err := st.Detail(ctx, s.ID, store.DetailQuery{})
			if err != nil {
				t.Fatalf("Detail(%s) = %v", s.ID, err)
			}
			want, seen := sampleCounts{}, map[string]bool{}
			for _, p := range u.Paths {
				abs, _ := filepath.Abs(p)
				imported[abs] = true
				scanTranscript(t, p, want, seen)
			}
			if len(want) == 0 {
				t.Fatalf("scan of %v found nothing; the sample or the scan is wrong", u.Paths)
			}
			got := storedCounts(d.Steps)
			if !maps.Equal(got, want) {
				for _, k := range slices.Sorted(maps.Keys(mergeKeys(got, want))) {
					if got[k] != want[k] {
						t.Errorf("%s: stored %d; the raw file has %d", k, got[k], want[k])
					}
				}
			}
		})
	}
	filepath.WalkDir("testdata", func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && filepath.Ext(p) == ".jsonl" && !imported[mustAbs(p)] {
			t.Errorf("sample %s was not imported", p)
		}
		return nil
	})
}

func mergeKeys(a, b sampleCounts) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func mustAbs(p string) string {
	abs, _ := filepath.Abs(p)
	return abs
}
