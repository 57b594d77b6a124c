package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestCaptureCopilotCLIBinary runs the real binary's `capture` with
// $COPILOT_HOME set: a Copilot CLI session written there after capture
// started is stored, and the lines appended to its events.jsonl reach the
// store while capture runs.
func TestCaptureCopilotCLIBinary(t *testing.T) {
	bin := mustBuild(t)
	home := t.TempDir()
	copilotHome := filepath.Join(home, "copilot")
	db := filepath.Join(home, "s.db")
	env := append(os.Environ(), "HOME="+home, "COPILOT_HOME="+copilotHome)
	p := startProc(t, env, bin, "capture", "--db", db, "--otlp-port", fmt.Sprint(freePort(t)))
	p.waitFor(t, 1, "copilot cli: ["+filepath.Join(copilotHome, "session-state"))

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
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	steps := func() int {
		d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
		if err != nil {
			return -1
		}
		return len(d.Steps)
	}
	waitSteps := func(want int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for steps() != want {
			if time.Now().After(deadline) {
				t.Fatalf("session has %d steps; want %d; capture said:\n%s", steps(), want, p.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitSteps(6) // the prompt, thinking and four calls

	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Join(lines[9:], nil))
	f.Close()
	waitSteps(20)
}
