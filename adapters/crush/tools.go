package crush

import (
	"cmp"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// input holds the arguments of the tools the adapter maps.
type input struct {
	Command    string  `json:"command"`
	WorkingDir string  `json:"working_dir"`
	FilePath   string  `json:"file_path"`
	Content    string  `json:"content"`
	OldString  string  `json:"old_string"`
	NewString  string  `json:"new_string"`
	Offset     *int64  `json:"offset"`
	Limit      *int64  `json:"limit"`
	Edits      []edits `json:"edits"`
}

type edits struct {
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// call is what a tool call's steps keep for its result.
type call struct {
	name  string
	input json.RawMessage // the arguments, when they are a JSON object
}

// call adds the steps of a tool call: bash is a command; view a read;
// write a full write; edit an edit with its old and new strings; multiedit
// one edit per change; every other tool (ls, glob, grep, fetch, download,
// agent, sourcegraph, diagnostics, todos, MCP tools, ...) an other step
// keeping its input and, once it comes, its result. A call's result
// (result) gives the outcome. Crush does not record whether it asked for
// permission, so a call has decision unknown, unless the user denied it.
func (p *parser) call(s *adapters.Stream, a *adapters.Actor, m *messageRow, i int, at adapters.Time) {
	tc := &m.Parts[i].Data
	id := cmp.Or(tc.ID, partID(m, i))
	var in input
	var raw json.RawMessage
	if json.Valid([]byte(tc.Input)) && strings.HasPrefix(strings.TrimSpace(tc.Input), "{") {
		raw = json.RawMessage(tc.Input)
		json.Unmarshal(raw, &in)
	}
	base := store.Step{ID: id, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown}
	var steps []store.Step
	switch tc.Name {
	case "bash":
		if in.Command == "" {
			break
		}
		st := base
		st.Type, st.Payload.Command = store.TypeCommand, adapters.Text(in.Command)
		if in.WorkingDir != "" {
			st.Payload.Cwd = adapters.Text(in.WorkingDir)
		}
		steps = append(steps, st)
	// A read, write or edit without a path is kept as the tool it was
	// (other, below): a step of those types needs one.
	case "view":
		if in.FilePath == "" {
			break
		}
		st := base
		st.Type, st.Payload.Path = store.TypeRead, in.FilePath
		st.Payload.Range = adapters.ReadRange(in.Offset, in.Limit)
		steps = append(steps, st)
	case "write":
		if in.FilePath == "" {
			break
		}
		st := base
		st.Type, st.Payload.Path = store.TypeEdit, in.FilePath
		st.Payload.NewString, st.Payload.IsFullWrite = adapters.Text(in.Content), adapters.Bool(true)
		steps = append(steps, st)
	case "edit":
		if in.FilePath == "" {
			break
		}
		steps = append(steps, edit(base, in.FilePath, edits{in.OldString, in.NewString}))
	case "multiedit":
		if in.FilePath == "" {
			break
		}
		for k, e := range in.Edits {
			st := edit(base, in.FilePath, e)
			if k > 0 {
				st.ID = id + "#" + strconv.Itoa(k)
			}
			steps = append(steps, st)
		}
	}
	if len(steps) == 0 {
		st := base
		st.Type, st.Payload.ToolName = store.TypeOther, cmp.Or(tc.Name, "unknown")
		st.Payload.Raw = otherRaw(raw, tc.Input, nil)
		steps = append(steps, st)
	}
	added := make([]*adapters.Step, len(steps))
	for k, st := range steps {
		added[k] = s.Add(a, st, at)
		added[k].Call = &call{name: tc.Name, input: raw}
	}
	p.b.Call(id, added...)
}

// edit is an edit step of one change to a file. Crush's edit with an empty
// old string creates the file.
func edit(base store.Step, path string, e edits) store.Step {
	st := base
	st.Type, st.Payload.Path = store.TypeEdit, path
	st.Payload.OldString, st.Payload.NewString = adapters.Text(e.OldString), adapters.Text(e.NewString)
	st.Payload.IsFullWrite = adapters.Bool(e.OldString == "")
	return st
}

// otherRaw is an other step's raw: its input (the arguments as JSON, or
// their text when they are not an object), and its result (what the tool
// answered) and metadata once it came.
func otherRaw(in json.RawMessage, text string, r *partData) json.RawMessage {
	raw := map[string]any{}
	switch {
	case in != nil:
		raw["input"] = in
	case text != "":
		raw["input"] = text
	}
	if r != nil {
		raw["result"] = r.Content
		if md := strings.TrimSpace(r.Metadata); strings.HasPrefix(md, "{") && json.Valid([]byte(md)) {
			raw["metadata"] = json.RawMessage(md)
		}
	}
	return adapters.Raw(raw)
}

// cwdTag is the working folder Crush's bash appends to its output.
var cwdTag = regexp.MustCompile(`\s*<cwd>[^<]*</cwd>\s*$`)

// exitLine is the line Crush's bash adds for a command that exited with
// another code than 0, after its output.
var exitLine = regexp.MustCompile(`(?m)^Exit code (-?\d{1,9})\s*$`)

// denied and cancelled are the results Crush gives a call the user
// refused, and one stopped when the user cancelled the request.
const (
	denied    = "Permission denied"
	cancelled = "Tool execution canceled by user"
)

// result completes a call's step with its result: the output of a
// command (its exit code from the line Crush adds), the diff of a write,
// an other step's output. An error result failed, or did not run when the
// user denied it.
func result(s *adapters.Step, r *partData) {
	st := s.St
	c, _ := s.Call.(*call)
	st.Outcome = adapters.OutcomeOK
	switch {
	case r.IsError && strings.HasPrefix(r.Content, denied):
		adapters.Reject(st, r.Content)
	case r.IsError && strings.HasPrefix(r.Content, cancelled):
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "cancelled", Message: r.Content}
	case r.IsError:
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: cmp.Or(r.Content, "error")}
	}
	switch st.Type {
	case store.TypeCommand:
		if r.IsError {
			break // what Crush said instead of running it, in the error
		}
		out := cwdTag.ReplaceAllString(r.Content, "")
		st.Payload.Stdout = adapters.Text(out)
		if m := exitLine.FindAllStringSubmatch(out, -1); len(m) > 0 {
			code, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
			st.Payload.ExitCode = &code
		}
	case store.TypeEdit:
		var md struct {
			Diff string `json:"diff"`
		}
		if json.Unmarshal([]byte(r.Metadata), &md) == nil && md.Diff != "" && c != nil && c.name == "write" {
			st.Payload.StructuredPatch, _ = json.Marshal(md.Diff)
		}
	case store.TypeOther:
		var in json.RawMessage
		if c != nil {
			in = c.input
		}
		var text string
		if in == nil {
			var prev struct {
				Input string `json:"input"`
			}
			json.Unmarshal(st.Payload.Raw, &prev)
			text = prev.Input
		}
		st.Payload.Raw = otherRaw(in, text, r)
	}
}
