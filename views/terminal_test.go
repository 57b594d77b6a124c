package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/agentreview/service/internal/term"
)

func mustRender(t *testing.T, c templ.Component) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Command output is shown in the styles its SGR sequences give it: each
// run of text in a span of its style's classes, the text whole and in
// order, no control character left in the HTML, and any other control
// character in caret notation.
func TestTerminalOf(t *testing.T) {
	const in = "\x1b[1m\x1b[31mFAIL\x1b[39m\x1b[22m src/a.test.ts\n" +
		"\x1b[42m PASS \x1b[49m ok \x1b[2mdim\x1b[0m\x1b[97m white\x1b[m \x1b[2Kbell\a\n" +
		"\x1b[38;5;12;4mbright blue, underlined\x1b[0m\n" +
		"\x1b[0m\x1b[7m\x1b[1m\x1b[32m PASS \x1b[39m\x1b[22m\x1b[27m\x1b[0m \x1b[7m x \x1b[0m" // jest's labels: inverse
	type run struct{ class, text string }
	want := []run{
		{"t-red t-bold", "FAIL"}, {"", " src/a.test.ts\n"}, {"tb-green", " PASS "}, {"", " ok "},
		{"t-dim", "dim"}, {"", " white bell"}, {"ctl", "^G"}, {"", "\n"}, {"t-blue t-under", "bright blue, underlined"},
		{"", "\n"}, {"tb-green t-bold", " PASS "}, {"", " "}, {"tb-white", " x "},
	}
	html := mustRender(t, terminalOf(in))
	if strings.ContainsFunc(html, func(r rune) bool { return r < 0x20 && r != '\n' }) {
		t.Errorf("terminalOf(%q) = %q; want no control character but line feeds", in, html)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader("<pre>" + html + "</pre>"))
	if err != nil {
		t.Fatal(err)
	}
	var got []run
	doc.Find("pre").Contents().Each(func(_ int, s *goquery.Selection) {
		class, _ := s.Attr("class")
		got = append(got, run{class, s.Text()})
	})
	if len(got) != len(want) {
		t.Fatalf("terminalOf(%q) = %q: runs %q; want %q", in, html, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("terminalOf(%q): run %d = %q; want %q", in, i, got[i], want[i])
		}
	}
	// textOf shows the same text without styles.
	plain := mustRender(t, textOf(in))
	if strings.Contains(plain, `class="t-`) || strings.Contains(plain, `class="tb-`) ||
		!strings.Contains(plain, `FAIL src/a.test.ts`) || !strings.Contains(plain, `<span class="ctl">^G</span>`) {
		t.Errorf("textOf(%q) = %q; want its text and control character, without styles", in, plain)
	}
}

// A text made of colour codes and control characters alone renders
// within a few times its size, its text whole: past its spans it is
// written plain.
func TestTerminalOfIsBounded(t *testing.T) {
	for _, unit := range []string{"\x1b[31ma\x1b[1;42mb", "\a", "\x1b[3mx\x1b[23m"} {
		in := strings.Repeat(unit, 20_000)
		html := mustRender(t, terminalOf(in))
		if len(html) > 8*len(in)+1024 {
			t.Errorf("terminalOf(%d × %q) is %d bytes; want at most %d", 20_000, unit, len(html), 8*len(in)+1024)
		}
		doc, err := goquery.NewDocumentFromReader(strings.NewReader("<pre>" + html + "</pre>"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat(strings.NewReplacer("\x1b[31m", "", "\x1b[1;42m", "", "\x1b[3m", "", "\x1b[23m", "", "\a", "^G").Replace(unit), 20_000)
		if got := doc.Find("pre").Text(); got != want {
			t.Errorf("terminalOf(%d × %q) shows %d bytes of text; want %d", 20_000, unit, len(got), len(want))
		}
	}
}

// Whatever the text, textOf and terminalOf show its text as term.Plain
// has it, within a few times its size, and no control character.
func FuzzTerminalOf(f *testing.F) {
	for _, s := range []string{"", "a<b>&", "\x1b[1;31mFAIL\x1b[0m ok", "\x1b[", "\a\x00\x7f", "\x1b[42m\x1b[30m x \x1b[m\r\n",
		strings.Repeat("\x1b[3mx", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // a page's text is UTF-8; the HTML parser would mend it otherwise
		}
		for _, c := range []templ.Component{textOf(s), terminalOf(s)} {
			html := mustRender(t, c)
			if len(html) > 8*len(s)+1024 {
				t.Fatalf("%q renders to %d bytes", s, len(html))
			}
			if strings.ContainsFunc(html, func(r rune) bool { return term.Caret(r) != "" }) {
				t.Fatalf("%q renders to %q, holding a control character", s, html)
			}
			// "x" first: a pre drops a line break just after its tag.
			doc, err := goquery.NewDocumentFromReader(strings.NewReader("<pre>x" + html + "</pre>"))
			if err != nil {
				t.Fatal(err)
			}
			want := "x" + strings.ReplaceAll(strings.ReplaceAll(term.Plain(s), "\r\n", "\n"), "\r", "\n") // as HTML reads line breaks
			if got := doc.Find("pre").Text(); got != want {
				t.Fatalf("%q renders to %q, showing %q; want %q", s, html, got, want)
			}
		}
	})
}
