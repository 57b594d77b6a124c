package term

import (
	"strings"
	"testing"
)

func TestSequenceLen(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"\x1b[m", 3},
		{"\x1b[0mok", 4},
		{"\x1b[1;32mok", 7},
		{"\x1b[38:2::255:0:0mok", 16},
		{"\x1b[2K", 4},
		{"\x1b[?25l", 6},
		{"\x1b[>4;2m", 7},
		{"\x1b[", 0},          // cut short
		{"\x1b[12", 0},        // no final byte
		{"\x1b]0;title\a", 0}, // OSC: not a control sequence
		{"\x1b(B", 0},
		{"[1m", 0},
		{"\x1b[" + strings.Repeat("1;", 40) + "m", 0}, // longer than maxCSI
		{"\x1b[1\x1b[2m", 0},
	} {
		if got := sequenceLen(c.s); got != c.want {
			t.Errorf("sequenceLen(%q) = %d; want %d", c.s, got, c.want)
		}
	}
}

// Shown leaves out every control sequence and nothing else, and Before
// finds each byte of what is left in the whole text.
func TestShown(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[31mFAIL\x1b[0m TestX", "FAIL TestX"},
		{"ab\x1b[1mcd\x1b[22m\x1b[Kef", "abcdef"},
		{"\x1b]8;;http://x\x1b\\link", "\x1b]8;;http://x\x1b\\link"}, // not CSI: kept
		{"lone \x1b at the end \x1b[", "lone \x1b at the end \x1b["},
		{"\x1b[1m", ""},
	} {
		got, cuts := Shown(c.in)
		if got != c.want {
			t.Errorf("Shown(%q) = %q; want %q", c.in, got, c.want)
			continue
		}
		for i := range len(got) {
			if at := cuts.Before(i); at >= len(c.in) || c.in[at] != got[i] {
				t.Errorf("Shown(%q): Before(%d) = %d, not where %q is", c.in, i, at, got[i])
			}
		}
	}
}

func TestStyleApply(t *testing.T) {
	for _, c := range []struct {
		from Style
		seq  string
		want Style
	}{
		{Style{}, "\x1b[1;31m", Style{FG: Red, Bold: true}},
		{Style{FG: Red, Bold: true}, "\x1b[m", Style{}},
		{Style{FG: Red, Bold: true}, "\x1b[0m", Style{}},
		{Style{}, "\x1b[92;44m", Style{FG: Green, BG: Blue}},
		{Style{}, "\x1b[2;3;4m", Style{Dim: true, Italic: true, Underline: true}},
		{Style{Bold: true, Dim: true, Italic: true, Underline: true}, "\x1b[22;23;24m", Style{}},
		{Style{FG: Red, BG: Blue}, "\x1b[39;49m", Style{}},
		{Style{}, "\x1b[38;5;3m", Style{FG: Yellow}},
		{Style{}, "\x1b[38;5;9m", Style{FG: Red}},        // a bright one of the 16
		{Style{}, "\x1b[38;5;208;1m", Style{Bold: true}}, // of the 256: the terminal's own
		{Style{}, "\x1b[38;2;255;0;0;4m", Style{Underline: true}},
		{Style{}, "\x1b[48:5:6m", Style{BG: Cyan}},
		{Style{}, "\x1b[38:2::255:0:0;1m", Style{Bold: true}},
		{Style{}, "\x1b[7m", Style{Inverse: true}},
		{Style{Inverse: true, FG: Green}, "\x1b[27m", Style{FG: Green}},
		{Style{FG: Red}, "\x1b[2K", Style{FG: Red}},
		{Style{FG: Red}, "\x1b[>4;2m", Style{FG: Red}},
	} {
		if got := c.from.Apply(c.seq); got != c.want {
			t.Errorf("%+v.Apply(%q) = %+v; want %+v", c.from, c.seq, got, c.want)
		}
	}
}

func TestPlain(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\twith tab\r\nand lines", "plain text\twith tab\r\nand lines"},
		{"\x1b[2mCompacted\x1b[22m", "Compacted"},
		{"bell\a and \x1b]0;title\a", "bell^G and ^[]0;title^G"},
		{"nul\x00 del\x7f csi\u009b", "nul^@ del^? csi^[["},
		{"über ✓ 修改", "über ✓ 修改"},
		{"\xff invalid", "\xff invalid"},
		{"\x1b[0m", ""}, // a sequence alone
	} {
		if got := Plain(c.in); got != c.want {
			t.Errorf("Plain(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain\ttext\r\n", "plain\ttext\r\n"},
		{"red = \"\x1b[31m\"\a", "red = \"^[[31m\"^G"},
		{"\x1b]0;title\a \x7f", "^[]0;title^G ^?"},
		{"\x1b[0m", "^[[0m"},
	} {
		if got := Visible(c.in); got != c.want {
			t.Errorf("Visible(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestNext(t *testing.T) {
	s := "ok \x1b[31mred\x1b[0m\a\x1b"
	type piece struct {
		text  string
		csi   bool
		caret string
	}
	want := []piece{{"ok ", false, ""}, {"\x1b[31m", true, ""}, {"red", false, ""}, {"\x1b[0m", true, ""},
		{"\a", false, "^G"}, {"\x1b", false, "^["}}
	var got []piece
	for s != "" {
		n, csi, caret := Next(s)
		got = append(got, piece{s[:n], csi, caret})
		s = s[n:]
	}
	if len(got) != len(want) {
		t.Fatalf("pieces = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("piece %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}
