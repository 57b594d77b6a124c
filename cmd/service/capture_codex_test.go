package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/store"
)

// TestCaptureCodexBinary runs the real binary's `capture` with $CODEX_HOME
// set: a rollout Codex writes under its sessions folder after capture
// started, in a day's folder made then, is stored with every step the
// adapter reads from it.
func TestCaptureCodexBinary(t *testing.T) {
	bin := mustBuild(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, "codex")
	db := filepath.Join(home, "s.db")
	env := append(os.Environ(), "HOME="+home, "CODEX_HOME="+codexHome)
	p := startProc(t, env, bin, "capture", "--db", db, "--otlp-port", fmt.Sprint(freePort(t)))
	p.waitFor(t, 1, "codex:       ["+filepath.Join(codexHome, "sessions"))

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
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
		if err == nil && len(d.Steps) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session has %d steps (%v); want %d; capture said:\n%s", len(d.Steps), err, want, p.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
