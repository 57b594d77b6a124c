package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcessesStartTogetherOnANewStore starts serve, capture, import and
// hook (the real binary) at the same moment on a machine with no store yet
// (a fresh HOME, so the default ~/.service/store.db), 50 times: every
// process starts every time (serve and capture listen, import and hook
// write the session). Before the store's setup lock, one or more of them
// exited at once in some rounds with "enable wal: database is locked".
// 5 to 10 s on 2 cores; the binary is built once per test run.
func TestProcessesStartTogetherOnANewStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := mustBuild(t)
	retries := 0
	for round := 0; round < 50; round++ {
		home := t.TempDir()
		claudeTranscript(t, filepath.Join(home, ".claude"))
		env := freshEnv(home)
		serve := startProc(t, env, bin, "serve", "--port", fmt.Sprint(freePort(t)))
		capture := startProc(t, env, bin, "capture", "--otlp-port", fmt.Sprint(freePort(t)))
		imp := startProc(t, env, bin, "import", "claude-code")
		hook := startProc(t, env, bin, "hook")
		hook.stdin(hookPayload("Stop", filepath.Join(home, ".claude", "projects", "-home-marco-projects-spotter", spotterSession+".jsonl")))

		// A free port another test took between freePort and the bind is
		// not what this test is about: the round runs again, on new ports.
		if !serve.listening(t, round, "service listening on") || !capture.listening(t, round, "capturing into") {
			if retries++; retries > 5 {
				t.Fatalf("round %d: ports taken by others 5 times", round)
			}
			round--
			continue
		}
		imp.waitExit(t, round, "imported 1 file: 1 session")
		hook.waitExit(t, round, "")
		if logged, err := os.ReadFile(filepath.Join(home, ".service", "hook.log")); err == nil {
			t.Fatalf("round %d: hook.log: %s", round, logged)
		}
		serve.stop(t, round)
		capture.stop(t, round)
	}
}

// freshEnv is this process's environment with HOME at home and none of the
// variables that point the service at other folders or ports.
func freshEnv(home string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "HOME", "PORT", "SERVICE_INGEST_TOKEN_FILE", "CLAUDE_CONFIG_DIR", "CLINE_DATA_DIR", "CLINE_DIR", "CODEX_HOME",
			"GEMINI_CLI_HOME", "COPILOT_HOME", "XDG_DATA_HOME", "OPENCODE_DB":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// runningProc is one process of the service binary, with its output.
type runningProc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	in     *os.File // the write end of its stdin
	exited chan struct{}
	err    error // valid once exited is closed
}

func startProc(t *testing.T, env []string, bin string, args ...string) *runningProc {
	t.Helper()
	p := &runningProc{name: args[0], out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdin, p.in = r, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.in.Close()
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// stdin writes s to the process's stdin and closes it.
func (p *runningProc) stdin(s string) {
	p.in.WriteString(s)
	p.in.Close()
}

// waitFor waits until the process prints want; it fails the test if the
// process exits first (or has not printed it after the store's bounded
// wait of 15 s and some).
func (p *runningProc) waitFor(t *testing.T, round int, want string) {
	t.Helper()
	if !p.listening(t, round, want) {
		t.Fatalf("round %d: %s exited (%v) before it started; output:\n%s", round, p.name, p.err, p.out)
	}
}

// listening is waitFor for a process that listens on a port it was given:
// false, not a failure, when it exited because another process had taken
// the port.
func (p *runningProc) listening(t *testing.T, round int, want string) bool {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(p.out.String(), want) {
		select {
		case <-p.exited:
			if strings.Contains(p.out.String(), "address already in use") {
				return false
			}
			t.Fatalf("round %d: %s exited (%v) before it started; output:\n%s", round, p.name, p.err, p.out)
		case <-deadline:
			t.Fatalf("round %d: %s has not printed %q after 20 s; output:\n%s", round, p.name, want, p.out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// waitExit waits for the process to exit 0 having printed want.
func (p *runningProc) waitExit(t *testing.T, round int, want string) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("round %d: %s still running after 20 s; output:\n%s", round, p.name, p.out)
	}
	if p.err != nil || !strings.Contains(p.out.String(), want) {
		t.Fatalf("round %d: %s = %v; want exit 0 and %q; output:\n%s", round, p.name, p.err, want, p.out)
	}
}

// stop interrupts the process and wants it to exit 0.
func (p *runningProc) stop(t *testing.T, round int) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	p.waitExit(t, round, "stopped")
}
