package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentreview/service/store"
)

// copilotSamples are the Copilot CLI samples, by the session id their
// content names.
var copilotSamples = map[string]string{
	"96ef38f0-9d09-45c3-8124-6448c36090ed": "../../adapters/copilotcli/testdata/session-state/96ef38f0-9d09-45c3-8124-6448c36090ed/events.jsonl",
	"0b2a81da-02cf-4cbb-ae14-07c597b84f4e": "../../adapters/copilotcli/testdata/history-session-state/test_conversation_copilot.json",
}

// rawPrompts counts a sample's user prompts from its JSON: user.message
// events with content, or timeline entries of type user.
func rawPrompts(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if strings.HasSuffix(path, ".json") {
		var h struct{ Timeline []struct{ Type string } }
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Timeline {
			if e.Type == "user" {
				n++
			}
		}
		return n
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Type string
			Data struct{ Content string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "user.message" && ev.Data.Content != "" {
			n++
		}
	}
	return n
}

// TestImportCopilotCLIBinary runs the real binary's `import copilot-cli`
// with no path: it reads ~/.copilot, then $COPILOT_HOME when set, and
// stores each sample's session with its prompts.
func TestImportCopilotCLIBinary(t *testing.T) {
	bin := mustBuild(t)
	home := t.TempDir()
	for _, base := range []string{filepath.Join(home, ".copilot"), filepath.Join(home, "elsewhere")} {
		copyTree(t, "../../adapters/copilotcli/testdata/session-state", filepath.Join(base, "session-state"), ".jsonl")
		copyTree(t, "../../adapters/copilotcli/testdata/history-session-state", filepath.Join(base, "history-session-state"), ".json")
	}
	for _, c := range []struct{ name, copilotHome string }{{"home", ""}, {"COPILOT_HOME", filepath.Join(home, "elsewhere")}} {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "s.db")
			cmd := exec.Command(bin, "import", "copilot-cli", "--db", db)
			cmd.Env = append(os.Environ(), "HOME="+home, "COPILOT_HOME="+c.copilotHome)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "imported 2 files: 2 sessions (2 new, 0 updated, 0 unchanged)") {
				t.Fatalf("import copilot-cli = %v, %q; want 2 new sessions", err, out)
			}
			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for sid, path := range copilotSamples {
				d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
				if err != nil {
					t.Fatalf("Detail(%s) = %v", sid, err)
				}
				prompts := 0
				for _, s := range d.Steps {
					if s.Type == store.TypeMessage && s.Payload.Role == "user" {
						prompts++
					}
				}
				if want := rawPrompts(t, path); prompts != want || d.Agent.Kind != "copilot-cli" {
					t.Errorf("session %s: %d prompts, kind %q; the raw file has %d prompts", sid, prompts, d.Agent.Kind, want)
				}
			}
		})
	}
}

// TestImportCopilotCLIBoundedMemory runs the real binary's import on a
// Copilot event log holding a 1 GiB line and a legacy file of 1 GiB: the
// line is reported with its path and number and the rest of the log is
// imported, the legacy file is reported and stores nothing, and the
// process stays within maxImportRSS.
func TestImportCopilotCLIBoundedMemory(t *testing.T) {
	bin := mustBuild(t)
	dir := t.TempDir()
	const sid = "96ef38f0-9d09-45c3-8124-6448c36090ed"
	log := filepath.Join(dir, "in", "session-state", sid, "events.jsonl")
	writeWithHole(t, copilotSamples[sid], log, 2, endlessLine)
	legacy := filepath.Join(dir, "in", "history-session-state", "0b2a81da-02cf-4cbb-ae14-07c597b84f4e.json")
	copyTree(t, "../../adapters/copilotcli/testdata/history-session-state", filepath.Dir(legacy), ".json")
	if err := os.Rename(filepath.Join(filepath.Dir(legacy), "test_conversation_copilot.json"), legacy); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(legacy, endlessLine); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.db")
	cmd := exec.Command(bin, "import", "copilot-cli", "--db", db, filepath.Join(dir, "in"))
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s = %v\n%s", cmd, err, out)
	}
	for _, want := range []string{log + ":3: line longer than 64 MB: skipped", legacy + ": file larger than 256 MB: skipped", "1 session (1 new"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("import said %q; want %q", out, want)
		}
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("import copilot-cli: peak RSS %d MB", rss>>20)
	if rss > maxImportRSS {
		t.Errorf("import peaked at %d MB of memory; want at most %d MB", rss>>20, maxImportRSS>>20)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Detail(context.Background(), "0b2a81da-02cf-4cbb-ae14-07c597b84f4e", store.DetailQuery{}); err == nil {
		t.Error("the legacy file past the limit stored a session")
	}
}
