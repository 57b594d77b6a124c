package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/store"
)

// source is a page a web search named, as the agent's file has it.
type source struct{ Title, URL string }

// TestWebSearchOfRealSteps: Claude Code's WebSearch and Copilot CLI's
// web_search, from the real samples, show as a web search: the query, the
// answer and the sources, each read from the agent's file by the test.
func TestWebSearchOfRealSteps(t *testing.T) {
	t.Run("claude-code", func(t *testing.T) {
		const file = "../adapters/claudecode/testdata/spotter/tool_heavy.jsonl"
		var id, query, answer string
		var sources []source
		eachJSONLine(t, file, func(line []byte) {
			var rec struct {
				Message struct {
					Content json.RawMessage
				}
				ToolUseResult json.RawMessage `json:"toolUseResult"`
			}
			if json.Unmarshal(line, &rec) != nil {
				return
			}
			var blocks []struct {
				Type, ID, Name string
				ToolUseID      string `json:"tool_use_id"`
				Input          struct{ Query string }
			}
			_ = json.Unmarshal(rec.Message.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_use" && b.Name == "WebSearch" && id == "" {
					id, query = b.ID, b.Input.Query
				}
				if b.Type == "tool_result" && id != "" && b.ToolUseID == id && answer == "" {
					var r struct{ Results []json.RawMessage }
					if err := json.Unmarshal(rec.ToolUseResult, &r); err != nil {
						t.Fatal(err)
					}
					for _, x := range r.Results {
						var found struct{ Content []source }
						if json.Unmarshal(x, &answer) != nil && json.Unmarshal(x, &found) == nil {
							sources = append(sources, found.Content...)
						}
					}
				}
			}
		})
		checkWebSearch(t, claudecode.Agent, file, "WebSearch", query, answer, sources)
	})
	t.Run("copilot-cli", func(t *testing.T) {
		const file = "../adapters/copilotcli/testdata/session-state/96ef38f0-9d09-45c3-8124-6448c36090ed/events.jsonl"
		var id, query, answer string
		var sources []source
		eachJSONLine(t, file, func(line []byte) {
			var e struct {
				Type string
				Data struct {
					ToolCallID string `json:"toolCallId"`
					ToolName   string `json:"toolName"`
					Arguments  struct{ Query string }
					Result     struct{ Content string }
				}
			}
			if json.Unmarshal(line, &e) != nil {
				return
			}
			if e.Type == "tool.execution_start" && e.Data.ToolName == "web_search" && id == "" {
				id, query = e.Data.ToolCallID, e.Data.Arguments.Query
			}
			if e.Type == "tool.execution_complete" && id != "" && e.Data.ToolCallID == id && answer == "" {
				var c struct {
					Text struct {
						Value       string
						Annotations []struct {
							Citation source `json:"url_citation"`
						}
					}
				}
				if err := json.Unmarshal([]byte(e.Data.Result.Content), &c); err != nil {
					t.Fatal(err)
				}
				answer = c.Text.Value
				for _, a := range c.Text.Annotations {
					sources = append(sources, a.Citation)
				}
			}
		})
		checkWebSearch(t, copilotcli.Agent, file, "web_search", query, answer, sources)
	})
}

// checkWebSearch imports file and checks the first step of tool against
// the query, answer and sources read from the file.
func checkWebSearch(t *testing.T, agent adapters.Agent, file, tool, query, answer string, sources []source) {
	t.Helper()
	if query == "" || answer == "" || len(sources) == 0 {
		t.Fatalf("%s has no %s with a query, an answer and sources (%q, %.40q, %d)", file, tool, query, answer, len(sources))
	}
	s := newTestService(t)
	if _, err := (&adapters.Importer{Store: s.store}).Run(context.Background(), agent, []string{file}); err != nil {
		t.Fatal(err)
	}
	list, err := s.store.List(context.Background(), store.ListQuery{})
	if err != nil || len(list.Sessions) != 1 {
		t.Fatalf("List = %d sessions, %v; want the one imported", len(list.Sessions), err)
	}
	sid := list.Sessions[0].ID
	d, err := s.store.Detail(context.Background(), sid, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for _, st := range d.Steps {
		if st.Payload.ToolName == tool {
			seq = st.Seq
			break
		}
	}
	rec := s.get(fmt.Sprintf("/session/step?id=%s&seq=%d&all=1", sid, seq))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if rec.Code != http.StatusOK || err != nil {
		t.Fatalf("GET step %d = %d, %v", seq, rec.Code, err)
	}
	v := doc.Find(`[data-testid="tool-search"]`)
	if got := v.Find(`[data-testid="tool-field-Query"]`).Text(); got != query {
		t.Errorf("query = %q; want %q", got, query)
	}
	// The answer is shown as Markdown: its first line reads without the
	// marks.
	first, _, _ := strings.Cut(answer, "\n")
	first = strings.NewReplacer("**", "", "`", "", "#", "").Replace(first)
	if got := v.Find(`[data-testid="block-Answer"] [data-testid="markdown"]`).Text(); !strings.Contains(got, strings.TrimSpace(first)) {
		t.Errorf("answer = %.200q; want it to read %q", got, first)
	}
	var want []source
	seen := map[string]bool{}
	for _, src := range sources {
		if !seen[src.URL] {
			seen[src.URL] = true
			want = append(want, src)
		}
	}
	links := v.Find(`[data-testid="tool-sources"] li a`)
	if links.Length() != min(len(want), maxSources) {
		t.Fatalf("%d sources shown; want %d of the %d named", links.Length(), min(len(want), maxSources), len(sources))
	}
	links.Each(func(i int, a *goquery.Selection) {
		if href, _ := a.Attr("href"); href != want[i].URL || a.Text() != want[i].Title {
			t.Errorf("source %d = %q %q; want %q %q", i, a.Text(), href, want[i].Title, want[i].URL)
		}
	})
}

// TestWebSearchSourcesBounded: a search that names many sources shows
// maxSources of them and counts the rest; a source named twice shows once;
// a URL that is not http or https, or is longer than maxURLBytes, is not
// linked, and one whose scheme is in capitals is; a title shows on one
// line of at most lineChars.
func TestWebSearchSourcesBounded(t *testing.T) {
	var results []source
	for i := range 100 {
		results = append(results, source{fmt.Sprintf("page %d", i), fmt.Sprintf("https://example.com/%d", i)})
	}
	results = append(results,
		source{"again", "https://example.com/0"},
		source{"script", "javascript:alert(1)"},
		source{"data", "data:text/html,x"},
		source{"scheme case", "HTTPS://example.com/upper"},
		source{"long", "https://example.com/" + strings.Repeat("a", maxURLBytes)},
	)
	results[1].Title = "two\nlines " + strings.Repeat("t", 1000)
	results[2].Title = ""
	raw, err := json.Marshal(map[string]any{
		"input":  map[string]any{"query": "q"},
		"result": map[string]any{"query": "q", "results": []any{map[string]any{"content": results}, "the answer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := toolView("WebSearch", raw, 0)
	if v == nil || v.Kind != "search" || len(v.Sources) != maxSources || v.MoreSources != 101-maxSources {
		t.Fatalf("toolView = %+v; want a search with %d sources and %d more", v, maxSources, 101-maxSources)
	}
	if l, ok := sourceLink("", "HTTPS://example.com/upper"); !ok || l.Host != "example.com" {
		t.Errorf("sourceLink of HTTPS:// = %+v, %v; want it linked", l, ok)
	}
	for _, u := range []string{"javascript:alert(1)", "data:text/html,x", "https:example.com", "https:///path", "ftp://example.com/"} {
		if l, ok := sourceLink("", u); ok {
			t.Errorf("sourceLink(%q) = %+v; want no link", u, l)
		}
	}
	for i, l := range v.Sources {
		if l.URL != results[i].URL || l.Host != "example.com" || strings.Contains(l.Title, "\n") || len([]rune(l.Title)) > lineChars+1 {
			t.Errorf("source %d = %+v; want %s on one line", i, l, results[i].URL)
		}
	}
	if v.Sources[2].Title != results[2].URL {
		t.Errorf("a source without a title = %q; want its URL", v.Sources[2].Title)
	}
	if v.Result.Text.Shown != "the answer" {
		t.Errorf("answer = %q; want the answer", v.Result.Text.Shown)
	}
}

// TestWebSearchOfGemini: Gemini CLI records a call's result as its
// functionResponse parts: the web search shows the query and the parts'
// output as its answer.
func TestWebSearchOfGemini(t *testing.T) {
	raw := json.RawMessage(`{"input":{"query":"q"},"output":[{"functionResponse":{"name":"google_web_search","response":{"output":"Web search results for \"q\":\n\nthe answer"}}}]}`)
	v := toolView("google_web_search", raw, 0)
	if v == nil || v.Kind != "search" || len(v.Fields) != 1 || v.Fields[0].Value.Shown != "q" || v.Result.Text.Shown != "Web search results for \"q\":\n\nthe answer" {
		t.Fatalf("toolView = %+v; want the query and the parts' output", v)
	}
	if got := toolLine("google_web_search", raw); got != "q" {
		t.Errorf("toolLine = %q; want the query", got)
	}
}

// TestResultStringOfGeminiParts: the text of a Gemini CLI call's result,
// its functionResponse parts, is their output, for every call of the real
// sample (read from the file by the test, as the adapter keeps it).
func TestResultStringOfGeminiParts(t *testing.T) {
	const file = "../adapters/geminicli/testdata/tmp/9da8b3dfb8655182ac1f0e66601c367e34f8d18447a29759eeba4d7e45dc60ea/chats/gemini.jsonl"
	calls := 0
	eachJSONLine(t, file, func(line []byte) {
		var rec struct {
			ToolCalls []struct {
				Result json.RawMessage
			} `json:"toolCalls"`
		}
		if json.Unmarshal(line, &rec) != nil {
			return
		}
		for _, tc := range rec.ToolCalls {
			var parts []map[string]any
			if json.Unmarshal(tc.Result, &parts) != nil || len(parts) == 0 {
				continue
			}
			var want []string
			for _, p := range parts {
				fr, _ := p["functionResponse"].(map[string]any)
				resp, _ := fr["response"].(map[string]any)
				if out, ok := resp["output"].(string); ok {
					want = append(want, out)
				}
			}
			if len(want) == 0 {
				continue
			}
			calls++
			if got := resultString(tc.Result, "content"); got != strings.Join(want, "\n") {
				t.Errorf("resultString(call %d) = %.80q; want %.80q", calls, got, strings.Join(want, "\n"))
			}
		}
	})
	if calls == 0 {
		t.Fatal("the sample has no call with a functionResponse output")
	}
}

// TestWebSearchOfCodex: Codex records its web search call whole, with
// the query in its action and no result (adapters/codex keeps it as
// {"item": ...}): the view shows the query, and the line reads it.
func TestWebSearchOfCodex(t *testing.T) {
	const query = "openai codex github"
	raw := json.RawMessage(`{"item":{"type":"web_search_call","status":"completed","action":{"type":"search","query":"` + query + `"}}}`)
	v := toolView("web_search", raw, 0)
	if v == nil || v.Kind != "search" || len(v.Fields) != 1 || v.Fields[0].Value.Shown != query || v.Result.Label != "" {
		t.Fatalf("toolView = %+v; want a search of %q with no answer", v, query)
	}
	if got := toolLine("web_search", raw); got != query {
		t.Errorf("toolLine = %q; want %q", got, query)
	}
}
