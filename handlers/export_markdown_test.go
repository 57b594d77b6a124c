package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/views"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// markdownFixture is a session whose recorded texts try to take over a
// Markdown document: a prompt that opens a fence it never closes, output
// with a longer run of backticks than a fence, a reply with raw HTML and
// a heading, a title with emphasis, a file name with a pipe, a secret in
// an output and a failure.
func markdownFixture(sid string, at time.Time) (batch obj, stdout string) {
	stdout = "```````\nAWS_ACCESS_KEY_ID=" + fakeAWS + "\n| not | a | table |\n"
	b := sessionBatch(sid, "claude-code", "2.1.0", at, "/home/dev/app", nil)
	b["turns"] = arr{turnRec(sid, 1, at, ""), turnRec(sid, 2, at.Add(time.Minute), "plan")}
	b["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("Fix *the* bug\n```go\nfunc main() {")),
		stepRec(sid, 2, 1, at.Add(2*time.Second), "command", obj{"command": "go test ./... | tee `out`.log", "stdout": stdout, "exit_code": 1}),
		stepRec(sid, 3, 1, at.Add(5*time.Second), "edit", obj{"path": "/home/dev/app/a|b.go", "old_string": "return nil\n", "new_string": "return err\n", "is_full_write": false}),
		stepRec(sid, 4, 2, at.Add(time.Minute), "message", userPrompt("Now explain")),
		stepRec(sid, 5, 2, at.Add(61*time.Second), "message", obj{"role": "assistant", "text": "<script>alert(1)</script>\n# Not a heading of the report\nDone."}),
	}
	return b, stdout
}

// TestExportMarkdown downloads a session's report as Markdown and reads it
// back as a Markdown reader does (goldmark with GitHub's tables): every
// turn a heading and every step its line, in order, whatever the recorded
// texts hold; the output a fenced block holding it whole, its secret
// masked; the edit a diff block; the reply's HTML and heading inside its
// quote; the review and the manifest. The HTML report of the same walk
// masks the same secret the same way.
func TestExportMarkdown(t *testing.T) {
	s := newTestService(t)
	const sid = "md-1"
	at := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	batch, stdout := markdownFixture(sid, at)
	s.mustPush(batch, http.StatusCreated)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	body, _ := json.Marshal(obj{"state": "needs_attention", "reviewer": "Ann", "note": "check the *pipe*"})
	if code, out := call(t, srv, http.MethodPut, "/api/sessions/"+sid+"/verdict", string(body), nil); code != http.StatusOK {
		t.Fatalf("PUT verdict = %d %s", code, out)
	}

	var review Review
	if err := json.Unmarshal(s.get("/api/sessions/"+sid+"/export/review").Body.Bytes(), &review); err != nil || len(review.Findings) != 1 {
		t.Fatalf("export review: %v %+v", err, review)
	}
	masked := strings.ReplaceAll(stdout, fakeAWS, review.Findings[0].Placeholder)

	rec := s.get("/api/sessions/" + sid + "/export?format=md")
	if rec.Code != http.StatusOK {
		t.Fatalf("export?format=md = %d %s", rec.Code, rec.Body)
	}
	if ct, cd := rec.Header().Get("Content-Type"), rec.Header().Get("Content-Disposition"); ct != "text/markdown; charset=utf-8" || cd != `attachment; filename="session-md-1.md"` {
		t.Errorf("headers %q, %q", ct, cd)
	}
	src := rec.Body.Bytes()
	if strings.Contains(string(src), fakeAWS) {
		t.Fatal("the Markdown holds the secret")
	}
	if html := s.get("/api/sessions/" + sid + "/export").Body.String(); !strings.Contains(html, review.Findings[0].Placeholder) || strings.Contains(html, fakeAWS) {
		t.Error("the HTML report does not mask the secret as the Markdown does")
	}

	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var headings, stepLines, codes, diffs []string
	var htmlOutsideQuotes []string
	inQuote := func(n ast.Node) bool {
		for p := n.Parent(); p != nil; p = p.Parent() {
			if p.Kind() == ast.KindBlockquote {
				return true
			}
		}
		return false
	}
	var plain func(n ast.Node) string
	plain = func(n ast.Node) string {
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(src))
			case *ast.String:
				b.Write(c.Value)
			default:
				b.WriteString(plain(c))
			}
		}
		return b.String()
	}
	var quotedHeadings []string
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if inQuote(n) {
				quotedHeadings = append(quotedHeadings, plain(n))
			} else {
				headings = append(headings, fmt.Sprintf("h%d %s", n.Level, plain(n)))
			}
		case *ast.Paragraph:
			if e, ok := n.FirstChild().(*ast.Emphasis); ok && e.Level == 2 && !inQuote(n) {
				stepLines = append(stepLines, plain(e))
			}
		case *ast.FencedCodeBlock:
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			if string(n.Language(src)) == "diff" {
				diffs = append(diffs, b.String())
			} else {
				codes = append(codes, b.String())
			}
		case *ast.HTMLBlock, *ast.RawHTML:
			if !inQuote(n) {
				htmlOutsideQuotes = append(htmlOutsideQuotes, string(n.Text(src))) //nolint:staticcheck
			}
		}
		return ast.WalkContinue, nil
	})

	wantHeadings := []string{"h1 Fix the bug", "h2 Review", "h2 Files touched", "h2 Commands run", "h2 Timeline", "h3 Turn 1", "h3 Turn 2", "h2 Redaction"}
	var got []string
	for _, h := range headings {
		for _, w := range wantHeadings {
			if h == w || strings.HasPrefix(h, w+" ") {
				got = append(got, w)
			}
		}
	}
	if !slices.Equal(got, wantHeadings) {
		t.Errorf("the document's headings = %q; want, in order, %q", headings, wantHeadings)
	}
	var stepsSeen []string
	for _, l := range stepLines {
		if strings.HasPrefix(l, "#") {
			stepsSeen = append(stepsSeen, l)
		}
	}
	wantSteps := []string{"#1 message", "#2 command", "#3 edit", "#4 message", "#5 message"}
	if !slices.Equal(stepsSeen, wantSteps) {
		t.Errorf("the step lines = %q; want %q", stepsSeen, wantSteps)
	}
	if !slices.Contains(codes, masked) {
		t.Errorf("no fenced block holds the output whole and masked %q; blocks: %q", masked, codes)
	}
	if want := "-return nil\n+return err\n"; !slices.ContainsFunc(diffs, func(d string) bool { return strings.HasSuffix(d, want) }) {
		t.Errorf("diff blocks = %q; want one ending %q", diffs, want)
	}
	if !slices.Equal(quotedHeadings, []string{"Not a heading of the report"}) {
		t.Errorf("headings inside quotes = %q; want the reply's alone", quotedHeadings)
	}
	if len(htmlOutsideQuotes) > 0 {
		t.Errorf("recorded HTML made HTML of the document: %q", htmlOutsideQuotes)
	}
	md := string(src)
	for _, want := range []string{"**needs\\_attention** by Ann", "> check the *pipe*", "| `a\\|b.go` |", "| Rule | Masked |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
}

// TestExportFormat: a format the export does not write is a 400 saying
// which it writes; html is the report as without one.
func TestExportFormat(t *testing.T) {
	s := newTestService(t)
	batch, _ := markdownFixture("f1", time.Now().UTC().Add(-time.Hour))
	s.mustPush(batch, http.StatusCreated)
	rec := s.get("/api/sessions/f1/export?format=pdf")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `query parameter format=\"pdf\" is not valid: give html or md`) {
		t.Errorf("format=pdf = %d %s", rec.Code, rec.Body)
	}
	html := s.get("/api/sessions/f1/export?format=html")
	if html.Code != http.StatusOK || html.Header().Get("Content-Type") != "text/html; charset=utf-8" ||
		html.Header().Get("Content-Disposition") != `attachment; filename="session-f1.html"` {
		t.Errorf("format=html = %d %v", html.Code, html.Header())
	}
	if rec := s.get("/api/sessions/nope/export?format=md"); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown session's Markdown = %d", rec.Code)
	}
}

// TestExportMarkdownOutline: with outline=1 each step is an item of its
// turn's list, its line alone, with its error and notes under it: no
// recorded output, no diff, and the same masking of what is shown.
func TestExportMarkdownOutline(t *testing.T) {
	s := newTestService(t)
	const sid = "md-outline"
	at := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	batch, stdout := markdownFixture(sid, at)
	steps := batch["steps"].(arr)
	failed := steps[1].(obj)
	failed["outcome"] = "failed"
	failed["error"] = obj{"type": "exit_code", "message": "exit 1 with " + fakeAWS}
	s.mustPush(batch, http.StatusCreated)

	rec := s.get("/api/sessions/" + sid + "/export?format=md&outline=1")
	if rec.Code != http.StatusOK {
		t.Fatalf("export?format=md&outline=1 = %d %s", rec.Code, rec.Body)
	}
	src := rec.Body.Bytes()
	if strings.Contains(string(src), fakeAWS) {
		t.Fatal("the outline holds the secret")
	}
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var items []string
	var blocks int
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.ListItem:
			// A step's item: its first block's text starts with its number.
			if line := string(n.FirstChild().Lines().Value(src)); strings.HasPrefix(line, "**#") {
				items = append(items, line)
			}
		case *ast.FencedCodeBlock:
			if n.Parent().Kind() != ast.KindBlockquote { // the prompt's own, in its quote
				blocks++
			}
		}
		return ast.WalkContinue, nil
	})
	if len(items) != len(steps) {
		t.Fatalf("the outline's step items = %q; want one for each of the %d steps", items, len(steps))
	}
	for i, item := range items {
		if !strings.HasPrefix(item, fmt.Sprintf("**#%d ", i+1)) {
			t.Errorf("item %d = %q; want step %d's line", i, item, i+1)
		}
	}
	if blocks != 0 || strings.Contains(string(src), strings.Split(stdout, "\n")[2]) {
		t.Errorf("the outline holds %d fenced blocks or the output; want neither", blocks)
	}
	if !strings.Contains(views.MarkdownLiteral(string(src)), "  - Error: exit_code: exit 1 with [aws-access-key-1]") {
		t.Errorf("the outline lacks step 2's error, masked:\n%s", src)
	}
}

// TestExportMarkdownStep: step=N makes the Markdown that one step alone,
// its line then everything recorded of it, masked; the page's step offers
// it to copy and the export does not link to it. A step of HTML, a bad
// step and an unknown one are refused.
func TestExportMarkdownStep(t *testing.T) {
	s := newTestService(t)
	const sid = "md-step"
	batch, stdout := markdownFixture(sid, time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC))
	s.mustPush(batch, http.StatusCreated)

	rec := s.get("/api/sessions/" + sid + "/export?format=md&step=2")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Disposition") != `attachment; filename="session-md-step-step-2.md"` {
		t.Fatalf("step=2 = %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	src := rec.Body.Bytes()
	if !strings.HasPrefix(string(src), "**#2 command** ") || strings.Contains(string(src), "**#1 ") || strings.Contains(string(src), "**#3 ") {
		t.Errorf("step 2's Markdown is not that step alone:\n%s", src)
	}
	if strings.Contains(string(src), fakeAWS) {
		t.Fatal("the step's Markdown holds the secret")
	}
	var codes []string
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if c, ok := n.(*ast.FencedCodeBlock); ok && entering {
			codes = append(codes, string(c.Lines().Value(src)))
		}
		return ast.WalkContinue, nil
	})
	if masked := strings.ReplaceAll(stdout, fakeAWS, "[aws-access-key-1]"); !slices.Contains(codes, masked) {
		t.Errorf("no fenced block holds the output, masked, whole: %q", codes)
	}

	page := mustDocument(t, s, "/session?id="+sid)
	if got, _ := page.Find(`[data-testid="step-copy-md"]`).First().Attr("data-copy-url"); got != "/api/sessions/"+sid+"/export?format=md&step=1" {
		t.Errorf("the page's first step copies from %q", got)
	}
	if strings.Contains(s.get("/api/sessions/"+sid+"/export").Body.String(), "step-copy-md") {
		t.Error("the exported report offers to copy from the server")
	}
	for q, want := range map[string]int{"format=md&step=9": 404, "step=2": 400, "format=html&step=2": 400, "format=md&step=x": 400, "format=md&step=-1": 400} {
		if rec := s.get("/api/sessions/" + sid + "/export?" + q); rec.Code != want {
			t.Errorf("export?%s = %d %s; want %d", q, rec.Code, rec.Body, want)
		}
	}
}
