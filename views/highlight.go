package views

import (
	"context"
	"html"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"

	"github.com/agentreview/service/internal/term"
)

// highlightChars is the most characters highlighted at once; longer code
// is shown plain, so highlighting never costs more than a bounded lexer
// run. Values reaching a view are already cut to the review app's bounds.
const highlightChars = 20_000

// nameChars bounds a language or file name looked up for a lexer.
const nameChars = 40

// lexerIndex finds chroma's lexers by language name or alias, file
// extension ("*.go") and plain file name ("Makefile") in maps built once:
// chroma's own Match tries every glob of every lexer, which costs tens of
// milliseconds a call.
var lexerIndex = sync.OnceValue(func() map[string]chroma.Lexer {
	index := map[string]chroma.Lexer{}
	add := func(key string, l chroma.Lexer) {
		if _, ok := index[key]; !ok {
			index[key] = l
		}
	}
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		c := l.Config()
		add("lang:"+strings.ToLower(c.Name), l)
		for _, a := range c.Aliases {
			add("lang:"+strings.ToLower(a), l)
		}
		for _, g := range c.Filenames {
			switch {
			case strings.HasPrefix(g, "*.") && !strings.ContainsAny(g[2:], "*?[\\"):
				add("ext:"+strings.ToLower(g[1:]), l)
			case !strings.ContainsAny(g, "*?[\\"):
				add("file:"+g, l)
			}
		}
	}
	return index
})

// lexerByName is the lexer for a code block's language (a name, an alias
// or an extension), or nil.
func lexerByName(lang string) chroma.Lexer {
	if lang == "" || len(lang) > nameChars {
		return nil
	}
	lang = strings.ToLower(lang)
	if l := lexerIndex()["lang:"+lang]; l != nil {
		return l
	}
	return lexerIndex()["ext:."+lang]
}

// lexerForPath is the lexer for a file's name or extension, or nil.
func lexerForPath(p string) chroma.Lexer {
	name := path.Base(p)
	if p == "" || name == "." || name == "/" {
		return nil
	}
	if len(name) <= nameChars {
		if l := lexerIndex()["file:"+name]; l != nil {
			return l
		}
	}
	if ext := path.Ext(name); len(ext) <= nameChars {
		return lexerIndex()["ext:"+strings.ToLower(ext)]
	}
	return nil
}

type highlightKey struct{}

// WithHighlighting lets the views rendered under ctx highlight up to n
// bytes of code in all; code past that, and all code rendered without it,
// is shown plain. Chroma's lexers take over a microsecond a byte, so the
// budget bounds what highlighting adds to a page's render time.
func WithHighlighting(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, highlightKey{}, &n)
}

// budgetOf is the highlighting budget of ctx, or nil.
func budgetOf(ctx context.Context) *int {
	b, _ := ctx.Value(highlightKey{}).(*int)
	return b
}

// spend takes n bytes from budget, or reports false when it has not
// that many left.
func spend(budget *int, n int) bool {
	if budget == nil || *budget < n {
		return false
	}
	*budget -= n
	return true
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
	tokens, ok := tokenise(lexer, code)
	if !ok {
		_, _ = w.WriteString(html.EscapeString(code))
		return
	}
	m := markup{budget: len(code) + spanSlack}
	for _, t := range tokens {
		m.write(w, t)
	}
}

// tokenCacheBytes bounds the memory of tokenCache: its code and tokens.
const tokenCacheBytes = 8 << 20

// tokenCache holds the tokens of code highlighted lately, by lexer and
// code. A live session's page renders the same 30 turns on every change,
// and chroma's lexers were about a third of the CPU of such a render
// (BenchmarkSessionPageAfterChange, docs/performance.md). When an entry
// would take it past tokenCacheBytes it starts over. Its tokens are
// shared by every render that reads them, and never changed.
var tokenCache struct {
	sync.Mutex
	m     map[tokenKey][]chroma.Token
	bytes int
}

type tokenKey struct{ lexer, code string }

// ForgetHighlights empties tokenCache, so that a deleted session's text
// stays in no memory of the process, as the store's remembered results go
// with the session (store.Tallies.Drop): the server calls it for every
// deletion it sees, its own and other processes'.
func ForgetHighlights() {
	tokenCache.Lock()
	defer tokenCache.Unlock()
	tokenCache.m, tokenCache.bytes = nil, 0
}

// HighlightsHold reports whether tokenCache holds code containing text:
// for the tests of deletion.
func HighlightsHold(text string) bool {
	tokenCache.Lock()
	defer tokenCache.Unlock()
	for k := range tokenCache.m {
		if strings.Contains(k.code, text) {
			return true
		}
	}
	return false
}

// tokenise is chroma's tokens of code for lexer, from tokenCache when it
// has them; ok is false when the lexer failed.
func tokenise(lexer chroma.Lexer, code string) (tokens []chroma.Token, ok bool) {
	key := tokenKey{lexer.Config().Name, code}
	tokenCache.Lock()
	tokens, ok = tokenCache.m[key]
	tokenCache.Unlock()
	if ok {
		return tokens, true
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return nil, false
	}
	tokens = it.Tokens()
	size := 2*len(code) + 40*len(tokens) // the key, the values, the token structs
	if size > tokenCacheBytes/8 {
		return tokens, true
	}
	key.code = strings.Clone(code) // not a slice of a larger string kept alive
	tokenCache.Lock()
	defer tokenCache.Unlock()
	if tokenCache.m == nil || tokenCache.bytes+size > tokenCacheBytes {
		tokenCache.m, tokenCache.bytes = map[tokenKey][]chroma.Token{}, 0
	}
	if _, dup := tokenCache.m[key]; !dup {
		tokenCache.m[key] = tokens
		tokenCache.bytes += size
	}
	return tokens, true
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
// A control character in a file's text shows in caret notation
// (term.Visible: a file's escape sequence is text, ^[[31m).
func diffOf(lines []DiffLine, file string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		cloned := false
		for i, l := range lines {
			if v := term.Visible(l.Text); len(v) != len(l.Text) { // it only grows a text it changes
				if !cloned {
					lines, cloned = slices.Clone(lines), true
				}
				lines[i].Text = v
			}
		}
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
			if all.Len() <= highlightChars && spend(budgetOf(ctx), all.Len()) {
				if tokens, ok := tokenise(lexer, all.String()); ok {
					tokenLines = chroma.SplitTokensIntoLines(tokens)
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
