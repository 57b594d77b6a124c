package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/codex"
)

// TestCaptureCodexBinary runs the real binary's `capture` with $CODEX_HOME
// set: a rollout Codex writes under its sessions folder after capture
// started, in a day's folder made then, is stored with every step the
// adapter reads from it.
func TestCaptureCodexBinary(t *testing.T) {
	codexHome, waitSteps := captureBinary(t, "CODEX_HOME", "codex:      ", "sessions")

	const src = "../../adapters/codex/testdata/agentlogs_crud_rollout.jsonl"
	units, problems := codex.Discover([]string{src})
	if len(units) != 1 || len(problems) > 0 {
		t.Fatalf("Discover(sample) = %v, %v", units, problems)
	}
	sid := units[0].ID
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	want := codex.Parse(units[0], []adapters.File{{Path: src, Body: f}}).Steps
	f.Close()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	rollout := filepath.Join(codexHome, "sessions", "2026", "01", "25", "rollout-2026-01-25T10-32-00-"+sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(rollout), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rollout, b, 0o600); err != nil {
		t.Fatal(err)
	}
	waitSteps(sid, want)
}
