package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
)

// handmade is a Cline task folder of the cline adapter's tests.
const handmade = "../cline/testdata/handmade/tasks/1769000000000"

// clineHistory returns the task's api_conversation_history.json cut to its
// first n messages (all when n is 0).
func clineHistory(t *testing.T, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(handmade, "api_conversation_history.json"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		msgs = msgs[:n]
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// save writes a file the way an editor's plain save does: truncate, write.
func save(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
}

func stepCount(t *testing.T, h *harness, id string) int {
	d, ok := detail(t, h.st, id)
	if !ok {
		return -1
	}
	return len(d.Steps)
}

func TestClineSessionUpdatesAfterSave(t *testing.T) {
	h := startCapture(t)
	task := filepath.Join(h.cline, "1769000000000")
	if err := os.MkdirAll(task, 0o700); err != nil { // a new folder, after the watch began
		t.Fatal(err)
	}
	save(t, filepath.Join(task, "api_conversation_history.json"), clineHistory(t, 4))
	first := 0
	waitFor(t, 10*time.Second, func() (bool, string) {
		first = stepCount(t, h, "1769000000000")
		return first > 0, "first save not imported"
	})

	save(t, filepath.Join(task, "api_conversation_history.json"), clineHistory(t, 0))
	saved := time.Now()
	full := 0
	waitFor(t, 10*time.Second, func() (bool, string) {
		full = stepCount(t, h, "1769000000000")
		return full > first, fmt.Sprintf("still %d steps after the second save", full)
	})
	took := time.Since(saved)
	t.Logf("the second save reached the store after %s (%d steps, then %d)", took, first, full)
	// About a second is the aim; the bound is loose for busy test machines.
	if took > 3*time.Second {
		t.Errorf("the session updated %s after the save; want about a second", took)
	}
}

func TestClineHalfWrittenFileIsRetried(t *testing.T) {
	h := startCapture(t)
	task := filepath.Join(h.cline, "1769000000000")
	if err := os.MkdirAll(task, 0o700); err != nil {
		t.Fatal(err)
	}
	full := clineHistory(t, 0)
	ui, err := os.ReadFile(filepath.Join(handmade, "ui_messages.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The half-written file comes first: capture's first scan of the root
	// may run at any moment of this test, and a task read between the two
	// saves, whole but without ui_messages.json, would be rightly imported.
	save(t, filepath.Join(task, "ui_messages.json"), ui[:len(ui)/2]) // the agent is still writing
	save(t, filepath.Join(task, "api_conversation_history.json"), full)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(h.logs.String(), "read again later"), "no second read planned"
	})
	if _, ok := detail(t, h.st, "1769000000000"); ok {
		t.Error("the session was written from a half-written file")
	}
	save(t, filepath.Join(task, "ui_messages.json"), ui)
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, ok := detail(t, h.st, "1769000000000")
		if !ok || d.Metrics == nil {
			return false, "session not imported with its cost from ui_messages.json"
		}
		return true, ""
	})
	if logs := h.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("a half-written file was reported:\n%s", logs)
	}
}

func TestClaudePartialLineIsRetried(t *testing.T) {
	h := startCapture(t)
	path := h.transcript(sid)
	appendLines(t, path, promptLine(sid, "u1", "run the tests"))
	next := toolUseLine(sid, "a1", "toolu_1", "npm test", "2026-03-01T10:00:02.000Z")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(next[:len(next)/2])
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == 1 && strings.Contains(h.logs.String(), "read again later"), fmt.Sprintf("%d steps, no second read planned; want the prompt and one", n)
	})
	f.WriteString(next[len(next)/2:] + "\n")
	f.Close()
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == 2, fmt.Sprintf("%d steps; want the prompt and the tool call", n)
	})
	if logs := h.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("a half-written line was reported:\n%s", logs)
	}
}

// A new project folder is watched from when it appears, and a session
// already in it is read at once.
func TestNewProjectFolder(t *testing.T) {
	h := startCapture(t)
	sub := filepath.Join(h.claude, "-home-dev-other")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	const other = "7f3c2a10-0000-4000-8000-00000000000a"
	appendLines(t, filepath.Join(sub, other+".jsonl"), promptLine(other, "u1", "hello"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		return stepCount(t, h, other) == 1, "session in a new project folder not imported"
	})
	appendLines(t, filepath.Join(sub, other+".jsonl"), toolUseLine(other, "a1", "toolu_2", "ls", "2026-03-01T10:00:01.000Z"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		return stepCount(t, h, other) == 2, "a line added to it not imported"
	})
}

// A root that does not exist when capture starts is followed from when it
// appears, and the sessions already in it are read.
func TestRootAppearsLater(t *testing.T) {
	st := mustOpen(t)
	root := filepath.Join(t.TempDir(), "projects")
	c := &Capture{Store: st, ClaudeRoots: []string{root}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	project := filepath.Join(root, "-home-dev-hello")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	appendLines(t, filepath.Join(project, sid+".jsonl"), promptLine(sid, "u1", "hello"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		_, ok := detail(t, st, sid)
		return ok, "session under a root made after start not imported"
	})
}

// TestWatcherSkipsALineLongerThanMaxLine drops a transcript with a line
// past adapters.MaxLine (a hole of zero bytes) into a watched folder: the
// watcher writes the session from the lines around it and reports the
// long one with its path and line.
func TestWatcherSkipsALineLongerThanMaxLine(t *testing.T) {
	h := startCapture(t)
	tmp := filepath.Join(t.TempDir(), sid+".jsonl")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(promptLine(sid, "u1", "run the tests") + "\n")
	f.Seek(adapters.MaxLine+1, 1)
	f.WriteString("\n" + toolUseLine(sid, "a1", "toolu_1", "go test ./...", transcriptTime) + "\n")
	f.Close()
	path := h.transcript(sid)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, func() (bool, string) {
		want := path + ":2: line longer than 64 MB: skipped"
		if n := stepCount(t, h, sid); n < 2 || !strings.Contains(h.logs.String(), want) {
			return false, fmt.Sprintf("session has %d steps, log %q; want 2 and %q", n, h.logs.String(), want)
		}
		return true, ""
	})
}
