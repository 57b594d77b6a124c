package claudecode

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// toolCall is a tool_use waiting for (or matched with) its tool_result.
type toolCall struct {
	name     string
	mode     string // permission mode when the agent asked
	done     bool
	accepted bool     // it ran, allowed (decision accepted)
	req      *request // the call's input, until the result comes
	spawn    *spawn   // a Task call's, to place the subagent it spawned
}

// request is a tool call's input.
type request struct {
	input json.RawMessage
	args  map[string]json.RawMessage
}

// spawn is what a Task call gave the subagent it spawned.
type spawn struct {
	prompt, subagentType string
}

// toolResult is what came back for a tool call.
type toolResult struct {
	text    string                     // the tool_result content as text
	isError bool                       // tool_result.is_error
	tur     json.RawMessage            // the line's toolUseResult, when it is this call's
	turObj  map[string]json.RawMessage // toolUseResult as an object
	turStr  string                     // toolUseResult as a string (errors, rejections)
	images  []json.RawMessage          // the image blocks of the tool_result content
}

// ToolStepID is the id of the step a tool call becomes: its tool_use id,
// which Claude Code's hooks and telemetry carry too, so that their evidence
// of the call and the transcript's end up as one step.
func ToolStepID(toolUseID string) string { return toolUseID }

var editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// startTool fills a step from a tool_use: its type and the payload fields
// the input gives. The result, when it comes, completes it (finishTool).
func startTool(st *store.Step, call *toolCall, cwd string) {
	args := call.req.args
	st.Decision, st.Outcome = adapters.DecisionUnknown, adapters.OutcomeUnknown
	switch call.name {
	case "Bash":
		st.Type = store.TypeCommand
		st.Payload = store.Payload{Command: adapters.Text(str(args, "command"))}
		if cwd != "" {
			st.Payload.Cwd = adapters.Text(cwd)
		}
		return
	case "Read":
		if path := str(args, "file_path"); path != "" {
			st.Type = store.TypeRead
			st.Payload = store.Payload{Path: path}
			offset, hasOffset := num(args, "offset")
			if limit, ok := num(args, "limit"); ok && limit > 0 {
				if !hasOffset || offset < 1 {
					offset = 1
				}
				st.Payload.Range = &[2]int64{offset, offset + limit - 1}
			}
			return
		}
	case "Write":
		if path := str(args, "file_path"); path != "" {
			st.Type = store.TypeEdit
			st.Payload = store.Payload{Path: path, IsFullWrite: adapters.Bool(true)}
			if v, ok := args["content"]; ok {
				var s string
				if decode(v, &s) == nil {
					st.Payload.NewString = &s
				}
			}
			return
		}
	case "Edit":
		if path := str(args, "file_path"); path != "" {
			st.Type = store.TypeEdit
			st.Payload = store.Payload{Path: path, IsFullWrite: adapters.Bool(false)}
			if _, ok := args["old_string"]; ok {
				st.Payload.OldString = adapters.Text(str(args, "old_string"))
			}
			if _, ok := args["new_string"]; ok {
				st.Payload.NewString = adapters.Text(str(args, "new_string"))
			}
			return
		}
	case "MultiEdit":
		if path := str(args, "file_path"); path != "" {
			st.Type = store.TypeEdit
			st.Payload = store.Payload{Path: path, IsFullWrite: adapters.Bool(false)}
			if e := args["edits"]; adapters.Present(e) {
				st.Payload.StructuredPatch = e
			}
			return
		}
	case "NotebookEdit":
		if path := str(args, "notebook_path"); path != "" {
			st.Type = store.TypeEdit
			st.Payload = store.Payload{Path: path, IsFullWrite: adapters.Bool(false)}
			if _, ok := args["new_source"]; ok {
				st.Payload.NewString = adapters.Text(str(args, "new_source"))
			}
			return
		}
	}
	st.Type = store.TypeOther
	st.Payload = store.Payload{ToolName: call.name, Raw: otherRaw(call, nil)}
}

func otherRaw(call *toolCall, res *toolResult) json.RawMessage {
	raw := map[string]any{}
	if adapters.Present(call.req.input) {
		raw["input"] = call.req.input
	}
	if res != nil {
		switch {
		case adapters.Present(res.tur):
			raw["result"] = res.tur
		default:
			raw["result"] = res.text
		}
		if res.isError {
			raw["is_error"] = true
		}
		if len(res.images) > 0 && len(store.FindImages(res.tur)) == 0 {
			raw["images"] = res.images // only the content has them: once, not twice
		}
	}
	return adapters.Raw(raw)
}

var (
	exitCodeRE     = regexp.MustCompile(`^(?:Error: )?Exit code (-?\d{1,9})\b`)
	toolUseErrorRE = regexp.MustCompile(`(?s)<tool_use_error>(.*?)</tool_use_error>`)
)

// isRejection reports a tool call the user refused in the permission
// prompt, in the words Claude Code writes for it.
func isRejection(res *toolResult) bool {
	return res.turStr == "User rejected tool use" ||
		strings.HasPrefix(res.text, "The user doesn't want to proceed with this tool use") ||
		strings.HasPrefix(res.text, "The user doesn't want to take this action right now")
}

// finishTool completes a tool step with its result: decision, outcome,
// error, and the payload fields only the result gives.
func finishTool(st *store.Step, call *toolCall, res *toolResult) {
	call.done = true
	defer func() {
		call.accepted = st.Decision == adapters.DecisionAccepted
		call.req = nil
	}()
	p := &st.Payload
	if isRejection(res) {
		st.Decision, st.Outcome = adapters.DecisionRejected, adapters.OutcomeNotRun
		st.Error = &store.StepError{Type: "rejected", Message: res.text}
		if st.Type == store.TypeOther {
			p.Raw = otherRaw(call, res)
		}
		return
	}
	st.Decision = decisionFor(call)
	st.Outcome = adapters.OutcomeOK
	if res.isError {
		st.Outcome = adapters.OutcomeFailed
		st.Error = toolError(res)
	}
	switch st.Type {
	case store.TypeCommand:
		finishBash(st, res)
	case store.TypeRead:
		if str(res.turObj, "type") == "image" || len(res.images) > 0 {
			// A read payload has no place for the image read: the step
			// becomes the tool call it was, with its raw.
			st.Type, *p = store.TypeOther, store.Payload{ToolName: call.name, Raw: otherRaw(call, res)}
			return
		}
		if f := object(res.turObj["file"]); f != nil {
			start, okStart := num(f, "startLine")
			n, okN := num(f, "numLines")
			if okStart && okN && n > 0 {
				p.Range = &[2]int64{start, start + n - 1}
			}
		}
	case store.TypeEdit:
		if sp := res.turObj["structuredPatch"]; nonEmptyArray(sp) {
			p.StructuredPatch = sp
		}
		if p.OldString == nil {
			if _, ok := res.turObj["oldString"]; ok {
				p.OldString = adapters.Text(str(res.turObj, "oldString"))
			}
		}
		if p.NewString == nil {
			if _, ok := res.turObj["newString"]; ok {
				p.NewString = adapters.Text(str(res.turObj, "newString"))
			}
		}
	case store.TypeOther:
		p.Raw = otherRaw(call, res)
	}
}

// decisionFor is the permission decision for a call that ran: Claude Code
// asks nobody in bypassPermissions mode, nor for edits in acceptEdits mode;
// otherwise the call was allowed, by a rule or by the user, and the
// transcript does not say which.
func decisionFor(call *toolCall) string {
	switch {
	case call.mode == "bypassPermissions":
		return adapters.DecisionAuto
	case call.mode == "acceptEdits" && editTools[call.name]:
		return adapters.DecisionAuto
	}
	return adapters.DecisionAccepted
}

func toolError(res *toolResult) *store.StepError {
	if m := exitCodeRE.FindStringSubmatch(res.text); m != nil {
		return &store.StepError{Type: "exit_code", Message: "Exit code " + m[1]}
	}
	if m := toolUseErrorRE.FindStringSubmatch(res.text); m != nil {
		return &store.StepError{Type: "tool_use_error", Message: strings.TrimSpace(m[1])}
	}
	msg := res.text
	if msg == "" {
		msg = strings.TrimPrefix(res.turStr, "Error: ")
	}
	return &store.StepError{Type: "tool_error", Message: msg}
}

// finishBash fills a command's output and exit code. A result that is not
// an error means the command ran to exit 0 (unless interrupted or sent to
// the background), with a structured result (the main transcript) or
// without (a subagent's records), so both get the same code; a failed
// command's result is a string "Error: Exit code N" followed by its
// output, which becomes stdout (stdout and stderr are merged there).
func finishBash(st *store.Step, res *toolResult) {
	p := &st.Payload
	if res.turObj != nil {
		if v, ok := res.turObj["stdout"]; ok {
			var s string
			decode(v, &s)
			p.Stdout = &s
		}
		if v, ok := res.turObj["stderr"]; ok {
			var s string
			decode(v, &s)
			p.Stderr = &s
		}
		background := str(res.turObj, "backgroundTaskId") != ""
		if background && (p.Stdout == nil || *p.Stdout == "") {
			p.Stdout = adapters.Text(res.text)
		}
		switch {
		case boolean(res.turObj, "interrupted"):
			st.Outcome = adapters.OutcomeFailed
			st.Error = &store.StepError{Type: "interrupted", Message: "interrupted by the user"}
		case !res.isError && !background:
			p.ExitCode = adapters.Int(0)
		}
		return
	}
	out := res.text
	if m := exitCodeRE.FindStringSubmatch(out); m != nil {
		if code, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			p.ExitCode = &code
		}
		out = strings.TrimPrefix(out[len(m[0]):], "\n")
	} else if !res.isError && backgroundTask(res) == "" {
		// No structured result (a subagent's file, agent_progress): the
		// tool_result is an error whenever the command did not exit 0.
		p.ExitCode = adapters.Int(0)
	}
	p.Stdout = &out
}

var backgroundRE = regexp.MustCompile(`^Command running in background with ID: ([A-Za-z0-9_-]{1,64})`)

// backgroundTask is the task id of a command sent to the background: from
// the structured result, else from the text Claude Code answers with.
func backgroundTask(res *toolResult) string {
	if id := str(res.turObj, "backgroundTaskId"); id != "" {
		return id
	}
	if m := backgroundRE.FindStringSubmatch(res.text); m != nil {
		return m[1]
	}
	return ""
}

func nonEmptyArray(v json.RawMessage) bool {
	var a []json.RawMessage
	return decode(v, &a) == nil && len(a) > 0
}
