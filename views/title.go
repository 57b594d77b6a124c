package views

import (
	"context"
	"io"
	"strings"

	"github.com/a-h/templ"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// titleSpan is a run of a session's title: text, or code.
type titleSpan struct {
	Text string
	Code bool
}

// titleSpans is a session's title (the first line of its first prompt,
// store.Title) as its Markdown reads, the way the prompt itself is shown:
// code spans stay code; emphasis, heading and list marks and a link's
// address are dropped; HTML and links the messages show as written stay
// text. A title its Markdown leaves no text of (a line of "---") is its
// text as written.
func titleSpans(title string) []titleSpan {
	src := []byte(title)
	var spans []titleSpan
	add := func(s string, code bool) {
		if n := len(spans); n > 0 && !code && !spans[n-1].Code {
			spans[n-1].Text += s
			return
		}
		spans = append(spans, titleSpan{s, code})
	}
	doc := md.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan:
			var code strings.Builder
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					code.Write(t.Segment.Value(src))
				}
			}
			add(code.String(), true)
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			v := n.Segment.Value(src)
			if !n.IsRaw() {
				v = util.UnescapePunctuations(util.ResolveEntityNames(util.ResolveNumericReferences(v)))
			}
			add(string(v), false)
			if n.SoftLineBreak() || n.HardLineBreak() {
				add(" ", false)
			}
		case *ast.String:
			add(string(n.Value), false)
		case *ast.HTMLBlock: // "<div>..." starts one
			for i := range n.Lines().Len() {
				seg := n.Lines().At(i)
				add(string(seg.Value(src)), false)
			}
		case *ast.RawHTML:
			for i := range n.Segments.Len() {
				seg := n.Segments.At(i)
				add(string(seg.Value(src)), false)
			}
		case *ast.AutoLink:
			add(string(n.Label(src)), false)
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	if len(spans) == 0 {
		return []titleSpan{{Text: title}}
	}
	return spans
}

// titleOf shows a title as its Markdown reads (titleSpans), escaped.
func titleOf(title string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for _, s := range titleSpans(title) {
			html := templ.EscapeString(s.Text)
			if s.Code {
				html = `<code class="title-code">` + html + `</code>`
			}
			if _, err := io.WriteString(w, html); err != nil {
				return err
			}
		}
		return nil
	})
}

// titlePlain is a title's text as its Markdown reads (titleSpans), for
// where only text goes: the window's title.
func titlePlain(title string) string {
	var b strings.Builder
	for _, s := range titleSpans(title) {
		b.WriteString(s.Text)
	}
	return b.String()
}
