package cline

import (
	"cmp"
	"encoding/json"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// call is a tool call waiting for (or matched with) its result.
type call struct {
	name  string
	args  map[string]string
	input json.RawMessage // the tool_use input; nil for an XML call
}

// talkTools are how Cline speaks to the user; they are message steps.
var talkTools = map[string]string{
	"attempt_completion":    "result",
	"plan_mode_respond":     "response",
	"ask_followup_question": "question",
}

// startTool fills a step from a tool call, in working folder cwd.
func startTool(b *adapters.Builder, st *store.Step, c *call, cwd string) {
	if field, ok := talkTools[c.name]; ok {
		st.Type, st.Decision, st.Outcome = store.TypeMessage, adapters.DecisionNone, adapters.OutcomeOK
		st.Payload = store.Payload{Role: "assistant", Text: adapters.Text(c.args[field])}
		return
	}
	st.Decision, st.Outcome = adapters.DecisionUnknown, adapters.OutcomeUnknown
	file := filePath(b, c.args["path"], cwd)
	switch {
	case c.name == "execute_command":
		st.Type = store.TypeCommand
		st.Payload = store.Payload{Command: adapters.Text(c.args["command"])}
		if cwd != "" {
			st.Payload.Cwd = adapters.Text(cwd)
		}
		return
	case c.name == "read_file" && file != "":
		st.Type = store.TypeRead
		st.Payload = store.Payload{Path: file}
		return
	case c.name == "write_to_file" && file != "":
		st.Type = store.TypeEdit
		st.Payload = store.Payload{Path: file, IsFullWrite: adapters.Bool(true)}
		if content, ok := c.args["content"]; ok {
			st.Payload.NewString = adapters.Text(content)
		}
		return
	case c.name == "replace_in_file" && file != "":
		st.Type = store.TypeEdit
		st.Payload = store.Payload{Path: file, IsFullWrite: adapters.Bool(false)}
		if diff, ok := c.args["diff"]; ok {
			st.Payload.StructuredPatch, _ = json.Marshal(diff)
			if blocks := searchReplace(diff); len(blocks) == 1 {
				st.Payload.OldString = adapters.Text(blocks[0][0])
				st.Payload.NewString = adapters.Text(blocks[0][1])
			}
		}
		return
	case c.name == "apply_patch":
		if files := adapters.PatchFiles(cmp.Or(c.args["input"], c.args["patch"])); len(files) == 1 {
			st.Type = store.TypeEdit
			st.Payload = files[0].Edit("")
			st.Payload.Path = filePath(b, files[0].Path, cwd)
			return
		}
	}
	st.Type = store.TypeOther
	st.Payload = store.Payload{ToolName: c.name, Raw: otherRaw(c, nil)}
}

// filePath makes a path Cline gave relative to the working folder
// absolute, so the files touched by different agents read alike, while
// the session's copies of its folder stay within their bound
// (Builder.Folder).
func filePath(b *adapters.Builder, p, cwd string) string {
	p = strings.TrimSpace(p)
	if p == "" || path.IsAbs(p) || !strings.HasPrefix(cwd, "/") {
		return p
	}
	if dir := b.Folder(cwd); dir != "" {
		return path.Join(dir, p)
	}
	return p
}

func otherRaw(c *call, result *string) json.RawMessage {
	raw := map[string]any{}
	if adapters.Present(c.input) {
		raw["input"] = c.input
	} else {
		raw["input"] = c.args
	}
	if result != nil {
		raw["result"] = *result
	}
	return adapters.Raw(raw)
}

var (
	exitCodeRE = regexp.MustCompile(`(?i)exit code:?\s*(-?\d{1,9})`)
	workDirRE  = regexp.MustCompile(`within working directory '([^'\n]+)'`)
)

// finishTool completes a call with the text Cline sent back to the model.
func finishTool(st *store.Step, c *call, body string, isError bool) {
	if st.Type == store.TypeMessage {
		return // a talk tool: its result is the user's reply
	}
	p := &st.Payload
	st.Decision, st.Outcome = adapters.DecisionAccepted, adapters.OutcomeOK
	switch {
	case strings.HasPrefix(body, "The user denied this operation"):
		adapters.Reject(st, firstLine(body))
	case strings.HasPrefix(body, "The tool execution failed with the following error:"):
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: cmp.Or(tag(body, "error"), body)}
	case isError:
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: body}
	}
	switch st.Type {
	case store.TypeCommand:
		// "Command executed in terminal within working directory '/w'.
		// Exit code: 1\nOutput:\n..." in newer Cline; the exit code and
		// folder are only read from before the output.
		head, out, ok := strings.Cut(body, "Output:\n")
		if !ok {
			head, out = "", body
		}
		if st.Decision != adapters.DecisionRejected {
			p.Stdout = adapters.Text(out)
		}
		if m := workDirRE.FindStringSubmatch(head); m != nil {
			p.Cwd = adapters.Text(m[1])
		}
		if m := exitCodeRE.FindStringSubmatch(head); m != nil && st.Decision != adapters.DecisionRejected {
			if code, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				p.ExitCode = &code
				if code != 0 && st.Outcome == adapters.OutcomeOK {
					st.Outcome = adapters.OutcomeFailed
					st.Error = &store.StepError{Type: "exit_code", Message: "Exit code " + m[1]}
				}
			}
		}
	case store.TypeOther:
		p.Raw = otherRaw(c, &body)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

var searchReplaceRE = regexp.MustCompile(`(?s)-{3,} SEARCH\n(.*?)\n?={3,}\n(.*?)\n?\+{3,} REPLACE`)

// searchReplace reads the SEARCH/REPLACE blocks of a replace_in_file diff.
func searchReplace(diff string) [][2]string {
	var out [][2]string
	for _, m := range searchReplaceRE.FindAllStringSubmatch(diff, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

var (
	tagREs     = map[string]*regexp.Regexp{}
	thinkingRE = regexp.MustCompile(`(?s)<thinking>.*?</thinking>`)
)

func init() {
	for _, name := range []string{"task", "feedback", "answer", "user_message", "user_input", "error", "thinking"} {
		tagREs[name] = regexp.MustCompile(`(?s)<` + name + `>(.*?)</` + name + `>`)
	}
}

// tag returns the trimmed text inside <name>...</name>; name must be one of
// tagREs.
func tag(s, name string) string {
	if m := tagREs[name].FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// xmlTools are the tools older Cline called with XML tags in its reply.
var xmlToolRE = regexp.MustCompile(`<(execute_command|read_file|write_to_file|replace_in_file|apply_patch|search_files|list_files|list_code_definition_names|browser_action|use_mcp_tool|access_mcp_resource|ask_followup_question|attempt_completion|plan_mode_respond|new_task|load_mcp_documentation|web_fetch|web_search|condense|summarize_task|report_bug|new_rule|use_skill)>`)

var paramRE = regexp.MustCompile(`<([a-z_]+)>`)

type xmlCall struct {
	name string
	args map[string]string
}

// xmlCalls takes the XML tool calls out of a reply's text, returning them
// and the text around them.
func xmlCalls(text string) ([]xmlCall, string) {
	var calls []xmlCall
	var rest strings.Builder
	for {
		loc := xmlToolRE.FindStringSubmatchIndex(text)
		if loc == nil {
			rest.WriteString(text)
			break
		}
		name := text[loc[2]:loc[3]]
		rest.WriteString(text[:loc[0]])
		body := text[loc[1]:]
		closing := "</" + name + ">"
		end := strings.Index(body, closing)
		if end >= 0 {
			text = body[end+len(closing):]
			body = body[:end]
		} else {
			text = "" // cut off: Cline reads a partial call too
		}
		calls = append(calls, xmlCall{name: name, args: xmlParams(body)})
	}
	return calls, rest.String()
}

func xmlParams(body string) map[string]string {
	args := map[string]string{}
	for {
		loc := paramRE.FindStringSubmatchIndex(body)
		if loc == nil {
			return args
		}
		name := body[loc[2]:loc[3]]
		closing := "</" + name + ">"
		end := strings.Index(body[loc[1]:], closing)
		if end < 0 {
			return args
		}
		if _, dup := args[name]; !dup {
			args[name] = strings.Trim(body[loc[1]:loc[1]+end], "\n")
		}
		body = body[loc[1]+end+len(closing):]
	}
}
