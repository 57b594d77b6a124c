package views

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/agentreview/service/internal/term"
)

// FuzzExportMarkdownShape puts any text in every place a recorded text
// goes in the Markdown report (title, prompt, a step's summary, a field, an
// output, a message, an error, a note, a file and a command) and reads the
// report back as GitHub would: whatever the text, the document keeps its
// shape: its own headings in order, each step's line (outside any quote
// or code) in order, and each output whole in its fenced block, as the
// app shows it (term.Plain).
func FuzzExportMarkdownShape(f *testing.F) {
	for _, s := range []string{
		"", "plain", "```", "````go\nx", "# heading", "> quote", "<script>x</script>", "<!--", "[x]: http://e", "a | b",
		"- item\n- item", "1. one", "***", "---", "=====", "    indented", "~~~", "\\", "`", "**#1 message**", "\n\n\n", "\r\n", "&amp;",
		"</details>", "![i](x)", "|---|", "x\n```\n# after", "<div>\n\n# x\n</div>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps := []StepView{
			{Seq: 1, Type: "message", LineRole: "user", Summary: s, Status: "ok", Blocks: []Block{{Label: "Text", Text: Text{Shown: s}, Markdown: true}}},
			{Seq: 2, Type: "command", Summary: s, Status: "failed: " + s, Error: Text{Shown: s},
				Fields:  []Field{{Label: s, Value: Text{Shown: s}}, {Label: "Command", Value: Text{Shown: s + "\n" + s}}},
				Blocks:  []Block{{Label: "stdout", Text: Text{Shown: s}}},
				Flags:   []FlagView{{Kind: s, Severity: "high", Reason: Text{Shown: s}}},
				Notes:   []NoteView{{Seq: 2, Author: s, Text: s}},
				Diff:    []DiffLine{{Kind: "del", Text: "-" + s}, {Kind: "add", Text: "+" + s}},
				ActorID: "a", ActorType: "subagent", ActorLabel: s},
			{Seq: 3, Type: "message", LineRole: s, Summary: s, Status: s},
		}
		for _, outline := range []bool{false, true} {
			p := ExportPage{
				Session: SessionView{ID: "s1", Title: s, AgentKind: s, AgentVersion: s, Cost: s, Workspace: s, Repo: s,
					Files: []FileRow{{Name: s}}, Commands: []CommandRow{{Command: s, ExitCodes: s}}, Tools: []ToolRow{{Tool: s, Calls: 1}},
					Notes: []NoteView{{Seq: 2, Author: s, Text: s}}, Verdict: &VerdictView{State: s, Reviewer: s, Note: s}},
				Turns: func(yield func(ExportTurn) bool) {
					yield(ExportTurn{Number: 1, Mode: s, At: "2026-01-01T00:00:00Z", Prompt: s, Steps: slices.Values(steps)})
				},
				Generated: "2026-01-01 00:00 UTC",
				Manifest:  func() []ManifestRow { return []ManifestRow{{Rule: s, Count: 1, Kept: []string{s}}} },
				Outline:   outline,
			}
			var b bytes.Buffer
			if err := ExportMarkdown(&b, p); err != nil {
				t.Fatal(err)
			}
			checkShape(t, b.Bytes(), s, len(steps), outline)
		}
	})
}

// checkShape reads src as GitHub's Markdown and checks the report's own
// structure in it (checkShape's caller put s in every recorded place).
func checkShape(t *testing.T, src []byte, s string, steps int, outline bool) {
	t.Helper()
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var headings []int
	var stepLines, codes []string
	quoted := func(n ast.Node) bool {
		for p := n.Parent(); p != nil; p = p.Parent() {
			if p.Kind() == ast.KindBlockquote {
				return true
			}
		}
		return false
	}
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || quoted(n) {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			headings = append(headings, n.Level)
		case *ast.Paragraph, *ast.TextBlock:
			if e, ok := n.FirstChild().(*ast.Emphasis); ok && e.Level == 2 {
				if t, ok := e.FirstChild().(*ast.Text); ok && strings.HasPrefix(string(t.Segment.Value(src)), "#") {
					stepLines = append(stepLines, string(t.Segment.Value(src)))
				}
			}
		case *ast.FencedCodeBlock:
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			codes = append(codes, b.String())
		}
		return ast.WalkContinue, nil
	})
	// # title, ## Review, [## Notes], ## Files touched, ## Commands run,
	// ## Other tools, ## Timeline, ### Turn 1, ## Redaction.
	if want := []int{1, 2, 2, 2, 2, 2, 2, 3, 2}; !slices.Equal(headings, want) {
		t.Fatalf("headings %v, want %v in:\n%s", headings, want, src)
	}
	want := []string{"#1 message", "#2 command", "#3 message"}
	if !slices.Equal(stepLines, want) {
		t.Fatalf("step lines %q, want %q in:\n%s", stepLines, want, src)
	}
	if outline {
		return
	}
	whole := term.Plain(s) // as the app shows it
	if !strings.HasSuffix(whole, "\n") {
		whole += "\n"
	}
	if !slices.Contains(codes, whole) {
		t.Fatalf("no fenced block holds the output %q whole; blocks %q in:\n%s", whole, codes, src)
	}
}
