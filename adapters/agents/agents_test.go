package agents

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentreview/service/internal/shell/shelltest"
)

// resumes are the commands each agent's documentation gives for reopening
// a session by its id; nil for the agents that have none (Cline's tasks
// live in an editor, Aider keeps one history a folder).
var resumes = map[string][]string{
	"claude-code": {"claude", "--resume"},
	"codex":       {"codex", "resume"},
	"gemini-cli":  {"gemini", "--resume"},
	"qwen-code":   {"qwen", "--resume"},
	"copilot-cli": {"copilot", "--resume"},
	"opencode":    {"opencode", "--session"},
	"crush":       {"crush", "--session"},
	"cline":       nil,
	"aider":       nil,
}

// TestResumeCommandRuns runs each agent's resume line in a real shell, the
// agent being a script on PATH that writes where it ran and its words: it
// must run in the workspace with the session's id as one word, however
// either is spelled.
func TestResumeCommandRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's a $HOME `dir`")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := "x'; touch pwned #"
	for _, a := range All {
		want, ok := resumes[a.Kind]
		if !ok {
			t.Errorf("%s: no documented resume command in this test", a.Kind)
			continue
		}
		line := ResumeCommand(a.Kind, id, dir)
		if want == nil {
			if line != "" {
				t.Errorf("%s: resume %q, want none", a.Kind, line)
			}
			continue
		}
		got, from := shelltest.Run(t, line, want[0])
		if want := append([]string{dir}, append(want, id)...); !slices.Equal(got, want) {
			t.Errorf("%s: sh -c %q printed %q, want %q", a.Kind, line, got, want)
		}
		if _, err := os.Stat(filepath.Join(from, "pwned")); err == nil {
			t.Errorf("%s: the id ran as a command", a.Kind)
		}
	}
}

func TestResumeCommandWithoutWorkspace(t *testing.T) {
	if got, want := ResumeCommand("codex", "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b", ""), "codex resume 019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b"; got != want {
		t.Errorf("ResumeCommand = %q, want %q", got, want)
	}
	for _, kind := range []string{"", "my-agent"} {
		if got := ResumeCommand(kind, "s1", "/w"); got != "" {
			t.Errorf("ResumeCommand(%q) = %q, want none", kind, got)
		}
	}
	for _, dir := range []string{"unknown", `C:\Users\u\project`, "relative/dir"} {
		if got, want := ResumeCommand("claude-code", "s1", dir), "claude --resume s1"; got != want {
			t.Errorf("ResumeCommand in %q = %q, want %q (no cd)", dir, got, want)
		}
	}
	if got := ResumeCommand("claude-code", "", "/w"); got != "" {
		t.Errorf("ResumeCommand of no id = %q, want none", got)
	}
}
