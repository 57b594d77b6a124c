package views

import (
	"cmp"
	"context"
	"html"
	"io"
	"strings"

	"github.com/a-h/templ"

	"github.com/agentreview/service/internal/term"
)

// textOf writes s as HTML text a slice at a time, as a page can show it:
// its control sequences left out (they carry no text) and every other
// control character but tab and line breaks in caret notation, set apart
// (^G for a bell), so nothing the agent read is hidden. Unlike { s },
// which copies a value whole before escaping it, it holds no copy of a
// long recorded value.
func textOf(s string) templ.Component { return termText(s, false) }

// terminalOf is textOf for text written for a terminal (a command's
// output, a tool's field): in the colours and styles its SGR sequences
// give it, from the palette, so a red FAIL reads as red.
func terminalOf(s string) templ.Component { return termText(s, true) }

func termText(s string, styled bool) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		t := termWriter{w: w, spans: min(maxTextSpans, 16+len(s)/12)}
		for rest := s; rest != ""; {
			n, csi, caret := term.Next(rest)
			switch {
			case csi:
				if styled {
					t.style = t.style.Apply(rest[:n])
				}
			case caret != "":
				t.control(caret)
			default:
				t.text(rest[:n])
			}
			rest = rest[n:]
		}
		if t.open {
			t.write("</span>")
		}
		return t.err
	})
}

// maxTextSpans bounds the spans (a style, a control character) a text is
// written with, as does a twelfth of its length: past them its text is
// written plain, so that a text of colour codes alone makes at most a few
// times its size of HTML.
const maxTextSpans = 2000

// termWriter writes a text's pieces (termText).
type termWriter struct {
	w            io.Writer
	err          error
	style, shown term.Style // the style of the text to come, and of the open span
	open         bool       // whether a span of shown is open
	spans        int        // the spans it may still open
}

func (t *termWriter) write(s string) {
	if t.err == nil {
		_, t.err = io.WriteString(t.w, s)
	}
}

// text writes s, escaped, in its style, 32 KB at a time.
func (t *termWriter) text(s string) {
	t.restyle()
	for s != "" {
		n := min(len(s), 32<<10)
		t.write(html.EscapeString(s[:n]))
		s = s[n:]
	}
}

// control writes a control character in caret notation, set apart.
func (t *termWriter) control(caret string) {
	t.restyle()
	if t.spans == 0 {
		t.write(html.EscapeString(caret))
		return
	}
	t.spans--
	t.write(`<span class="ctl">` + html.EscapeString(caret) + `</span>`)
}

// restyle closes the open span when the style changed, and opens one of
// the new style unless it shows as plain text or no span is left.
func (t *termWriter) restyle() {
	if t.open && t.shown == t.style {
		return
	}
	class := ""
	if t.style != (term.Style{}) {
		class = styleClass(t.style)
	}
	if t.open {
		t.write("</span>")
		t.open = false
	}
	if class == "" || t.spans == 0 {
		return
	}
	t.spans--
	t.write(`<span class="` + class + `">`)
	t.shown, t.open = t.style, true
}

// colorNames name the classes of term's colours: t-red for a red text,
// tb-red for a red background (the palette's rules).
var colorNames = [...]string{term.Black: "black", term.Red: "red", term.Green: "green", term.Yellow: "yellow",
	term.Blue: "blue", term.Magenta: "magenta", term.Cyan: "cyan", term.White: "white"}

func styleClass(st term.Style) string {
	var c []string
	fg, bg := st.FG, st.BG
	if st.Inverse { // the text's colour behind it: a label (jest's PASS) on the palette's tint
		fg, bg = bg, cmp.Or(fg, term.White)
	}
	if fg != term.Default && fg != term.White {
		c = append(c, "t-"+colorNames[fg])
	}
	if bg != term.Default {
		c = append(c, "tb-"+colorNames[bg])
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{st.Bold, "t-bold"}, {st.Dim, "t-dim"}, {st.Italic, "t-italic"}, {st.Underline, "t-under"}} {
		if f.on {
			c = append(c, f.name)
		}
	}
	return strings.Join(c, " ")
}
