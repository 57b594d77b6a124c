package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCaptureCopilotCLIBinary runs the real binary's `capture` with
// $COPILOT_HOME set: a Copilot CLI session written there after capture
// started is stored, and the lines appended to its events.jsonl reach the
// store while capture runs.
func TestCaptureCopilotCLIBinary(t *testing.T) {
	copilotHome, waitSteps := captureBinary(t, "COPILOT_HOME", "copilot cli:", "session-state")

	const sid = "96ef38f0-9d09-45c3-8124-6448c36090ed"
	sample, err := os.ReadFile(copilotSamples[sid])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(sample, []byte("\n"))
	log := filepath.Join(copilotHome, "session-state", sid, "events.jsonl")
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil { // the root appears after capture started
		t.Fatal(err)
	}
	if err := os.WriteFile(log, bytes.Join(lines[:9], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	waitSteps(sid, 6) // the prompt, thinking and four calls

	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Join(lines[9:], nil))
	f.Close()
	waitSteps(sid, 20)
}
