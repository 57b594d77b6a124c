package views

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func mustMarkdown(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := markdownOf(s).Render(WithHighlighting(context.Background(), 1<<20), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// renderFactor bounds how much a value may grow when rendered as Markdown
// or highlighted code: escaping (up to 5 bytes a character) plus the tags
// of its spans (spanBytes a byte).
const (
	renderFactor = 14
	renderSlack  = 400
)

// TestMarkdownIsBounded: hostile values as long as Markdown is rendered
// for, and at the review app's 100,000-character cut, render within a
// small multiple of their size.
func TestMarkdownIsBounded(t *testing.T) {
	for _, n := range []int{markdownChars - 10, 100_000} {
		testMarkdownBounded(t, n)
	}
}

func testMarkdownBounded(t *testing.T, n int) {
	fill := func(unit string) string { return strings.Repeat(unit, n/len(unit)+1)[:n] }
	for _, c := range []struct{ name, text string }{
		{"emphasis", fill("*a")},
		{"links", fill("[a](")},
		{"brackets", fill("[")},
		{"angle brackets", fill("<")},
		{"html tags", fill("<b>")},
		{"ampersands", fill("&")},
		{"entities", fill("&amp;")},
		{"backticks", fill("`")},
		{"quotes", fill(">")},
		{"quotes in and out", fill("> a\n" + strings.Repeat(">", markdownDepth) + " b\n")},
		{"lists in and out", fill("- a\n" + strings.Repeat("- ", markdownDepth) + "b\n")},
		{"nested lists", fill("- ")},
		{"table", "|a|b|\n|-|-|\n" + fill("|x")},
		{"autolinks", fill("https://a.b ")},
		{"images", fill("![a](b)")},
		{"code", "```go\n" + fill("x := \"a\" + 1 // c\n")},
		{"code of one-character tokens", "```go\n" + fill("a+")[6:]},
		{"code with a long language", "```" + fill("g") + "\nx\n```"},
	} {
		t.Run(fmt.Sprintf("%s %d", c.name, n), func(t *testing.T) {
			out := mustMarkdown(t, c.text)
			if len(out) > renderFactor*len(c.text)+renderSlack {
				t.Errorf("%d characters rendered as %d bytes; want at most %d times as many", len(c.text), len(out), renderFactor)
			}
		})
	}
}

// TestMarkdownRendering: Markdown renders, raw HTML shows as text, links
// are nofollow and images are links; fenced code is highlighted.
func TestMarkdownRendering(t *testing.T) {
	out := mustMarkdown(t, "# Title\n\n**bold** and [a link](https://example.com) and <b onclick=\"x()\">tag</b>\n\n"+
		"<script>alert(1)</script>\n\n![pic](https://example.com/p.png)\n\n[bad](javascript:alert(1))\n\n"+
		"token = [generic-secret-1](:crypto.rand(32)) and [a *file*](docs/x.md)\n\n```go\nfunc f() {}\n```\n")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	md := doc.Find(`[data-testid="markdown"]`)
	if got := md.Find("h4").Text(); got != "Title" || md.Find("h1").Length() != 0 {
		t.Errorf("h4 = %q; want the message's # Title below the page's headings", got)
	}
	if got := md.Find("strong").Text(); got != "bold" {
		t.Errorf("strong = %q; want bold", got)
	}
	if n := md.Find("script, img, b, [onclick]").Length(); n != 0 {
		t.Errorf("%d script, img, b or onclick elements; want none:\n%s", n, out)
	}
	for _, want := range []string{`<b onclick="x()">`, "<script>alert(1)</script>"} {
		if !strings.Contains(md.Text(), want) {
			t.Errorf("text = %q; want %q in it as text", md.Text(), want)
		}
	}
	md.Find("a").Each(func(_ int, a *goquery.Selection) {
		if rel, _ := a.Attr("rel"); rel != "noopener noreferrer nofollow" {
			t.Errorf("link %q rel = %q; want noopener noreferrer nofollow", a.Text(), rel)
		}
		if href, _ := a.Attr("href"); strings.HasPrefix(href, "javascript:") {
			t.Errorf("link %q goes to %q", a.Text(), href)
		}
	})
	for _, want := range []string{"token = [generic-secret-1](:crypto.rand(32)) and [a file](docs/x.md)", "[bad](javascript:alert(1))"} {
		if !strings.Contains(md.Text(), want) {
			t.Errorf("text = %q; want %q: a link to no web address as written", md.Text(), want)
		}
	}
	if n := md.Find("a").Length(); n != 2 {
		t.Errorf("%d links; want 2 (the link and the image)", n)
	}
	if got := md.Find("a.image-link").Text(); got != "pic" {
		t.Errorf("image link = %q; want pic", got)
	}
	if n := md.Find(`pre.code [class^="hl-"]`).Length(); n == 0 {
		t.Errorf("the Go block has no highlighted token:\n%s", out)
	}
}

// A message's headings sit below the page's h3, in the order of their
// levels without gaps, whatever levels the message uses; a task's check
// box is named by its state.
func TestMarkdownHeadingsAndTasks(t *testing.T) {
	for _, tc := range []struct {
		md   string
		want string // the headings' levels in order
	}{
		{"# a\n## b\n### c\n## d\n# e", "4 5 6 5 4"},
		{"## a\n#### b\n## c", "4 5 4"},
		{"### only", "4"},
		{"#### a\n# b\n###### c", "4 4 5"},
		{"# a\n### b", "4 5"},
		{"# 1\n## 2\n### 3\n#### 4\n##### 5", "4 5 6 6 6"},
	} {
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(mustMarkdown(t, tc.md)))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		doc.Find("h1, h2, h3, h4, h5, h6").Each(func(_ int, h *goquery.Selection) {
			got = append(got, strings.TrimPrefix(goquery.NodeName(h), "h"))
		})
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: heading levels %v; want %s", tc.md, got, tc.want)
		}
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(mustMarkdown(t, "- [x] ship it\n- [ ] test it\n")))
	if err != nil {
		t.Fatal(err)
	}
	var boxes []string
	doc.Find(`input[type="checkbox"]`).Each(func(_ int, in *goquery.Selection) {
		label, _ := in.Attr("aria-label")
		_, checked := in.Attr("checked")
		_, disabled := in.Attr("disabled")
		boxes = append(boxes, fmt.Sprintf("%s %v %v", label, checked, disabled))
	})
	if got := strings.Join(boxes, ", "); got != "done true true, not done false true" {
		t.Errorf("check boxes = %q; want a named, fixed box for each task", got)
	}
}

// TestDiffIsBounded: a highlighted diff renders within a small multiple of
// its lines' size, whatever the tokens.
func TestDiffIsBounded(t *testing.T) {
	var lines []DiffLine
	size := 0
	for range highlightChars / 20 {
		l := DiffLine{Kind: "add", Text: "+" + strings.Repeat("a+", 8)}
		lines = append(lines, l)
		size += len(l.Text)
	}
	var b bytes.Buffer
	if err := diffOf(lines, "main.go").Render(WithHighlighting(context.Background(), 1<<20), &b); err != nil {
		t.Fatal(err)
	}
	if b.Len() > renderFactor*size+renderSlack {
		t.Errorf("a diff of %d bytes rendered as %d; want at most %d times as many", size, b.Len(), renderFactor)
	}
}

// TestHighlightingBudget: code is highlighted up to the render's budget,
// then shown plain; without a budget, nothing is highlighted.
func TestHighlightingBudget(t *testing.T) {
	block := "```go\nfunc f() error { return nil }\n```\n"
	code := len("func f() error { return nil }\n")
	for _, c := range []struct {
		name   string
		ctx    context.Context
		blocks int
	}{
		{"no budget", context.Background(), 0},
		{"budget for two", WithHighlighting(context.Background(), 2*code+code/2), 2},
		{"budget for all", WithHighlighting(context.Background(), 10*code), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := markdownOf(block+block+block).Render(c.ctx, &b); err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(&b)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			doc.Find("pre.code").Each(func(_ int, p *goquery.Selection) {
				if p.Find(`[class^="hl-"]`).Length() > 0 {
					n++
				}
			})
			if n != c.blocks || doc.Find("pre.code").Length() != 3 {
				t.Errorf("%d of %d blocks highlighted; want %d of 3", n, doc.Find("pre.code").Length(), c.blocks)
			}
		})
	}
}
