package views

import (
	"bytes"
	"context"
	"html"
	"io"
	"strings"

	"github.com/a-h/templ"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/agentreview/service/internal/term"
)

// md renders an agent's or a user's message. Raw HTML is shown as text,
// links are marked rel="noopener noreferrer nofollow", images become links
// (the page loads nothing from elsewhere) and fenced code is highlighted.
var md = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList, extension.Linkify),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkTransformer{}, 100))),
	goldmark.WithRendererOptions(
		ghtml.WithXHTML(),
		renderer.WithNodeRenderers(util.Prioritized(messageRenderer{}, 100)),
	),
)

// Markdown is rendered only where it stays cheap: goldmark's time grows
// faster than the text's length for some inputs (runs of "[a]("), and its
// HTML grows with the nesting of quotes and lists. A longer or deeper text
// is shown as it was written, preformatted.
const (
	markdownChars = 16_000
	markdownDepth = 16
)

// markdownOf renders s, a recorded value already cut to the review app's
// bounds, as Markdown: in time and HTML a small multiple of its size.
func markdownOf(s string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		s := term.Plain(s) // no control character reaches the page (textOf)
		if len(s) > markdownChars || nesting(s) > markdownDepth {
			if _, err := io.WriteString(w, `<pre class="md-plain" data-testid="markdown-plain">`); err != nil {
				return err
			}
			if err := textOf(s).Render(context.Background(), w); err != nil {
				return err
			}
			_, err := io.WriteString(w, `</pre>`)
			return err
		}
		if _, err := io.WriteString(w, `<div class="md" data-testid="markdown">`); err != nil {
			return err
		}
		pc := parser.NewContext()
		pc.Set(budgetContextKey, budgetOf(ctx))
		if err := md.Convert([]byte(s), w, parser.WithContext(pc)); err != nil {
			return err
		}
		_, err := io.WriteString(w, `</div>`)
		return err
	})
}

// nesting is the most quote and list markers any line of s starts with.
func nesting(s string) int {
	most := 0
	for line := range strings.Lines(s) {
		n := 0
		for _, c := range []byte(line) {
			if c == '>' || c == '-' || c == '*' || c == '+' {
				n++
			} else if c != ' ' && c != '\t' && (c < '0' || c > '9') && c != '.' && c != ')' {
				break
			}
		}
		most = max(most, n)
	}
	return most
}

// budgetContextKey carries the highlighting budget (budgetOf) to the
// parse, which marks the code blocks it lets be highlighted.
var budgetContextKey = parser.NewContextKey()

// highlighted marks a code block to highlight.
var highlighted = []byte("highlight")

// linkTransformer marks every link rel="noopener noreferrer nofollow",
// turns images into links to them, shows a link to anything but an http,
// https or mailto address as written (a relative link would point into
// this app, and in the export "[aws-access-key-1](" is a masked value, not
// a link), moves headings below the page's own (headingLevels), and marks
// the code blocks the highlighting budget allows.
type linkTransformer struct{}

func (linkTransformer) Transform(doc *ast.Document, src text.Reader, pc parser.Context) {
	budget, _ := pc.Get(budgetContextKey).(*int)
	var images []*ast.Image
	var links []*ast.Link
	var headings []*ast.Heading
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			links = append(links, n)
		case *ast.AutoLink:
			n.SetAttributeString("rel", []byte("noopener noreferrer nofollow"))
		case *ast.Image:
			images = append(images, n)
		case *ast.Heading:
			headings = append(headings, n)
		case *ast.FencedCodeBlock:
			size := 0
			for i := range n.Lines().Len() {
				seg := n.Lines().At(i)
				size += seg.Len()
			}
			lexer := lexerByName(string(n.Language(src.Source())))
			if lexer != nil && size <= highlightChars && spend(budget, size) {
				n.SetAttribute(highlighted, true)
			}
		}
		return ast.WalkContinue, nil
	})
	headingLevels(headings)
	for _, img := range images {
		link := ast.NewLink()
		link.Destination, link.Title = img.Destination, img.Title
		link.SetAttributeString("rel", []byte("noopener noreferrer nofollow"))
		link.SetAttributeString("class", []byte("image-link"))
		for c := img.FirstChild(); c != nil; {
			next := c.NextSibling()
			link.AppendChild(link, c)
			c = next
		}
		if link.ChildCount() == 0 {
			link.AppendChild(link, ast.NewString([]byte("image")))
		}
		img.Parent().ReplaceChild(img.Parent(), img, link)
		links = append(links, link)
	}
	for _, l := range links {
		if absolute(l.Destination) {
			l.SetAttributeString("rel", []byte("noopener noreferrer nofollow"))
			continue
		}
		parent := l.Parent()
		parent.InsertBefore(parent, l, ast.NewString([]byte("[")))
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.InsertBefore(parent, l, ast.NewString([]byte("]("+string(l.Destination)+")")))
		parent.RemoveChild(parent, l)
	}
}

// headingLevels sets the levels of a message's headings, in document
// order, below the page's own: a message sits in a turn's h3, so its
// highest heading is an h4. The levels it uses are ranked (a message of
// "##" and "####" has h4 and h5), and no heading is more than one level
// below the one before it, so the page's outline has no gaps (a screen
// reader's list of headings, and WCAG's heading order).
func headingLevels(headings []*ast.Heading) {
	var used [7]bool
	for _, h := range headings {
		used[h.Level] = true
	}
	var rank [7]int
	r := 0
	for lvl := 1; lvl <= 6; lvl++ {
		rank[lvl] = r
		if used[lvl] {
			r++
		}
	}
	prev := 3
	for _, h := range headings {
		h.Level = min(4+rank[h.Level], prev+1, 6)
		prev = h.Level
	}
}

// absolute reports an http, https or mailto address.
func absolute(dest []byte) bool {
	d := strings.ToLower(string(dest[:min(len(dest), 8)]))
	return strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://") || strings.HasPrefix(d, "mailto:")
}

// messageRenderer shows raw HTML as text, highlights code blocks and
// names each task list's check box.
type messageRenderer struct{}

func (messageRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindFencedCodeBlock, renderCode)
	reg.Register(ast.KindCodeBlock, renderCode)
	reg.Register(east.KindTaskCheckBox, renderTaskCheckBox)
}

// renderTaskCheckBox is a task's "[ ]" or "[x]": a check box that cannot be
// changed, named by its state for a screen reader (goldmark's has no name).
func renderTaskCheckBox(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		if node.(*east.TaskCheckBox).IsChecked {
			_, _ = w.WriteString(`<input type="checkbox" checked="" disabled="" aria-label="done" /> `)
		} else {
			_, _ = w.WriteString(`<input type="checkbox" disabled="" aria-label="not done" /> `)
		}
	}
	return ast.WalkContinue, nil
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.WriteString(html.EscapeString(string(seg.Value(source))))
		}
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString(`<pre class="raw-html">`)
		writeLines(w, source, n.Lines())
		if n.HasClosure() {
			_, _ = w.WriteString(html.EscapeString(string(n.ClosureLine.Value(source))))
		}
		_, _ = w.WriteString("</pre>\n")
	}
	return ast.WalkSkipChildren, nil
}

func writeLines(w util.BufWriter, source []byte, lines *text.Segments) {
	for i := range lines.Len() {
		seg := lines.At(i)
		_, _ = w.WriteString(html.EscapeString(string(seg.Value(source))))
	}
}

func renderCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	var lang string
	if f, ok := node.(*ast.FencedCodeBlock); ok {
		if _, ok := f.Attribute(highlighted); ok {
			lang = string(f.Language(source))
		}
	}
	var code bytes.Buffer
	lines := node.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		code.Write(seg.Value(source))
	}
	_, _ = w.WriteString(`<pre class="code">`)
	writeHighlighted(w, code.String(), lexerByName(lang))
	_, _ = w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}
