package qwencode

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/store"
)

// call is a functionCall, kept on its step until its result comes.
type call struct {
	name string
	args json.RawMessage
	cwd  string // the record's working folder, where a command runs unless told
}

// toolCallResult is the metadata Qwen Code records beside a call's
// functionResponse.
type toolCallResult struct {
	CallID        string          `json:"callId"`
	Status        string          `json:"status"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
	Error         json.RawMessage `json:"error"`
	ErrorType     string          `json:"errorType"`
}

// result is what a tool_result record says of one call.
type result struct {
	response json.RawMessage // functionResponse.response: {output} or {error}
	tcr      *toolCallResult
	parts    json.RawMessage // the record's parts, when they hold an image
	decision string          // ui_telemetry's decision: accept, modify, auto_accept, reject
}

// args are the arguments of the tools the adapter maps to a step type.
type args struct {
	Command      string `json:"command"`
	Directory    string `json:"directory"`
	DirPath      string `json:"dir_path"`
	FilePath     string `json:"file_path"`
	AbsolutePath string `json:"absolute_path"`
	Path         string `json:"path"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Content      string `json:"content"`
	Offset       *int64 `json:"offset"`
	Limit        *int64 `json:"limit"`
}

// toolResult completes the calls a tool_result record answers, each by its
// callId; a result whose call was not read is a step of its own.
func (p *parser) toolResult(r *record, at adapters.Time) {
	tcr := r.ToolCallResult
	var frs []*functionResponse
	for _, raw := range parts(r) {
		var pt part
		adapters.DecodeObject(raw, &pt)
		if pt.FunctionResponse != nil {
			frs = append(frs, pt.FunctionResponse)
		}
	}
	if len(frs) == 0 && tcr != nil && tcr.CallID != "" {
		frs = append(frs, &functionResponse{ID: tcr.CallID})
	}
	if len(frs) == 0 {
		p.b.Skip("tool_result without a call")
		return
	}
	var images json.RawMessage
	if raw, err := json.Marshal(parts(r)); err == nil && store.FindImages(raw) != nil {
		images = raw
	}
	for _, fr := range frs {
		res := &result{response: fr.Response, parts: images}
		if tcr != nil && (len(frs) == 1 || tcr.CallID == fr.ID) {
			res.tcr = tcr
		}
		callID := fr.ID
		if callID == "" && res.tcr != nil {
			callID = res.tcr.CallID
		}
		p.complete(r, callID, fr.Name, res, at)
	}
}

// complete gives the oldest call with this id still waiting its result.
func (p *parser) complete(r *record, callID, name string, res *result, at adapters.Time) {
	var steps []*adapters.Step
	if q := p.waiting[callID]; len(q) > 0 {
		if len(q) == 1 {
			delete(p.waiting, callID)
		} else {
			p.waiting[callID] = q[1:]
		}
		steps, _ = p.b.Result(q[0])
	}
	if len(steps) == 0 {
		c := &call{name: name, cwd: r.Cwd}
		res.decision = p.decision(c)
		p.s.Add(p.actor(r), p.toolStep(p.stepID(cmp.Or(callID, r.UUID)), c, res), at)
		return
	}
	for _, s := range steps {
		c, _ := s.Call.(*call)
		if c == nil {
			c = &call{name: name, cwd: r.Cwd}
		}
		res.decision = p.decision(c)
		st := p.toolStep(s.St.ID, c, res)
		st.ContentStatus, st.Channels = s.St.ContentStatus, s.St.Channels
		*s.St = st
	}
}

// callKey names a tool call by its tool and arguments, for telemetry,
// which records no call id.
func callKey(name string, raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			raw = b
		}
	}
	return name + "\x00" + string(raw)
}

// decision takes the oldest decision telemetry recorded for a call of the
// same tool with the same arguments.
func (p *parser) decision(c *call) string {
	k := callKey(c.name, c.args)
	q := p.decisions[k]
	if len(q) == 0 {
		return ""
	}
	if len(q) == 1 {
		delete(p.decisions, k)
	} else {
		p.decisions[k] = q[1:]
	}
	return q[0]
}

// toolStep maps a call, with its result when it came (res nil before), to
// a step: run_shell_command is a command (exit code from "Exit Code: N" in
// its output, by the builder's rule), edit and replace edits with their
// old and new strings, write_file a full write (resultDisplay.fileDiff the
// structured patch), read_file a read, and any other tool (or a read of an
// image) an other step with raw input, result and display. Status success
// is ok, error failed with its errorType (execution_denied, a call the
// approval mode forbids, is rejected), cancelled rejected (not run), as
// for Gemini CLI; telemetry's decision, where recorded, is the decision.
func (p *parser) toolStep(id string, c *call, res *result) store.Step {
	var a args
	json.Unmarshal(c.args, &a)
	var out, errText, display string
	var tcr toolCallResult
	if res != nil {
		out, errText = responseText(res.response)
		if res.tcr != nil {
			tcr = *res.tcr
		}
		json.Unmarshal(tcr.ResultDisplay, &display) // a text; an edit's is an object
	}
	var diff struct {
		FileDiff string `json:"fileDiff"`
	}
	json.Unmarshal(tcr.ResultDisplay, &diff)
	st := store.Step{ID: id, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown}
	path := cmp.Or(a.FilePath, a.AbsolutePath, a.Path)
	switch {
	case c.name == "run_shell_command" && a.Command != "":
		st.Type = store.TypeCommand
		st.Payload = store.Payload{Command: adapters.Text(a.Command)}
		if cwd := cmp.Or(a.Directory, a.DirPath, c.cwd); cwd != "" {
			st.Payload.Cwd = adapters.Text(cwd)
		}
		if res != nil {
			st.Payload.Stdout = adapters.Text(cmp.Or(out, display))
		}
	case geminicli.IsEdit(c.name) && path != "":
		st.Type = store.TypeEdit
		st.Payload = geminicli.EditPayload(c.name, path, a.Content, a.OldString, a.NewString, diff.FileDiff)
	case c.name == "read_file" && path != "" && (res == nil || res.parts == nil):
		st.Type = store.TypeRead
		st.Payload = store.Payload{Path: path}
		st.Payload.Range = adapters.ReadRange(a.Offset, a.Limit)
	default:
		st.Type = store.TypeOther
		raw := map[string]any{}
		if adapters.Present(c.args) {
			raw["input"] = c.args
		}
		if res != nil {
			for k, v := range map[string]json.RawMessage{"result": res.response, "display": tcr.ResultDisplay, "parts": res.parts} {
				if adapters.Present(v) {
					raw[k] = v
				}
			}
		}
		st.Payload = store.Payload{ToolName: cmp.Or(c.name, "unknown"), Raw: adapters.Raw(raw)}
	}
	if res != nil {
		outcome(&st, res, tcr, errText, display)
	}
	return st
}

// outcome sets a finished call's outcome and decision (see toolStep).
func outcome(st *store.Step, res *result, tcr toolCallResult, errText, display string) {
	status := tcr.Status
	if status == "" && errText != "" {
		status = "error"
	} else if status == "" && adapters.Present(res.response) {
		status = "success"
	}
	var tcrErr struct {
		Message string `json:"message"`
	}
	json.Unmarshal(tcr.Error, &tcrErr)
	msg := strings.TrimSpace(cmp.Or(errText, display, tcrErr.Message))
	switch status {
	case "success":
		st.Outcome = adapters.OutcomeOK
	case "error":
		if tcr.ErrorType == "execution_denied" {
			adapters.Reject(st, cmp.Or(msg, "denied"))
			return
		}
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: cmp.Or(tcr.ErrorType, "tool_error"), Message: cmp.Or(msg, "error")}
	case "cancelled":
		adapters.Reject(st, cmp.Or(msg, "cancelled"))
		return
	}
	switch res.decision {
	case "accept", "modify":
		st.Decision = adapters.DecisionAccepted
	case "auto_accept":
		st.Decision = adapters.DecisionAuto
	case "reject":
		if st.Outcome != adapters.OutcomeOK {
			adapters.Reject(st, cmp.Or(msg, "rejected"))
		}
	}
}

// responseText is a functionResponse's output and error as text.
func responseText(raw json.RawMessage) (output, errText string) {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	json.Unmarshal(raw, &r)
	return jsonString(r.Output), jsonString(r.Error)
}

// jsonString is a JSON string's text, or any other present value as JSON.
func jsonString(raw json.RawMessage) string {
	if !adapters.Present(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
