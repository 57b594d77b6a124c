package handlers

import (
	"cmp"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/agentreview/service/views"
)

// Common tools shown for what they are. A tool's recorded value (payload
// raw) is {"input": ..., "result": ...} from every adapter; the names are
// matched without case or underscores, so Claude Code's TodoWrite and
// another agent's todo_write are one tool.

// todoItems is the most todo items shown; the raw input has them all.
const todoItems = 100

// toolRaw is the part of a tool's recorded value the renderings read.
// Output is the result's name in Copilot CLI sessions imported before its
// adapter wrote result, and in some pushes.
type toolRaw struct {
	Input  map[string]json.RawMessage `json:"input"`
	Result json.RawMessage            `json:"result"`
	Output json.RawMessage            `json:"output"`
}

// toolKind is what a tool is, by its name: todo, fetch, search (of the
// web, also an MCP server's: github-mcp-server-web_search), grep (a glob
// too: a pattern in a folder), list, task, read or "".
func toolKind(name string) string {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "")
	if strings.HasSuffix(n, "websearch") {
		return "search"
	}
	switch n {
	case "todowrite", "todo", "updateplan", "updatetodos", "todoread":
		return "todo"
	case "webfetch", "fetch":
		return "fetch"
	case "grep", "searchfiles", "grepsearch", "glob":
		return "grep"
	case "ls", "list", "listfiles", "listdirectory":
		return "list"
	case "task", "agent", "newtask":
		return "task"
	case "read", "readfile", "viewimage":
		return "read" // an other step only when what it read was an image
	}
	return ""
}

// readToolRaw reads a common tool's recorded value: {"input": ...,
// "result": ...} as the adapters write it, or, from a push, the input
// alone (an object with neither).
func readToolRaw(name string, raw json.RawMessage) (string, toolRaw, bool) {
	kind := toolKind(name)
	var r toolRaw
	if kind == "" || len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return "", r, false
	}
	if r.Result == nil {
		r.Result = r.Output
	}
	if r.Input == nil && r.Result == nil && json.Unmarshal(raw, &r.Input) != nil {
		return "", r, false
	}
	return kind, r, r.Input != nil
}

// toolView is the rendering of a tool's step, its values cut to limit
// characters (0: whole): a common tool's own, else its value's parts
// (toolPartsView); nil when neither shows anything.
func toolView(name string, raw json.RawMessage, limit int) *views.ToolView {
	kind, r, ok := readToolRaw(name, raw)
	if !ok {
		return toolPartsView(raw, limit)
	}
	v := &views.ToolView{Kind: kind}
	field := func(label string, keys ...string) {
		for _, k := range keys {
			if s := inputString(r.Input, k); s != "" {
				shown, more := clip(s, limit)
				v.Fields = append(v.Fields, views.Field{Label: label, Value: views.Text{Shown: shown, More: more}})
				return
			}
		}
	}
	result := func(label string, text string) {
		if text == "" {
			return
		}
		shown, more := clip(text, limit)
		v.Result = views.Block{Label: label, Text: views.Text{Shown: shown, More: more}}
	}
	switch kind {
	case "todo":
		v.Todos = todos(r)
	case "fetch":
		field("URL", "url")
		field("Prompt", "prompt")
		result("Answer", cmp.Or(resultString(r.Result, "result"), resultString(r.Result, "content"))) // Claude Code's, Copilot CLI's
		v.Result.Markdown = true
	case "search":
		query := webSearchQuery(r.Input)
		var answer string
		answer, v.Sources, v.MoreSources = webSearchResult(r.Result)
		if answer == "" && len(v.Sources) == 0 && (query == "" || (len(r.Result) > 0 && string(r.Result) != "null")) {
			return toolPartsView(raw, limit) // a result of another shape (Gemini CLI's parts), as it was recorded
		}
		if query != "" {
			shown, more := clip(query, limit)
			v.Fields = append(v.Fields, views.Field{Label: "Query", Value: views.Text{Shown: shown, More: more}})
		}
		result("Answer", answer)
		v.Result.Markdown = true
	case "grep":
		field("Pattern", "pattern", "regex", "query")
		field("In", "path", "directory")
		field("Files", "glob", "include", "file_pattern")
		matches := resultString(r.Result, "content")
		if matches == "" {
			matches = resultLines(r.Result, "filenames")
		}
		result("Matches", matches)
	case "read":
		field("File", "file_path", "path")
	case "list":
		field("Folder", "path", "dir_path")
		result("Entries", resultString(r.Result, "content"))
	case "task":
		field("Description", "description")
		field("Subagent", "subagent_type")
		field("Prompt", "prompt")
		result("Report", resultString(r.Result, "content"))
		v.Result.Markdown = true
	}
	if len(v.Fields) == 0 && len(v.Todos) == 0 && v.Result.Label == "" && len(v.Sources) == 0 {
		return toolPartsView(raw, limit) // none of the values this tool's view reads
	}
	return v
}

// toolLine is a common tool's one-line summary, or "".
func toolLine(name string, raw json.RawMessage) string {
	kind, r, ok := readToolRaw(name, raw)
	if !ok {
		return ""
	}
	switch kind {
	case "todo":
		items := todos(r)
		done := 0
		for _, t := range items {
			if t.Status == "completed" {
				done++
			}
		}
		return views.Plural(len(items), "todo") + ", " + views.Number(int64(done)) + " done"
	case "fetch", "read", "list":
		return oneLine(inputString(r.Input, "url") + inputString(r.Input, "file_path") + inputString(r.Input, "path"))
	case "search":
		return oneLine(webSearchQuery(r.Input))
	case "grep":
		return oneLine(inputString(r.Input, "pattern") + " " + inputString(r.Input, "path"))
	case "task":
		line := inputString(r.Input, "description")
		if t := inputString(r.Input, "subagent_type"); t != "" {
			line += " (" + t + ")"
		}
		return oneLine(line)
	}
	return ""
}

func inputString(in map[string]json.RawMessage, key string) string {
	var s string
	if json.Unmarshal(in[key], &s) != nil {
		return ""
	}
	return s
}

// todos reads a todo list: the input's {"todos": [{"content", "status"}]},
// or Codex's plan: {"plan": [{"step", "status"}]}; else a result that is
// such a list, or JSON text of one (opencode's todoread answers so).
func todos(r toolRaw) []views.Todo {
	var items []struct {
		Content string `json:"content"`
		Step    string `json:"step"`
		Status  string `json:"status"`
	}
	if json.Unmarshal(r.Input["todos"], &items) != nil || len(items) == 0 {
		_ = json.Unmarshal(r.Input["plan"], &items)
	}
	if len(items) == 0 {
		list := []byte(r.Result)
		var text string
		if json.Unmarshal(list, &text) == nil {
			list = []byte(text)
		}
		_ = json.Unmarshal(list, &items)
	}
	var out []views.Todo
	for _, it := range items[:min(len(items), todoItems)] {
		text := it.Content
		if text == "" {
			text = it.Step
		}
		status := it.Status
		if status != "completed" && status != "in_progress" {
			status = "pending"
		}
		out = append(out, views.Todo{Text: oneLine(text), Status: status})
	}
	return out
}

// resultString is a tool's result as text: the result itself when it is a
// string, the outputs of Gemini CLI's (and Qwen Code's) functionResponse
// parts, else its field key when that is a string, or the text blocks of
// a content array ([{"type": "text", "text": ...}]).
func resultString(result json.RawMessage, key string) string {
	var s string
	if json.Unmarshal(result, &s) == nil {
		return s
	}
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output *string `json:"output"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(result, &parts) == nil {
		var outs []string
		for _, p := range parts {
			if o := p.FunctionResponse.Response.Output; o != nil {
				outs = append(outs, *o)
			}
		}
		return strings.Join(outs, "\n")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil {
		return ""
	}
	if json.Unmarshal(obj[key], &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(obj[key], &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// resultLines is a result's field key, a list of strings, one a line.
func resultLines(result json.RawMessage, key string) string {
	var obj map[string]json.RawMessage
	var lines []string
	if json.Unmarshal(result, &obj) != nil || json.Unmarshal(obj[key], &lines) != nil {
		return ""
	}
	return strings.Join(lines, "\n")
}

// webSearchQuery is a web search's query: its input's, or that of the
// call Codex recorded whole ({"item": {"action": {"query"}}}; it records
// no result).
func webSearchQuery(in map[string]json.RawMessage) string {
	if q := inputString(in, "query"); q != "" {
		return q
	}
	var item struct {
		Action struct {
			Query string `json:"query"`
		} `json:"action"`
	}
	_ = json.Unmarshal(in["item"], &item)
	return item.Action.Query
}

// maxSources is the most sources of a web search shown; the recorded value
// has them all.
const maxSources = 20

// webSearchResult reads a web search's answer and the sources it names:
// Claude Code's results, texts and lists of {title, url}; Copilot CLI's
// content (or an MCP server's log), a JSON text {"text": {"value",
// "annotations": [{"url_citation": {title, url}}]}}; else the result as
// text (resultString). A source named twice is shown once; more counts
// those past maxSources.
func webSearchResult(result json.RawMessage) (answer string, sources []views.Link, more int) {
	seen := map[string]bool{}
	add := func(title, u string) {
		l, ok := sourceLink(title, u)
		if !ok || seen[l.URL] {
			return
		}
		seen[l.URL] = true
		if len(sources) == maxSources {
			more++
			return
		}
		sources = append(sources, l)
	}
	type page struct{ Title, URL string }
	var claude struct {
		Results []json.RawMessage `json:"results"`
	}
	if json.Unmarshal(result, &claude) == nil && len(claude.Results) > 0 {
		var texts []string
		for _, r := range claude.Results {
			var text string
			var found struct{ Content []page }
			if json.Unmarshal(r, &text) == nil {
				texts = append(texts, text)
			} else if json.Unmarshal(r, &found) == nil {
				for _, p := range found.Content {
					add(p.Title, p.URL)
				}
			}
		}
		return strings.Join(texts, "\n\n"), sources, more
	}
	text := cmp.Or(resultString(result, "content"), resultString(result, "log"))
	var copilot struct {
		Text struct {
			Value       *string `json:"value"`
			Annotations []struct {
				Citation page `json:"url_citation"`
			} `json:"annotations"`
		} `json:"text"`
	}
	if json.Unmarshal([]byte(text), &copilot) != nil || copilot.Text.Value == nil {
		return text, nil, 0
	}
	for _, a := range copilot.Text.Annotations {
		add(a.Citation.Title, a.Citation.URL)
	}
	return *copilot.Text.Value, sources, more
}

// sourceLink is a source's link: an http:// or https:// URL of at most
// maxURLBytes, its title on one line (the URL when it has none). The
// scheme is read as url.Parse reads it, in any case (HTTPS:// too).
func sourceLink(title, raw string) (views.Link, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(raw) > maxURLBytes ||
		!strings.HasPrefix(raw[len(u.Scheme):], "://") {
		return views.Link{}, false
	}
	shown, _ := clip(oneLine(cmp.Or(title, raw)), lineChars)
	return views.Link{Title: shown, URL: raw, Host: u.Hostname()}, true
}

// maxURLBytes is the longest URL linked: browsers take longer ones, but a
// page of sources must stay small.
const maxURLBytes = 2048
