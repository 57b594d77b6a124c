package copilotcli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// args are the arguments of the tools mapped to a step type other than
// other: bash (and powershell), view, create, edit and str_replace, and the
// older str_replace_editor that takes a command.
type args struct {
	Command  string  `json:"command"`
	Path     string  `json:"path"`
	Range    []int64 `json:"view_range"`
	FileText *string `json:"file_text"`
	OldStr   *string `json:"old_str"`
	NewStr   *string `json:"new_str"`
	Cwd      string  `json:"cwd"`
}

// toolStep maps a tool call to a step. Shell tools are commands; view (or
// str_replace_editor view) a read; create an edit that writes the whole
// file; edit and str_replace an edit of old_str to new_str; every other
// tool (glob, grep, web_search, web_fetch, report_intent, task_complete,
// MCP tools) an other step with its arguments as raw input.
func toolStep(id, name string, raw json.RawMessage, cwd string) store.Step {
	st := store.Step{ID: id, Type: store.TypeOther, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown}
	var a args
	obj := json.Unmarshal(raw, &a) == nil && strings.HasPrefix(strings.TrimSpace(string(raw)), "{")
	op := name
	if name == "str_replace_editor" && obj {
		op = a.Command
	}
	switch {
	case obj && (name == "bash" || name == "powershell" || name == "shell") && a.Command != "":
		st.Type = store.TypeCommand
		st.Payload.Command = adapters.Text(a.Command)
		if d := cmp.Or(a.Cwd, cwd); d != "" {
			st.Payload.Cwd = adapters.Text(d)
		}
		return st
	case obj && a.Path != "" && op == "view":
		st.Type = store.TypeRead
		st.Payload.Path = a.Path
		if len(a.Range) == 2 && a.Range[0] >= 1 && a.Range[1] >= a.Range[0] {
			st.Payload.Range = &[2]int64{a.Range[0], a.Range[1]}
		}
		return st
	case obj && a.Path != "" && op == "create":
		st.Type = store.TypeEdit
		st.Payload.Path = a.Path
		st.Payload.NewString = a.FileText
		st.Payload.IsFullWrite = adapters.Bool(true)
		return st
	case obj && a.Path != "" && (op == "edit" || op == "str_replace"):
		st.Type = store.TypeEdit
		st.Payload.Path = a.Path
		st.Payload.OldString, st.Payload.NewString = a.OldStr, a.NewStr
		st.Payload.IsFullWrite = adapters.Bool(false)
		return st
	}
	var input any = string(raw)
	if obj {
		input = raw
	} else if !adapters.Present(raw) {
		input = nil
	}
	st.Payload.ToolName = cmp.Or(name, "unknown")
	st.Payload.Raw = adapters.Raw(map[string]any{"input": input})
	return st
}

var exitRE = regexp.MustCompile(`<exited with exit code (-?\d{1,9})>\s*$`)

// complete fills a call's step with its result: the output of a command
// (with the exit code Copilot appends to it), the output of an other step.
// A call that did not succeed failed, or did not run when it was rejected.
func complete(st *store.Step, decision string, ok bool, output, errText string, rawResult json.RawMessage) {
	st.Decision, st.Outcome = decision, adapters.OutcomeOK
	var code *int64
	if m := exitRE.FindStringSubmatchIndex(output); m != nil {
		if n, err := strconv.ParseInt(output[m[2]:m[3]], 10, 64); err == nil {
			code = &n
		}
		output = strings.TrimRight(output[:m[0]], "\n")
	}
	switch {
	case decision == adapters.DecisionRejected:
		adapters.Reject(st, cmp.Or(errText, "denied"))
	case !ok:
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: cmp.Or(errText, strings.TrimSpace(output), "failed")}
	case code != nil && *code != 0:
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "exit_code", Message: fmt.Sprintf("Exit code %d", *code)}
	}
	switch st.Type {
	case store.TypeCommand:
		if st.Decision != adapters.DecisionRejected {
			st.Payload.Stdout = adapters.Text(output)
			st.Payload.ExitCode = code
		}
	case store.TypeOther:
		var m map[string]any
		json.Unmarshal(st.Payload.Raw, &m)
		if m == nil {
			m = map[string]any{}
		}
		if adapters.Present(rawResult) {
			m["result"] = rawResult
		}
		st.Payload.Raw = adapters.Raw(m)
	}
}

// refused reports whether a failed call's error says it was refused rather
// than failed: its code names a denial, or its message a rejection or a
// user's refusal. A bare "permission denied" is a file's, not the user's.
func refused(code, message string) bool {
	c, m := strings.ToLower(code), strings.ToLower(message)
	return strings.Contains(c, "denied") || strings.Contains(c, "rejected") ||
		strings.Contains(m, "rejected") || strings.Contains(m, "declined") || strings.Contains(m, "user denied") || strings.Contains(m, "denied by")
}
