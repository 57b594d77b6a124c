package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The progress line of an index build: a bar as long as the share done,
// the percentage, the counts and the time; once done, a final line.
func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
	}{
		{0, 200_000, 0},
		{50_000, 200_000, 3 * time.Second},
		{199_999, 200_000, 61*time.Second + 400*time.Millisecond},
		{7, 1_000_000, time.Second},
	} {
		pct := c.done * 100 / c.total
		filled := int(c.done * progressBar / c.total)
		want := "building the search index [" + strings.Repeat("#", filled) + strings.Repeat(".", progressBar-filled) + "] " +
			fmt.Sprintf("%3d%%  %s of %s steps  %s", pct, thousands(c.done), thousands(c.total), c.elapsed.Round(time.Second))
		if got := progressLine(c.done, c.total, c.elapsed); got != want {
			t.Errorf("progressLine(%d, %d, %v) = %q; want %q", c.done, c.total, c.elapsed, got, want)
		}
	}
	got := progressLine(200_000, 200_000, 75*time.Second)
	if want := "search index built: 200,000 steps in 1m15s"; got != want {
		t.Errorf("progressLine(done) = %q; want %q", got, want)
	}
}

// Progress shows on a terminal only: a pipe or a file gets nothing.
func TestIndexProgressOnlyOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	if indexProgress(&buf) != nil {
		t.Errorf("indexProgress(a buffer) is not nil; want no progress off a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if indexProgress(f) != nil {
		t.Errorf("indexProgress(a file) is not nil; want no progress off a terminal")
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no terminal to check: %v", err)
	}
	defer tty.Close()
	if indexProgress(tty) == nil {
		t.Errorf("indexProgress(/dev/tty) = nil; want progress on a terminal")
	}
}
