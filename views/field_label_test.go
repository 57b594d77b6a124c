package views

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
)

// TestFieldLabelNamesEveryField: a secret put in each field of a session a
// reviewer reads (its title, workspace, verdict, report rows, models,
// notes, and every text field of a step) is found by the export's scan at
// a place whose field FieldLabel names in words, and every name in
// fieldLabels is of a field the scan labels (none left from a field since
// renamed).
func TestFieldLabelNamesEveryField(t *testing.T) {
	const secret = "ghp_8fK2mQ9xL4tR7vZ1cW5nB3hJ6pY0sD2gA4eU"
	s := "token " + secret
	text := func() *string { v := s; return &v }
	raw, _ := json.Marshal(map[string]string{"token": secret})
	var d store.SessionDetail
	d.Summary.Title, d.Workspace.Root, d.Workspace.Repo = s, s, s
	d.Verdict = &store.Verdict{State: "approved", Note: s, Reviewer: s}
	d.Report = store.Report{Files: []store.FileTouched{{Path: s}}, Commands: []store.CommandRun{{Command: s}}, Tools: []store.ToolUse{{Tool: s}}}
	d.Usage = &store.Usage{Models: []store.ModelUsage{{Model: s}}}
	d.Notes = []store.Note{{Seq: 3, Author: s, Text: s}}
	d.Steps = []store.Step{{Seq: 3, Decision: "accepted", Outcome: "failed",
		Error: &store.StepError{Type: s, Message: s},
		Flags: []store.Flag{{Kind: s, Severity: "danger", Reason: s}},
		Payload: store.Payload{Command: text(), Cwd: text(), Stdout: text(), Stderr: text(), OutputRef: text(),
			Path: s, OldString: text(), NewString: text(), StructuredPatch: raw, Role: "user", Text: text(),
			TextRef: text(), ToolName: s, Raw: raw}}}
	m := redact.NewMasker("")
	redact.Session(m, &d)
	var fields []string
	for _, f := range m.Findings() {
		for _, w := range f.Where {
			field := w
			if _, f, ok := redact.StepPlace(w); ok {
				field = f
			}
			fields = append(fields, field)
			if FieldLabel(field) == field {
				t.Errorf("field %s has no name in words", field)
			}
		}
	}
	planted := []string{"session.title", "session.workspace.root", "session.workspace.repo", "session.verdict.note",
		"session.verdict.reviewer", "report.files.path", "report.commands.command", "report.tools.tool", "usage.models.model",
		"note.author", "note.text", "error.type", "error.message", "flags.kind", "flags.reason", "payload.command", "payload.cwd",
		"payload.stdout", "payload.stderr", "payload.output_ref", "payload.path", "payload.old_string", "payload.new_string",
		"payload.structured_patch", "payload.text", "payload.text_ref", "payload.tool_name", "payload.raw"}
	slices.Sort(fields)
	slices.Sort(planted)
	if !slices.Equal(fields, planted) {
		t.Fatalf("the scan found the secret in\n%v\nwant every field it was put in\n%v", fields, planted)
	}
	for k := range fieldLabels {
		if !slices.Contains(fields, k) {
			t.Errorf("fieldLabels names %s, a field the scan does not label", k)
		}
	}
}
