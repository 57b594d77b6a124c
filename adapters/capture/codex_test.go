package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/codex"
)

// TestCodexSessionUpdatesLive: a rollout Codex appends to, in a day's
// folder made after the watch began, is brought up to date in the store as
// it grows (the real sample, written in two parts).
func TestCodexSessionUpdatesLive(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), ".codex", "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{codex.Kind: {sessions}}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)

	const src = "../codex/testdata/agentlogs_crud_rollout.jsonl"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	steps := func(path string) int {
		units, _ := codex.Discover([]string{path})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return codex.Parse(units[0], []adapters.File{{Path: path, Body: f}}).Steps
	}
	lines := strings.SplitAfter(string(b), "\n")
	var sid string
	if _, err := fmt.Sscanf(lines[0][strings.Index(lines[0], `"id":"`)+len(`"id":"`):], "%36s", &sid); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(sessions, "2026", "01", "25")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(day, "rollout-2026-01-25T10-32-00-"+sid+".jsonl")
	half := len(lines) / 2
	save(t, path, []byte(strings.Join(lines[:half], "")))
	first := steps(path)
	if first == 0 {
		t.Fatalf("the first %d lines of the sample have no step", half)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == first, fmt.Sprintf("%d steps stored; want the first lines' %d", n, first)
	})
	appendLines(t, path, strings.TrimSuffix(strings.Join(lines[half:], ""), "\n"))
	want := steps(src)
	if want <= first {
		t.Fatalf("the whole sample has %d steps, its first lines %d; the test shows no growth", want, first)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == want, fmt.Sprintf("%d steps stored after the append; want %d", n, want)
	})
}
