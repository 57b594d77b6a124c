package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/internal/shell/shelltest"
)

// TestResumeCommandLine reopens an imported Claude Code session from the
// command line: the real transcript, its folder moved to one on this
// machine whose name a shell would misread, runs `claude --resume <its
// sessionId>` there (a fake claude on PATH says how it ran); --print
// prints the page's line; a session of an agent that cannot be reopened,
// an unknown one and one whose folder is not here are refused.
func TestResumeCommandLine(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	sample, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "samples", "claude-code", "agentlogs_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ Cwd, SessionID string }
	for line := range bytes.Lines(sample) {
		if json.Unmarshal(line, &first) == nil && first.Cwd != "" {
			break
		}
	}
	work := filepath.Join(dir, "it's $HOME")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd, _ := json.Marshal(first.Cwd)
	moved, _ := json.Marshal(work)
	transcript := filepath.Join(dir, "projects", "p", first.SessionID+".jsonl")
	os.MkdirAll(filepath.Dir(transcript), 0o755)
	if err := os.WriteFile(transcript, bytes.ReplaceAll(sample, cwd, moved), 0o644); err != nil {
		t.Fatal(err)
	}
	runImportCmd(t, "claude-code", transcript, "--db", db)
	runImportCmd(t, "cline", filepath.Join("..", "..", "..", "shared", "samples", "cline"), "--db", db)
	runImportCmd(t, "codex", filepath.Join("..", "..", "..", "shared", "samples", "codex"), "--db", db)

	t.Setenv("PATH", shelltest.Programs(t, "claude")+string(os.PathListSeparator)+os.Getenv("PATH"))
	resume := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"resume", "--db", db}, args...), &out, &errOut)
		return out.String(), err
	}
	out, err := resume(first.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := shelltest.Lines([]byte(out)), []string{work, "claude", "--resume", first.SessionID}; !slices.Equal(got, want) {
		t.Errorf("resume ran %q; want %q", got, want)
	}
	printed, err := resume(first.SessionID, "--print")
	if err != nil || !strings.HasSuffix(printed, " && claude --resume "+first.SessionID+"\n") || !strings.HasPrefix(printed, "cd '") {
		t.Errorf("resume --print = %q, %v", printed, err)
	}

	tasks, _ := os.ReadDir(filepath.Join("..", "..", "..", "shared", "samples", "cline", "tasks"))
	rollout, _ := os.ReadFile(filepath.Join("..", "..", "..", "shared", "samples", "codex", "agentlogs_crud_rollout.jsonl"))
	var meta struct{ Payload struct{ ID string } }
	json.Unmarshal(rollout[:bytes.IndexByte(rollout, '\n')], &meta)
	for _, c := range []struct{ id, want string }{
		{tasks[0].Name(), "cline cannot reopen a session by its id"},
		{"no-such-session", `no session "no-such-session" in the store`},
		{meta.Payload.ID, "is not a folder on this machine"}, // the Codex sample's folder is its author's
	} {
		if _, err := resume(c.id); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resume %s = %v; want %q", c.id, err, c.want)
		}
	}
}
