package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
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
		script := "#!/bin/sh\npwd\nfor w in \"$0\" \"$@\"; do printf '%s\\n' \"$w\"; done\n"
		if err := os.WriteFile(filepath.Join(bin, want[0]), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: sh -c %q: %v", a.Kind, line, err)
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		wantOut := append([]string{dir, filepath.Join(bin, want[0])}, append(want[1:], id)...)
		if !slices.Equal(got, wantOut) {
			t.Errorf("%s: sh -c %q printed %q, want %q", a.Kind, line, got, wantOut)
		}
		if _, err := os.Stat(filepath.Join(cmd.Dir, "pwned")); err == nil {
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
