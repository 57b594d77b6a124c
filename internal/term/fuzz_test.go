package term

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever the text: Shown leaves out only whole control sequences, each
// byte it keeps found by Before where it was; Plain and Visible leave no
// control character but tab and line breaks, Plain being Shown's text in
// caret notation and Visible the text's own; a style stays a style.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred\x1b[0m", "\x1b[", "\x1b[1;2;38;5;9;48:2::1:2:3m", "\x1b]8;;u\x1b\\l",
		"a\x1b[2Kb\a\x00\x7f\u009b", "\xff\x1b\xfe", "\x1b[" + strings.Repeat("9", 70) + "m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		shown, cuts := Shown(s)
		for i := range len(shown) {
			if at := cuts.Before(i); at >= len(s) || s[at] != shown[i] {
				t.Fatalf("Shown(%q) = %q: Before(%d) = %d, not where its byte is", s, shown, i, at)
			}
		}
		if len(shown) < len(s) && strings.IndexByte(s, 0x1b) < 0 {
			t.Fatalf("Shown(%q) = %q: it took bytes out of a text without ESC", s, shown)
		}
		control := func(r rune) bool { return Caret(r) != "" }
		for _, c := range []struct {
			name, got string
		}{{"Plain", Plain(s)}, {"Visible", Visible(s)}} {
			if strings.ContainsFunc(c.got, control) {
				t.Fatalf("%s(%q) = %q holds a control character", c.name, s, c.got)
			}
			if len(c.got) > 3*len(s) {
				t.Fatalf("%s(%q) is %d bytes, over three times the text's", c.name, s, len(c.got))
			}
		}
		if Plain(s) != Visible(shown) {
			t.Fatalf("Plain(%q) = %q; want Visible(Shown) = %q", s, Plain(s), Visible(shown))
		}
		if utf8.ValidString(s) && !utf8.ValidString(Plain(s)) {
			t.Fatalf("Plain(%q) = %q is not UTF-8", s, Plain(s))
		}
		var st Style
		for rest := s; rest != ""; {
			n, csi, _ := Next(rest)
			if n <= 0 || n > len(rest) {
				t.Fatalf("Next(%q) = %d", rest, n)
			}
			if csi {
				st = st.Apply(rest[:n])
				if st.FG > White || st.BG > White {
					t.Fatalf("%q gives the style %+v", rest[:n], st)
				}
			}
			rest = rest[n:]
		}
	})
}
