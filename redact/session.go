package redact

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentreview/service/store"
)

// This file is the one list of the recorded values a report masks. Every
// string a session holds is masked here, except keys the report reads by,
// timestamps and closed enumerations, which the store validates (the test
// beside this file names each one and fails on a field it does not know).

// Session masks every free text of a session read for a report: header,
// summary, segments, actors, turns, report, and the steps it holds (a
// report read a piece at a time passes the rest to Step). Masking is
// deterministic, so masking the report's grouped paths and commands equals
// grouping the masked ones.
func Session(m *Masker, d *store.SessionDetail) {
	mask := func(s *string, where string) {
		if *s != "" {
			*s = m.Mask(*s, where)
		}
	}
	mask(&d.Summary.Title, "session.title")
	mask(&d.Agent.Kind, "session.agent.kind")
	mask(&d.Agent.Version, "session.agent.version")
	mask(&d.Agent.FormatVersion, "session.agent.format_version")
	mask(&d.Workspace.Root, "session.workspace.root")
	mask(&d.Workspace.Repo, "session.workspace.repo")
	mask(&d.Source, "session.source")
	mask(&d.OwnerID, "session.owner_id")
	mask(&d.CapturedOn, "session.captured_on")
	if v := d.Verdict; v != nil {
		mask(&v.State, "session.verdict.state")
		mask(&v.Note, "session.verdict.note")
		mask(&v.Reviewer, "session.verdict.reviewer")
	}
	for i := range d.Report.Files {
		mask(&d.Report.Files[i].Path, "report.files.path")
	}
	for i := range d.Report.Commands {
		mask(&d.Report.Commands[i].Command, "report.commands.command")
	}
	for i := range d.Report.Tools {
		mask(&d.Report.Tools[i].Tool, "report.tools.tool")
	}
	for i := range d.Segments {
		g := &d.Segments[i]
		at := "segments[" + strconv.Itoa(i) + "]."
		mask(&g.StartReason, at+"start_reason")
		for j := range g.SourceFiles {
			mask(&g.SourceFiles[j], at+"source_files")
		}
	}
	for i := range d.Actors {
		at := "actors[" + strconv.Itoa(i) + "]."
		mask(&d.Actors[i].Type, at+"type")
		mask(&d.Actors[i].Label, at+"label")
	}
	for i := range d.Turns {
		mask(&d.Turns[i].Mode, "turns["+strconv.Itoa(i)+"].mode")
	}
	if u := d.Usage; u != nil {
		for i := range u.Models {
			mask(&u.Models[i].Model, "usage.models.model")
		}
		for i := range u.Unpriced {
			mask(&u.Unpriced[i], "usage.unpriced_models")
		}
	}
	for i := range d.Notes {
		n := &d.Notes[i]
		prefix := "step " + strconv.FormatInt(n.Seq, 10) + " "
		mask(&n.Author, prefix+"note.author")
		mask(&n.Text, prefix+"note.text")
	}
	for i := range d.Steps {
		Step(m, &d.Steps[i])
	}
}

// Step masks every free text of a step, in a fixed order, since
// placeholders are numbered by first appearance. Places are labelled
// "step <seq> <field>" (see StepPlace).
func Step(m *Masker, s *store.Step) {
	prefix := "step " + strconv.FormatInt(s.Seq, 10) + " "
	mask := func(t *string, field string) {
		if t != nil && *t != "" {
			*t = m.Mask(*t, prefix+field)
		}
	}
	maskJSON := func(raw *json.RawMessage, field string) {
		if len(*raw) == 0 {
			return
		}
		masked := m.Mask(string(*raw), prefix+field)
		if !json.Valid([]byte(masked)) {
			b, _ := json.Marshal(masked) // keep it valid JSON: the masked text as a string
			masked = string(b)
		}
		*raw = json.RawMessage(masked)
	}
	mask(&s.Decision, "decision")
	mask(&s.Outcome, "outcome")
	for i := range s.Channels {
		mask(&s.Channels[i], "channels")
	}
	if s.Error != nil {
		mask(&s.Error.Type, "error.type")
		mask(&s.Error.Message, "error.message")
	}
	for i := range s.Flags {
		mask(&s.Flags[i].Kind, "flags.kind")
		mask(&s.Flags[i].Reason, "flags.reason")
	}
	p := &s.Payload
	mask(p.Command, "payload.command")
	mask(p.Cwd, "payload.cwd")
	mask(p.Stdout, "payload.stdout")
	mask(p.Stderr, "payload.stderr")
	mask(p.OutputRef, "payload.output_ref")
	mask(&p.Path, "payload.path")
	mask(p.OldString, "payload.old_string")
	mask(p.NewString, "payload.new_string")
	maskJSON(&p.StructuredPatch, "payload.structured_patch")
	mask(&p.Role, "payload.role")
	mask(p.Text, "payload.text")
	mask(p.TextRef, "payload.text_ref")
	mask(&p.ToolName, "payload.tool_name")
	maskJSON(&p.Raw, "payload.raw")
}

// StepPlace splits a place label written by Step into the step's seq and
// the field; ok is false for a label of the session's own fields.
func StepPlace(label string) (seq int64, field string, ok bool) {
	rest, ok := strings.CutPrefix(label, "step ")
	if !ok {
		return 0, "", false
	}
	seqText, field, ok := strings.Cut(rest, " ")
	if !ok {
		return 0, "", false
	}
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return seq, field, true
}
