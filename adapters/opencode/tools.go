package opencode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// input holds the arguments of the tools the adapter maps.
type input struct {
	Command   string `json:"command"`
	Workdir   string `json:"workdir"`
	FilePath  string `json:"filePath"`
	Content   string `json:"content"`
	OldString string `json:"oldString"`
	NewString string `json:"newString"`
	Offset    *int64 `json:"offset"`
	Limit     *int64 `json:"limit"`
	PatchText string `json:"patchText"`
}

// metadata holds what opencode records beside a tool's output.
type metadata struct {
	Exit      *int64 `json:"exit"`
	Output    string `json:"output"`
	Diff      string `json:"diff"`
	SessionID string `json:"sessionId"` // task: the child session it ran in
}

// tool maps a tool part: bash is a command (exit code and output from its
// metadata), read a read, write a full write, edit an edit with its old and
// new strings and diff, apply_patch (and patch) one edit per file of the
// patch; every other tool (glob, grep, list, webfetch, task, todowrite,
// question, skill, MCP tools, ...) is an other step keeping its input,
// output and title (a task also the child session it ran in). The state
// gives the outcome: completed is ok (a command with a non-zero exit
// failed), error failed, and an error saying the user rejected the call is
// a rejection; pending and running are unknown.
// opencode does not record whether a call was asked about, so a call that
// ran has decision unknown.
func (p *parser) tool(pt *part, at adapters.Time) {
	s := &pt.State
	var in input
	var md metadata
	json.Unmarshal(s.Input, &in)
	json.Unmarshal(s.Metadata, &md)
	base := store.Step{ID: pt.ID, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown}
	var steps []store.Step
	switch pt.Tool {
	case "bash":
		st := base
		st.Type = store.TypeCommand
		st.Payload.Command = adapters.Text(in.Command)
		if cwd := cmp.Or(in.Workdir, p.cwd); cwd != "" {
			st.Payload.Cwd = adapters.Text(cwd)
		}
		if s.Status == "completed" {
			st.Payload.Stdout = adapters.Text(cmp.Or(md.Output, s.Output))
			st.Payload.ExitCode = md.Exit
		}
		steps = append(steps, st)
	// A read, write or edit without a path is kept as the tool it was
	// (other, below), as the Claude Code adapter does: a step of those
	// types needs one.
	case "read":
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
		st := base
		st.Type, st.Payload.Path = store.TypeEdit, in.FilePath
		st.Payload.OldString, st.Payload.NewString = adapters.Text(in.OldString), adapters.Text(in.NewString)
		st.Payload.IsFullWrite = adapters.Bool(false)
		if md.Diff != "" {
			st.Payload.StructuredPatch, _ = json.Marshal(md.Diff)
		}
		steps = append(steps, st)
	case "apply_patch", "patch":
		for i, e := range p.b.PatchEdits(in.PatchText, p.cwd) {
			st := base
			if i > 0 {
				st.ID = fmt.Sprintf("%s#%d", pt.ID, i)
			}
			st.Type, st.Payload = store.TypeEdit, e
			steps = append(steps, st)
		}
	}
	if len(steps) == 0 {
		st := base
		st.Type, st.Payload.ToolName = store.TypeOther, cmp.Or(pt.Tool, "unknown")
		raw := map[string]any{"title": s.Title}
		if adapters.Present(s.Input) {
			raw["input"] = s.Input
		}
		if s.Status == "completed" {
			raw["output"] = s.Output
		}
		if md.SessionID != "" {
			raw["child_session"] = md.SessionID
		}
		st.Payload.Raw = adapters.Raw(raw)
		steps = append(steps, st)
	}
	for _, st := range steps {
		outcome(&st, s)
		p.s.Add(nil, st, at)
	}
}

// rejections are the starts of the errors opencode gives a call the user
// refused (or a rule denied) before it ran.
var rejections = []string{"The user rejected permission", "The user has specified a rule which prevents", "The user dismissed"}

func outcome(st *store.Step, s *toolState) {
	switch s.Status {
	case "completed":
		st.Outcome = adapters.OutcomeOK
		if c := st.Payload.ExitCode; c != nil && *c != 0 {
			st.Outcome = adapters.OutcomeFailed
			st.Error = &store.StepError{Type: "exit_code", Message: fmt.Sprintf("Exit code %d", *c)}
		}
	case "error":
		for _, r := range rejections {
			if strings.Contains(s.Error, r) {
				adapters.Reject(st, s.Error)
				return
			}
		}
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "tool_error", Message: cmp.Or(s.Error, "error")}
	}
}
