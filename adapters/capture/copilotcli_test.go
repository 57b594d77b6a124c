package capture

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/copilotcli"
)

// copilotLines are the first n lines of the Copilot CLI sample log.
func copilotLines(t *testing.T, n int) []string {
	t.Helper()
	b, err := os.ReadFile("../copilotcli/testdata/session-state/96ef38f0-9d09-45c3-8124-6448c36090ed/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if n > len(lines) {
		t.Fatalf("the sample has %d lines; want %d", len(lines), n)
	}
	return lines[:n]
}

// TestCopilotSessionUpdatesLive runs capture on a Copilot CLI
// session-state folder: a session's events.jsonl created after the watch
// began is imported, a line appended to it shows in the store, and so does
// the file rewritten whole.
func TestCopilotSessionUpdatesLive(t *testing.T) {
	const sid = "96ef38f0-9d09-45c3-8124-6448c36090ed"
	st := mustOpen(t)
	root := filepath.Join(t.TempDir(), ".copilot", "session-state")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	c := &Capture{Store: st, Roots: map[string][]string{copilotcli.Kind: {root}}, Debounce: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	count := func() int {
		d, ok := detail(t, st, sid)
		if !ok {
			return -1
		}
		return len(d.Steps)
	}

	log := filepath.Join(root, sid, "events.jsonl")
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, copilotLines(t, 9)...) // up to the first assistant.message: prompt, thinking, 4 calls
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := count()
		return n == 6, fmt.Sprintf("%d steps after the first lines; want 6", n)
	})

	all := copilotLines(t, 55)
	appendLines(t, log, all[9:20]...) // the calls' results and the next request
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, _ := detail(t, st, sid)
		s, _ := stepByID(d, "toolu_01FHTLyT6qC9JDTbFbWJZ5Gu")
		return len(d.Steps) == 9 && s.Outcome == "ok", fmt.Sprintf("%d steps, Cargo.toml view %q after the appended lines; want 9 and ok", len(d.Steps), s.Outcome)
	})

	save(t, log, []byte(strings.Join(all, "\n")+"\n")) // rewritten whole
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, _ := detail(t, st, sid)
		return len(d.Steps) == 20 && d.EndedAt != "", fmt.Sprintf("%d steps, ended %q after the rewrite; want 20 and ended", len(d.Steps), d.EndedAt)
	})
}
