package capture

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/codex"
)

// TestCodexSessionUpdatesLive: a rollout Codex appends to, in a day's
// folder made after the watch began, is brought up to date in the store as
// it grows (the real sample, written in two parts).
func TestCodexSessionUpdatesLive(t *testing.T) {
	const src = "../codex/testdata/agentlogs_crud_rollout.jsonl"
	units, _ := codex.Discover([]string{src})
	if len(units) != 1 {
		t.Fatalf("the sample holds %d sessions; want 1", len(units))
	}
	sid := units[0].ID
	sessions := filepath.Join(t.TempDir(), ".codex", "sessions")
	path := filepath.Join(sessions, "2026", "01", "25", "rollout-2026-01-25T10-32-00-"+sid+".jsonl")
	growsLive(t, codex.Kind, sessions, src, path, sid, 19, func(path string) int {
		units, _ := codex.Discover([]string{path})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return codex.Parse(units[0], []adapters.File{{Path: path, Body: f}}).Steps
	})
}
