package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeCommands returns the shell commands of the README's curl walkthrough,
// continuation lines joined, comments dropped.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Push, read, follow and delete sessions")
	if !ok {
		t.Fatal("README has no curl walkthrough section")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\")
			continue
		}
		cmds = append(cmds, cur+line)
		cur = ""
	}
	return cmds
}

// TestReadmeWalkthrough runs the README's curl examples, as written, against
// the real binary (on a free port instead of 1234).
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	for _, tool := range []string{"bash", "curl", "gzip", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	bin := mustBuild(t)
	home := t.TempDir()
	p := startServer(t, bin, home, filepath.Join(home, ".service", "store.db"))
	port := strings.TrimPrefix(p.base, "http://127.0.0.1:")
	root, _ := filepath.Abs("../..")

	script := ""
	for _, cmd := range readmeCommands(t) {
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:1234", "127.0.0.1:"+port)
		if strings.Contains(cmd, "/api/events") {
			cmd = "timeout 1 " + cmd + " || [ $? -eq 124 ]" // it streams until stopped
		}
		script += cmd + "\necho\n"
	}
	wants := []string{
		`"created":true`, `"created":false`, `"sessions":[{"id":"demo-7f3a9c"`,
		`"report":{"files"`, "event: ready", `{"deleted":"demo-7f3a9c"}`,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	sh.Dir = root
	sh.Env = append(os.Environ(), "HOME="+home)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("README walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("README walkthrough output lacks %s:\n%s", want, out)
		}
	}
	if n := len(readmeCommands(t)); n != 7 {
		t.Errorf("the walkthrough has %d commands; this test knows 7: update it with the README", n)
	}
}
