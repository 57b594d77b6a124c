package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// captureBinary runs the real binary's `capture` on a new store, with a
// home of its own and the agent's home variable (envKey, COPILOT_HOME say)
// set to a folder under it, and waits until capture prints shown with the
// folder it follows under that home (sub). It returns the agent's home and
// a wait for a session's steps in the store.
func captureBinary(t *testing.T, envKey, shown, sub string) (agentHome string, waitSteps func(sid string, want int)) {
	t.Helper()
	bin := mustBuild(t)
	home := t.TempDir()
	agentHome = filepath.Join(home, "agent")
	db := filepath.Join(home, "s.db")
	env := append(os.Environ(), "HOME="+home, envKey+"="+agentHome)
	p := startProc(t, env, bin, "capture", "--db", db, "--otlp-port", fmt.Sprint(freePort(t)))
	p.waitFor(t, 1, shown+" ["+filepath.Join(agentHome, sub))
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return agentHome, func(sid string, want int) {
		t.Helper()
		steps := func() int {
			d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
			if err != nil {
				return -1
			}
			return len(d.Steps)
		}
		deadline := time.Now().Add(20 * time.Second)
		for steps() != want {
			if time.Now().After(deadline) {
				t.Fatalf("session has %d steps; want %d; capture said:\n%s", steps(), want, p.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
