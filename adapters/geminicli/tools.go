package geminicli

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// args are the arguments of the tools the adapter maps to a step type.
type args struct {
	Command      string `json:"command"`
	DirPath      string `json:"dir_path"`
	Directory    string `json:"directory"`
	FilePath     string `json:"file_path"`
	AbsolutePath string `json:"absolute_path"`
	Path         string `json:"path"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Content      string `json:"content"`
	Offset       *int64 `json:"offset"`
	Limit        *int64 `json:"limit"`
	StartLine    *int64 `json:"start_line"`
	EndLine      *int64 `json:"end_line"`
}

// display is resultDisplay when it is an object: an edit's diff.
type display struct {
	FileDiff string `json:"fileDiff"`
	FilePath string `json:"filePath"`
}

// IsEdit reports whether a tool of Gemini CLI (or of Qwen Code, its fork)
// edits a file: replace, edit or write_file.
func IsEdit(tool string) bool {
	return tool == "replace" || tool == "edit" || tool == "write_file"
}

// EditPayload is the payload of an edit tool's call (IsEdit) of Gemini
// CLI or Qwen Code: write_file a full write of content, the others old
// and new strings; the unified diff the agent showed, when it did, as
// the structured patch.
func EditPayload(tool, path, content, oldString, newString, fileDiff string) store.Payload {
	p := store.Payload{Path: path, IsFullWrite: adapters.Bool(tool == "write_file")}
	if tool == "write_file" {
		p.NewString = adapters.Text(content)
	} else {
		p.OldString, p.NewString = adapters.Text(oldString), adapters.Text(newString)
	}
	if fileDiff != "" {
		p.StructuredPatch, _ = json.Marshal(fileDiff)
	}
	return p
}

// toolStep maps a tool call, with the result Gemini recorded in it, to a
// step (see Parse).
func (p *parser) toolStep(id string, tc toolCall) store.Step {
	var a args
	json.Unmarshal(tc.Args, &a)
	var d display
	json.Unmarshal(tc.ResultDisplay, &d)
	out, errText := resultText(tc.Result)
	for _, f := range []string{d.FilePath, a.FilePath, a.AbsolutePath, a.DirPath, a.Directory, a.Path} {
		if strings.HasPrefix(f, "/") {
			p.paths = append(p.paths, f)
		}
	}
	st := store.Step{ID: id, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown}
	filePath := cmp.Or(d.FilePath, a.FilePath, a.AbsolutePath, a.Path)
	switch {
	case tc.Name == "run_shell_command" && a.Command != "":
		st.Type = store.TypeCommand
		st.Payload = store.Payload{Command: adapters.Text(a.Command), Stdout: adapters.Text(out)}
		if cwd := cmp.Or(a.DirPath, a.Directory); cwd != "" {
			st.Payload.Cwd = adapters.Text(cwd)
		}
	case IsEdit(tc.Name) && filePath != "":
		st.Type = store.TypeEdit
		st.Payload = EditPayload(tc.Name, filePath, a.Content, a.OldString, a.NewString, d.FileDiff)
	case tc.Name == "read_file" && filePath != "" && store.FindImages(tc.Result) == nil:
		// A read payload has no place for an image read (an inlineData
		// part): that read stays an other step, with its result.
		st.Type = store.TypeRead
		st.Payload = store.Payload{Path: filePath}
		if a.StartLine != nil && a.EndLine != nil {
			st.Payload.Range = &[2]int64{*a.StartLine, *a.EndLine}
		} else {
			st.Payload.Range = adapters.ReadRange(a.Offset, a.Limit)
		}
	default:
		st.Type = store.TypeOther
		raw := map[string]any{}
		for k, v := range map[string]json.RawMessage{"input": tc.Args, "output": tc.Result, "display": tc.ResultDisplay} {
			if adapters.Present(v) {
				raw[k] = v
			}
		}
		st.Payload = store.Payload{ToolName: cmp.Or(tc.Name, "unknown"), Raw: adapters.Raw(raw)}
	}
	switch tc.Status {
	case "success":
		st.Outcome = adapters.OutcomeOK // the exit code its output states, by the builder's rule
	case "error":
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: cmp.Or(errText, out, "error")}
	case "cancelled":
		adapters.Reject(&st, cmp.Or(errText, "cancelled"))
	}
	return st
}

// resultText is the output (or error) of a call's functionResponse parts.
func resultText(raw json.RawMessage) (output, errText string) {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	json.Unmarshal(raw, &parts)
	var outs, errs []string
	for _, part := range parts {
		if s := jsonText(part.FunctionResponse.Response.Output); s != "" {
			outs = append(outs, s)
		}
		if s := jsonText(part.FunctionResponse.Response.Error); s != "" {
			errs = append(errs, s)
		}
	}
	return strings.Join(outs, "\n"), strings.Join(errs, "\n")
}

// jsonText is a JSON string's text, or any other present value as JSON.
func jsonText(raw json.RawMessage) string {
	if !adapters.Present(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
