package views

import (
	"context"
	"html"
	"io"
	"path"
	"strings"

	"github.com/a-h/templ"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// highlightChars is the most characters highlighted at once; longer code
// is shown plain, so highlighting never costs more than a bounded lexer
// run. Values reaching a view are already cut to the review app's bounds.
const highlightChars = 20_000

// nameChars bounds a language or file name looked up for a lexer: chroma
// matches names against its globs, which costs more than linear time in
// the name's length.
const nameChars = 40

// lexerByName is the lexer for a code block's language, or nil.
func lexerByName(lang string) chroma.Lexer {
	if lang == "" || len(lang) > nameChars {
		return nil
	}
	return lexers.Get(lang)
}

// lexerForPath is the lexer for a file's name, or nil. A long name is
// looked up by its extension alone.
func lexerForPath(p string) chroma.Lexer {
	name := path.Base(p)
	if len(name) > nameChars {
		name = "file" + path.Ext(name)
	}
	if p == "" || len(name) > nameChars {
		return nil
	}
	return lexers.Match(name)
}

// writeHighlighted writes code as escaped HTML, its tokens in spans with
// chroma's short class names prefixed "hl-" (static/app.css colours them;
// the page needs no inline style). Without a lexer, or when code is long,
// it is written plain.
func writeHighlighted(w io.StringWriter, code string, lexer chroma.Lexer) {
	if lexer == nil || len(code) > highlightChars {
		_, _ = w.WriteString(html.EscapeString(code))
		return
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		_, _ = w.WriteString(html.EscapeString(code))
		return
	}
	m := markup{budget: len(code) + spanSlack}
	for t := it(); t != chroma.EOF; t = it() {
		m.write(w, t)
	}
}

// markup writes tokens in spans until their tags reach budget times
// spanBytes, then plain: code of one-character tokens renders at a small
// multiple of its size too.
type markup struct{ budget int }

// spanBytes is what the tags of spans may add per byte of code, on
// average (real code needs about that much), and spanSlack what they may
// add to any code, so that a short snippet is highlighted whole.
const (
	spanBytes = 8
	spanSlack = 32
)

func (m *markup) write(w io.StringWriter, t chroma.Token) {
	class := chroma.StandardTypes[t.Type]
	if class == "" || t.Type == chroma.Text || t.Type == chroma.TextWhitespace || m.budget <= 0 {
		_, _ = w.WriteString(html.EscapeString(t.Value))
		return
	}
	open := `<span class="hl-` + class + `">`
	m.budget -= (len(open) + len("</span>") + spanBytes - 1) / spanBytes
	_, _ = w.WriteString(open)
	_, _ = w.WriteString(html.EscapeString(t.Value))
	_, _ = w.WriteString(`</span>`)
}

// diffOf renders an edit's diff lines, each line's code highlighted for
// the language of the file edited. A line's text starts with its marker
// ("+", "-" or " "); hunk headers and multi-line blocks are shown plain.
func diffOf(lines []DiffLine, file string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		sw := &stringWriter{w: w}
		code := func(l DiffLine) (string, string, bool) {
			if l.Kind == "hunk" || l.Text == "" || strings.Contains(l.Text, "\n") || strings.IndexByte("+- ", l.Text[0]) < 0 {
				return "", "", false
			}
			return l.Text[:1], l.Text[1:], true
		}
		var tokenLines [][]chroma.Token
		if lexer := lexerForPath(file); lexer != nil {
			var all strings.Builder
			for _, l := range lines {
				_, c, _ := code(l)
				all.WriteString(c)
				all.WriteByte('\n')
			}
			if all.Len() <= highlightChars {
				if it, err := chroma.Coalesce(lexer).Tokenise(nil, all.String()); err == nil {
					tokenLines = chroma.SplitTokensIntoLines(it.Tokens())
				}
			}
		}
		m := markup{budget: spanSlack}
		for _, l := range lines {
			m.budget += len(l.Text)
		}
		for i, l := range lines {
			sw.WriteString(`<span class="dl ` + html.EscapeString(l.Kind) + `">`)
			if mark, _, ok := code(l); ok && i < len(tokenLines) {
				sw.WriteString(html.EscapeString(mark))
				for _, t := range tokenLines[i] {
					t.Value = strings.TrimSuffix(t.Value, "\n")
					m.write(sw, t)
				}
			} else {
				sw.WriteString(html.EscapeString(l.Text))
			}
			sw.WriteString("</span>")
		}
		return sw.err
	})
}

type stringWriter struct {
	w   io.Writer
	err error
}

// WriteString writes v unless an earlier write failed; the first error
// is kept in err.
func (s *stringWriter) WriteString(v string) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := io.WriteString(s.w, v)
	s.err = err
	return n, err
}
