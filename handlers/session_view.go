package handlers

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// sessionView turns a stored session into what the session page and the
// export show.
func sessionView(d store.SessionDetail) views.SessionView {
	v := views.SessionView{
		ID: d.ID, Title: d.Summary.Title, AgentKind: d.Agent.Kind, AgentVersion: d.Agent.Version,
		Cost: cost(d.Metrics), APIRequests: "not recorded", TokensIn: "not recorded", TokensOut: "not recorded",
		Steps: d.Summary.Steps, TurnCount: d.Summary.Turns, Failed: d.Summary.Failed,
		RefOnly: d.Summary.ReferenceOnly, Flags: d.Summary.Flags,
		Workspace: d.Workspace.Root, Repo: d.Workspace.Repo,
		Started: d.StartedAt, Ended: d.EndedAt, Segments: d.Summary.Segments,
		Owner: d.OwnerID, CapturedOn: d.CapturedOn,
	}
	if v.Ended == "" {
		v.Ended = "open"
	}
	if m := d.Metrics; m != nil {
		v.APIRequests = strconv.FormatInt(m.APIRequests, 10)
		v.TokensIn = strconv.FormatInt(m.Tokens.Input, 10)
		v.TokensOut = strconv.FormatInt(m.Tokens.Output, 10)
	}
	for _, f := range d.Report.Files {
		v.Files = append(v.Files, views.FileRow{Path: f.Path, Created: f.Created, Edited: f.Edited, Read: f.Read, Failed: f.Failed})
	}
	for _, c := range d.Report.Commands {
		codes := make([]string, len(c.ExitCodes))
		for i, code := range c.ExitCodes {
			codes[i] = strconv.FormatInt(code, 10)
		}
		v.Commands = append(v.Commands, views.CommandRow{
			Command: c.Command, Runs: c.Runs, Failed: c.Failed, ExitCodes: strings.Join(codes, ", "), NotInline: c.OutputNotInline,
		})
	}
	v.Turns = turnViews(d)
	return v
}

// turnViews groups the steps by turn, in turn order.
func turnViews(d store.SessionDetail) []views.TurnView {
	byID := map[string]int{}
	out := make([]views.TurnView, len(d.Turns))
	for i, t := range d.Turns {
		byID[t.ID] = i
		out[i] = views.TurnView{ID: t.ID, DOMID: "turn-" + hex.EncodeToString([]byte(t.ID)), Number: t.Index, Mode: t.Mode, Actor: t.ActorID}
	}
	for _, s := range d.Steps {
		i, ok := byID[s.TurnID]
		if !ok {
			continue
		}
		if out[i].Prompt == "" && s.Type == store.TypeMessage && s.Payload.Role == "user" {
			out[i].Prompt = deref(s.Payload.Text)
		}
		out[i].Steps = append(out[i].Steps, stepView(s))
	}
	return out
}

func stepView(s store.Step) views.StepView {
	v := views.StepView{Seq: s.Seq, Type: s.Type, At: s.At, Decision: s.Decision, Summary: stepSummary(s)}
	switch {
	case s.Outcome == "failed":
		v.Status, v.StatusClass = "failed", "failed"
		if s.Error != nil {
			v.Status += ": " + s.Error.Type
		}
	case s.ContentStatus == store.ContentReferenceOnly:
		v.Status, v.StatusClass = "reference-only", "ref"
	case s.Outcome == "ok":
		v.Status, v.StatusClass = "ok", "ok"
	default:
		v.Status, v.StatusClass = s.Outcome, "other"
	}
	if s.Error != nil {
		v.Error = s.Error.Type
		if s.Error.Message != "" {
			v.Error += ": " + s.Error.Message
		}
	}
	for _, f := range s.Flags {
		v.Flags = append(v.Flags, views.FlagView{Kind: f.Kind, Severity: f.Severity, Reason: f.Reason})
	}
	p := s.Payload
	field := func(label string, value *string) {
		if value != nil && *value != "" {
			v.Fields = append(v.Fields, views.Field{Label: label, Value: *value})
		}
	}
	block := func(label string, text *string) {
		if text != nil && *text != "" {
			v.Blocks = append(v.Blocks, views.Block{Label: label, Text: *text})
		}
	}
	switch s.Type {
	case store.TypeCommand:
		field("Command", p.Command)
		field("Working directory", p.Cwd)
		if p.ExitCode != nil {
			code := strconv.FormatInt(*p.ExitCode, 10)
			field("Exit code", &code)
		}
		field("Output kept at", p.OutputRef)
		block("stdout", p.Stdout)
		block("stderr", p.Stderr)
	case store.TypeEdit:
		field("File", &p.Path)
		v.Diff = editDiff(p)
	case store.TypeRead:
		field("File", &p.Path)
		if p.Range != nil {
			r := fmt.Sprintf("lines %d–%d", p.Range[0], p.Range[1])
			field("Range", &r)
		}
	case store.TypeMessage:
		field("Role", &p.Role)
		field("Text kept at", p.TextRef)
		block("Text", p.Text)
	case store.TypeOther:
		field("Tool", &p.ToolName)
		raw := indentJSON(p.Raw)
		block("Recorded", &raw)
	}
	return v
}

// stepSummary is a step's one line in the timeline.
func stepSummary(s store.Step) string {
	p := s.Payload
	switch s.Type {
	case store.TypeCommand:
		if p.Command != nil && *p.Command != "" {
			return oneLine(*p.Command)
		}
		return "command not recorded"
	case store.TypeEdit:
		if p.IsFullWrite != nil && *p.IsFullWrite {
			return "write " + p.Path
		}
		return "edit " + p.Path
	case store.TypeRead:
		if p.Range != nil {
			return fmt.Sprintf("read %s:%d-%d", p.Path, p.Range[0], p.Range[1])
		}
		return "read " + p.Path
	case store.TypeMessage:
		if p.Text == nil {
			return p.Role + ": (not recorded)"
		}
		return p.Role + ": " + oneLine(*p.Text)
	default:
		return p.ToolName + " " + oneLine(string(p.Raw))
	}
}

// oneLine is the first line of s, cut to 160 runes.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	return s
}

func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
