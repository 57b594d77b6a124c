package store

import (
	"strings"
	"testing"
)

// cutAtWord ends a cut text at its last word that fits, whatever space
// ends it, and cuts within a first word too long to fit.
func TestCutAtWord(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"exit status 1", 13, "exit status 1"},              // fits whole
		{"exit status 1", 12, "exit status…"},               // the cut falls in a word
		{"exit status 1", 11, "exit status…"},               // the cut falls on the space after one
		{"File not found:\n/tmp/x", 17, "File not found:…"}, // a line's end is a word's
		{"an ürün adı", 8, "an ürün…"},                      // characters, not bytes
		{strings.Repeat("x", 10) + " y", 4, "xxxx…"},        // no word fits: cut within the first
		{"   " + strings.Repeat("x", 10), 5, "   xx…"},      // nor after leading spaces
		{"go\t\ttest ./...", 5, "go…"},                      // the spaces before the cut dropped
	} {
		if got := cutAtWord(c.s, c.n); got != c.want {
			t.Errorf("cutAtWord(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}
