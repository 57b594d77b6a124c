package views

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
)

// TestFieldLabelNamesEveryTextField: a secret in every text field of a
// step is found by the export's scan at a place whose field FieldLabel
// names in words, and every name in fieldLabels is of a field the scan
// labels (none left from a field since renamed).
func TestFieldLabelNamesEveryTextField(t *testing.T) {
	const secret = "ghp_8fK2mQ9xL4tR7vZ1cW5nB3hJ6pY0sD2gA4eU"
	text := func() *string { s := "token " + secret; return &s }
	raw, _ := json.Marshal(map[string]string{"token": secret})
	st := store.Step{Seq: 3, Decision: "accepted", Outcome: "failed",
		Error: &store.StepError{Type: *text(), Message: *text()},
		Flags: []store.Flag{{Kind: *text(), Severity: "danger", Reason: *text()}},
		Payload: store.Payload{Command: text(), Cwd: text(), Stdout: text(), Stderr: text(), OutputRef: text(),
			Path: *text(), OldString: text(), NewString: text(), StructuredPatch: raw, Role: "user", Text: text(),
			TextRef: text(), ToolName: *text(), Raw: raw}}
	m := redact.NewMasker("")
	redact.Step(m, &st)
	var fields []string
	for _, f := range m.Findings() {
		for _, w := range f.Where {
			_, field, ok := redact.StepPlace(w)
			if !ok {
				t.Fatalf("place %q is not a step's", w)
			}
			fields = append(fields, field)
			if FieldLabel(field) == field {
				t.Errorf("field %s has no name in words", field)
			}
		}
	}
	planted := []string{"error.type", "error.message", "flags.kind", "flags.reason", "payload.command", "payload.cwd",
		"payload.stdout", "payload.stderr", "payload.output_ref", "payload.path", "payload.old_string", "payload.new_string",
		"payload.structured_patch", "payload.text", "payload.text_ref", "payload.tool_name", "payload.raw"}
	slices.Sort(fields)
	slices.Sort(planted)
	if !slices.Equal(fields, planted) {
		t.Fatalf("the scan found the secret in %v; want every field it was put in, %v", fields, planted)
	}
	session := []string{"session.title", "session.workspace.root", "session.workspace.repo", "session.verdict.note",
		"session.verdict.reviewer", "report.files.path", "report.commands.command", "report.tools.tool",
		"usage.models.model", "note.author", "note.text"}
	for k := range fieldLabels {
		if !slices.Contains(fields, k) && !slices.Contains(session, k) {
			t.Errorf("fieldLabels names %s, a field the scan does not label", k)
		}
	}
}
