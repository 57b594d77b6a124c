package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/qwencode"
)

// TestQwenSessionUpdatesLive: a chat recording Qwen Code appends to, in a
// project folder made after the watch began, is brought up to date in the
// store as it grows (the real sample, written in two parts).
func TestQwenSessionUpdatesLive(t *testing.T) {
	projects := filepath.Join(t.TempDir(), ".qwen", "projects")
	if err := os.MkdirAll(projects, 0o700); err != nil {
		t.Fatal(err)
	}
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{qwencode.Kind: {projects}}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)

	src, _ := filepath.Glob("../qwencode/testdata/projects/-tmp-qwentest/chats/*.jsonl")
	b, err := os.ReadFile(src[0])
	if err != nil {
		t.Fatal(err)
	}
	steps := func(path string) int {
		units, _ := qwencode.Discover([]string{path})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return qwencode.Parse(units[0], []adapters.File{{Path: path, Body: f}}).Steps
	}
	lines := strings.SplitAfter(string(b), "\n")
	chats := filepath.Join(projects, "-tmp-qwentest", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(chats, filepath.Base(src[0]))
	save(t, path, []byte(strings.Join(lines[:4], ""))) // the prompt and the first reply's call
	const sid = "69f0814a-8bfc-4c8e-93d3-05757f17b96f"
	first := steps(path)
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == first, fmt.Sprintf("%d steps stored; want the first lines' %d", n, first)
	})
	appendLines(t, path, strings.TrimSuffix(strings.Join(lines[4:], ""), "\n"))
	want := steps(src[0])
	if want <= first {
		t.Fatalf("the whole sample has %d steps, its first lines %d; the test shows no growth", want, first)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == want, fmt.Sprintf("%d steps stored after the append; want %d", n, want)
	})
}
