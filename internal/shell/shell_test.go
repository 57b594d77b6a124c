package shell

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// words are the hard cases: empty, spaces, each quote, $, backticks,
// globs, a line break, a leading dash and non-ASCII text.
var words = []string{"", "plain", "a b", "it's", `"q"`, "$HOME", "`id`", "*", "a\nb", "-n", "x'; rm -rf ~ #", `back\slash`, "día ✓"}

// TestLineRunsAsItsArgs gives a real POSIX shell the line and checks that
// the program gets back each word as it was.
func TestLineRunsAsItsArgs(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	line := Line(append([]string{"printf", `%s\0`}, words...)...)
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, words) {
		t.Errorf("sh -c %q gave %q, want %q", line, got, words)
	}
}

func TestQuoteLeavesPlainWords(t *testing.T) {
	for _, w := range []string{"claude", "--resume", "/home/u/project-1", "ses_450b70e67ffeoaXH496F8i0fVA", "a@b%c+d=e:f,g"} {
		if got := Quote(w); got != w {
			t.Errorf("Quote(%q) = %q, want it as it is", w, got)
		}
	}
}

func TestUnquoteReadsQuote(t *testing.T) {
	for _, w := range words {
		if got, ok := Unquote(Quote(w)); !ok || got != w {
			t.Errorf("Unquote(Quote(%q)) = %q, %v", w, got, ok)
		}
	}
	for _, s := range []string{"a b", "'open", `"open`, `end\`, "a;b", "a|b"} {
		if got, ok := Unquote(s); ok {
			t.Errorf("Unquote(%q) = %q, want not one word", s, got)
		}
	}
}
