package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/store"
)

// TestToolPartsOfARealStep: Claude Code's TaskOutput, a tool with no
// rendering of its own, shows its input's values as fields and the
// background task's output, with its real line breaks, as a block
// labelled by its keys; its timeline line reads the input's values. The
// expected values are read from the transcript by the test.
func TestToolPartsOfARealStep(t *testing.T) {
	const transcript = "../../shared/samples/claude-code/spotter/258c7280_excerpt_lines_481-630.jsonl"
	f, err := os.Open(transcript)
	if err != nil {
		t.Skipf("no sample: %v", err)
	}
	defer f.Close()
	// The first TaskOutput call and its structured result.
	var callID string
	var input map[string]any
	var result struct{ Task map[string]any }
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Message struct {
				Content json.RawMessage
			}
			ToolUseResult json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		var blocks []struct {
			Type, ID, Name string
			Input          map[string]any
		}
		json.Unmarshal(line.Message.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_use" && b.Name == "TaskOutput" && callID == "" {
				callID, input = b.ID, b.Input
			}
		}
		if callID != "" && result.Task == nil && strings.Contains(sc.Text(), `"tool_use_id":"`+callID+`"`) {
			json.Unmarshal(line.ToolUseResult, &result)
		}
	}
	output, _ := result.Task["output"].(string)
	if callID == "" || !strings.Contains(output, "\n") {
		t.Fatalf("the sample has no TaskOutput call with a multi-line output (call %q)", callID)
	}

	s := newTestService(t)
	if _, err := (&adapters.Importer{Store: s.store}).Run(context.Background(), claudecode.Agent, []string{transcript}); err != nil {
		t.Fatal(err)
	}
	const sid = "258c7280-ae70-4798-800f-63464d01a85d"
	d, err := s.store.Detail(context.Background(), sid, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for _, st := range d.Steps {
		if st.Payload.ToolName == "TaskOutput" {
			seq = st.Seq
			break
		}
	}
	if seq == 0 {
		t.Fatal("no TaskOutput step stored")
	}
	r := s.get(fmt.Sprintf("/session/step?id=%s&seq=%d&all=1", sid, seq))
	if r.Code != http.StatusOK {
		t.Fatalf("GET step %d = %d", seq, r.Code)
	}
	doc, err := goquery.NewDocumentFromReader(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	v := doc.Find(`[data-testid="tool-fields"]`)
	for key, val := range input {
		if got, want := v.Find(`[data-testid="tool-field-`+key+`"]`).Text(), fmt.Sprint(val); got != want {
			t.Errorf("field %s = %q; want the call's %q", key, got, want)
		}
	}
	if got := strings.TrimSpace(v.Find(`[data-testid="block-result.task.output"] pre`).Text()); got != strings.TrimSpace(output) {
		t.Errorf("block result.task.output = %.200q…; want the task's output %.200q…", got, output)
	}
	if got, want := v.Find(`[data-testid="tool-field-result.task.status"]`).Text(), result.Task["status"]; got != want {
		t.Errorf("field result.task.status = %q; want %q", got, want)
	}
	page, err := goquery.NewDocumentFromReader(s.get("/session?id=" + sid).Body)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(page.Find(fmt.Sprintf(`#step-%d .line`, seq)).First().Text())
	if want := fmt.Sprintf("TaskOutput task_id: %v, block: %v, timeout: %v", input["task_id"], input["block"], input["timeout"]); line != want {
		t.Errorf("timeline line = %q; want %q", line, want)
	}
}

// TestToolPartsWithoutEmptyStrings: an empty string is not a part (opencode
// records a call's title as "" when it has none); a value of empty strings
// alone has no parts.
func TestToolPartsWithoutEmptyStrings(t *testing.T) {
	v := toolPartsView([]byte(`{"title":"","input":{"a":"","b":"c","n":0},"output":""}`), 0)
	var labels []string
	for _, f := range v.Fields {
		labels = append(labels, f.Label+"="+f.Value.Shown)
	}
	if len(v.Blocks) != 0 || strings.Join(labels, " ") != "b=c n=0" {
		t.Errorf("parts = %v, blocks %+v; want b=c n=0 alone", labels, v.Blocks)
	}
	if v := toolPartsView([]byte(`{"title":"","input":{"a":""}}`), 0); v != nil {
		t.Errorf("parts of empty strings = %+v; want none", v)
	}
}

// TestToolPartsBounded: the parts of a hostile value are bounded: a value
// of 10,000 keys shows toolParts of them and says there are more, a deep
// one is compact JSON below toolPartDepth, a long string is cut to the
// limit; text that is not a JSON object shows no parts.
func TestToolPartsBounded(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"input":{`)
	for i := range 10_000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"k%d":%d`, i, i)
	}
	many.WriteString(`}}`)
	v := toolPartsView([]byte(many.String()), 100)
	if v == nil || len(v.Fields)+len(v.Blocks) != toolParts || !v.MoreParts || v.Fields[0].Label != "k0" || v.Fields[0].Value.Shown != "0" {
		t.Fatalf("10,000 keys: %d parts, more %v; want %d and more", len(v.Fields)+len(v.Blocks), v != nil && v.MoreParts, toolParts)
	}

	deep := strings.Repeat(`{"a":`, 100) + `"x"` + strings.Repeat(`}`, 100)
	v = toolPartsView([]byte(`{"input":`+deep+`}`), 0)
	if v == nil || len(v.Fields)+len(v.Blocks) != 1 {
		t.Fatalf("deep value: %+v; want one part", v)
	}
	label, text := "", ""
	for _, f := range v.Fields {
		label, text = f.Label, f.Value.Shown
	}
	for _, b := range v.Blocks {
		label, text = b.Label, b.Text.Shown
	}
	if want := strings.Repeat("a.", toolPartDepth-2) + "a"; label != want || !json.Valid([]byte(text)) {
		t.Errorf("deep value's part = %q: %.60q; want %q as compact JSON", label, text, want)
	}

	long := strings.Repeat("é", 5000)
	v = toolPartsView([]byte(`{"result":"`+long+`"}`), 1000)
	if v == nil || len(v.Blocks) != 1 || v.Blocks[0].Label != "result" || v.Blocks[0].Text.Shown != long[:2000] || v.Blocks[0].Text.More != 4000 {
		t.Errorf("long result: %+v; want one block of 1,000 characters and 4,000 more", v)
	}

	// Parts together are cut as one text: 100 parts of 1,000 characters
	// carry 2,048 of them, not 40,000, at a first delivery's limit; a key
	// a megabyte long is a label of lineChars.
	var parts strings.Builder
	parts.WriteString(`{"` + strings.Repeat("k", 1<<20) + `":1`)
	for i := range 100 {
		fmt.Fprintf(&parts, `,"p%d":"%s"`, i, strings.Repeat("y", 1000))
	}
	parts.WriteString(`}`)
	v = toolPartsView([]byte(parts.String()), 2048)
	shown := 0
	for _, f := range v.Fields {
		shown += len(f.Value.Shown)
		if len([]rune(f.Label)) > lineChars+1 {
			t.Errorf("a label of %d characters; want at most %d", len([]rune(f.Label)), lineChars+1)
		}
	}
	for _, b := range v.Blocks {
		shown += len(b.Text.Shown)
	}
	if shown != 2048 || !v.MoreParts {
		t.Errorf("100 parts of 1,000 characters at 2,048: %d shown, more %v; want 2,048 and more", shown, v.MoreParts)
	}

	for _, raw := range []string{`"text"`, `[1,2]`, `not json`, `{}`, ``} {
		if v := toolPartsView([]byte(raw), 100); v != nil {
			t.Errorf("toolPartsView(%q) = %+v; want none", raw, v)
		}
	}
}

// TestToolInputLine: a step's timeline line reads its input's values, a
// text of several lines by its first, never its result (Copilot CLI's
// output); a pushed value without an input is read whole; a huge value is
// read from its first bytes only, and a value they cut short is left out.
func TestToolInputLine(t *testing.T) {
	huge := `{"input":{"text":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, c := range []struct{ raw, want string }{
		{`{"input":{"summary":"line one\nline two","n":3},"result":"done"}`, "summary: line one …, n: 3"},
		{`{"input":{"a":"b","deep":{"c":1}},"output":{"content":"c"}}`, "a: b"},
		{`{"q":"x","limit":10}`, "q: x, limit: 10"},
		{`{"title":"","input":{"a":"","b":"c"}}`, "b: c"},
		{`{"result":"only a result"}`, ""},
		{`[1,2]`, ""},
		// A first value cut short in the bytes read reads as far as it goes,
		// also when the cut is within an escape or a character.
		{huge, "text: " + strings.Repeat("x", 4*lineChars-len(`{"input":{"text":"`)) + "…"},
		{`{"q": "` + strings.Repeat(`\u00e9`, 200) + `"}`, "q: " + strings.Repeat("é", (4*lineChars-len(`{"q": "`))/6) + "…"},
		{`{"q":"` + strings.Repeat("é", 400) + `"}`, "q: " + strings.Repeat("é", (4*lineChars-len(`{"q":"`))/2) + "…"},
		{`{"q":` + strings.Repeat(" ", 1000) + `"x"}`, ""},
	} {
		if got := toolInputLine([]byte(c.raw)); got != c.want {
			t.Errorf("toolInputLine(%.60q) = %.80q; want %.80q", c.raw, got, c.want)
		}
	}
}

// FuzzToolParts: any recorded value, JSON or not, renders without a panic,
// its parts within their number and, at a limit, their values within its
// characters, and its timeline line from its first bytes only; and the
// common tools' own views of it, a web search's sources within bounds.
func FuzzToolParts(f *testing.F) {
	for _, seed := range []string{
		`{"input":{"task_id":"bd0afab","block":true,"timeout":120000},"result":{"task":{"output":"a\nb"}}}`,
		`{"input":{"a":{"":1,"[0]":[null,false,1e3,"x"]}},"output":[{"functionResponse":{"response":{"output":"y"}}}]}`,
		`{"":{"":{"":""}}}`, `{"a":"\ud800"}`, `{"a":`, `[]`, `"x"`, ``,
		`{"input":{"query":"q"},"result":{"results":[{"content":[{"title":"t","url":"https://a.b/c"}]},"answer"]}}`,
		`{"input":{"query":"q"},"output":{"content":"{\"text\":{\"value\":\"v\",\"annotations\":[{\"url_citation\":{\"title\":\"t\",\"url\":\"http://x\"}}]}}"}}`,
	} {
		f.Add([]byte(seed), 64)
	}
	f.Fuzz(func(t *testing.T, raw []byte, limit int) {
		limit = max(0, limit%4096)
		v := toolPartsView(raw, limit)
		if v != nil {
			shown := 0
			for _, p := range v.Fields {
				shown += utf8.RuneCountInString(p.Value.Shown)
			}
			for _, b := range v.Blocks {
				shown += utf8.RuneCountInString(b.Text.Shown)
			}
			if len(v.Fields)+len(v.Blocks) > toolParts || (limit > 0 && shown > limit) {
				t.Fatalf("%d parts, %d characters shown at limit %d", len(v.Fields)+len(v.Blocks), shown, limit)
			}
		}
		if line := toolInputLine(raw); len(line) > 2*4*lineChars {
			t.Fatalf("a line of %d bytes from a value's first %d", len(line), 4*lineChars)
		}
		// A common tool's own view of the same value: a web search's
		// sources within their number, each an http or https link.
		if v := toolView("WebSearch", raw, limit); v != nil {
			if len(v.Sources) > maxSources {
				t.Fatalf("%d sources; at most %d", len(v.Sources), maxSources)
			}
			for _, l := range v.Sources {
				if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") || len(l.URL) > maxURLBytes {
					t.Fatalf("a source links to %.80q", l.URL)
				}
			}
		}
		for _, name := range []string{"TodoWrite", "WebFetch", "Grep", "LS", "Task"} {
			toolView(name, raw, limit)
			toolLine(name, raw)
		}
	})
}

// TestCopilotWebFetchAnswer: Copilot CLI's web_fetch, from the real
// sample, shows as a fetch with its URL and the answer the tool returned
// (its result's content), both read from the events file by the test.
func TestCopilotWebFetchAnswer(t *testing.T) {
	const events = "../adapters/copilotcli/testdata/session-state/96ef38f0-9d09-45c3-8124-6448c36090ed/events.jsonl"
	var callID, url, answer string
	eachJSONLine(t, events, func(line []byte) {
		var e struct {
			Type string
			Data struct {
				ToolCallID string `json:"toolCallId"`
				ToolName   string `json:"toolName"`
				Arguments  struct{ URL string }
				Result     struct{ Content string }
			}
		}
		if json.Unmarshal(line, &e) != nil {
			return
		}
		if e.Type == "tool.execution_start" && e.Data.ToolName == "web_fetch" && callID == "" {
			callID, url = e.Data.ToolCallID, e.Data.Arguments.URL
		}
		if e.Type == "tool.execution_complete" && callID != "" && e.Data.ToolCallID == callID {
			answer = e.Data.Result.Content
		}
	})
	if url == "" || answer == "" {
		t.Fatalf("the sample has no web_fetch with an answer (%q, %q)", url, answer)
	}
	s := newTestService(t)
	if _, err := (&adapters.Importer{Store: s.store}).Run(context.Background(), copilotcli.Agent, []string{events}); err != nil {
		t.Fatal(err)
	}
	const sid = "96ef38f0-9d09-45c3-8124-6448c36090ed"
	d, err := s.store.Detail(context.Background(), sid, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for _, st := range d.Steps {
		if st.ID == callID || st.Payload.ToolName == "web_fetch" {
			seq = st.Seq
			break
		}
	}
	doc, err := goquery.NewDocumentFromReader(s.get(fmt.Sprintf("/session/step?id=%s&seq=%d", sid, seq)).Body)
	if err != nil {
		t.Fatal(err)
	}
	v := doc.Find(`[data-testid="tool-fetch"]`)
	if got := v.Find(`[data-testid="tool-field-URL"]`).Text(); got != url {
		t.Errorf("web_fetch URL = %q; want %q", got, url)
	}
	if got := strings.TrimSpace(v.Find(`[data-testid="block-Answer"]`).Text()); !strings.Contains(got, answer) {
		t.Errorf("web_fetch answer = %q; want the tool's %q", got, answer)
	}
}
