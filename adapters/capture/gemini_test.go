package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/geminicli"
)

const geminiSamples = "../geminicli/testdata/tmp"

// startGeminiCapture runs a capture that follows only Gemini CLI's tmp
// folder, made empty.
func startGeminiCapture(t *testing.T) (h *harness, tmp string) {
	t.Helper()
	tmp = filepath.Join(t.TempDir(), ".gemini", "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	h = &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{geminicli.Kind: {tmp}}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)
	return h, tmp
}

// sampleSteps is the number of steps the adapter makes of a sample file.
func sampleSteps(t *testing.T, path string) int {
	t.Helper()
	units, _ := geminicli.Discover([]string{path})
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := geminicli.Parse(units[0], []adapters.File{{Path: path, Body: f}})
	return s.Steps
}

// TestGeminiSessionUpdatesLive: a JSONL session that Gemini CLI appends to
// (a new project folder, after the watch began) and a legacy JSON session
// it rewrites whole are both brought up to date in the store.
func TestGeminiSessionUpdatesLive(t *testing.T) {
	h, tmp := startGeminiCapture(t)

	src, _ := filepath.Glob(filepath.Join(geminiSamples, "*", "chats", "*.jsonl"))
	b, err := os.ReadFile(src[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	chats := filepath.Join(tmp, filepath.Base(filepath.Dir(filepath.Dir(src[0]))), "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(chats, "session-2026-04-23T12-52-0ab84937.jsonl")
	save(t, path, []byte(strings.Join(lines[:6], ""))) // up to the first reply, before its tool calls
	const sid = "0ab84937-9fe7-4284-986a-33c832af0b6a"
	first := 0
	waitFor(t, 10*time.Second, func() (bool, string) {
		first = stepCount(t, h, sid)
		return first == sampleSteps(t, path), fmt.Sprintf("%d steps stored; want the first lines' %d", first, sampleSteps(t, path))
	})
	appendLines(t, path, strings.TrimSuffix(strings.Join(lines[6:], ""), "\n"))
	want := sampleSteps(t, src[0])
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == want, fmt.Sprintf("%d steps stored after the append; want %d", n, want)
	})
	if want <= first {
		t.Fatalf("the whole sample has %d steps, its first lines %d; the test shows no growth", want, first)
	}

	src, _ = filepath.Glob(filepath.Join(geminiSamples, "*", "chats", "*.json"))
	b, err = os.ReadFile(src[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	msgs := doc["messages"].([]any)
	doc["messages"] = msgs[:1]
	part, _ := json.MarshalIndent(doc, "", "  ")
	legacy := filepath.Join(chats, "session-2026-03-27T10-19-8a20078e.json")
	save(t, legacy, part)
	const legacyID = "8a20078e-2d5e-4f81-a640-9b879bbb7e6d"
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, legacyID)
		return n == 1, fmt.Sprintf("%d steps stored of the legacy session; want its prompt", n)
	})
	save(t, legacy, b) // Gemini rewrites the whole file
	want = sampleSteps(t, src[0])
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, legacyID)
		return n == want, fmt.Sprintf("%d steps stored after the rewrite; want %d", n, want)
	})
}
