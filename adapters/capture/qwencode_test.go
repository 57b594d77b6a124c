package capture

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/qwencode"
)

// TestQwenSessionUpdatesLive: a chat recording Qwen Code appends to, in a
// project folder made after the watch began, is brought up to date in the
// store as it grows (the real sample, written in two parts: the prompt and
// the first reply's call, then the rest).
func TestQwenSessionUpdatesLive(t *testing.T) {
	src, _ := filepath.Glob("../qwencode/testdata/projects/-tmp-qwentest/chats/*.jsonl")
	projects := filepath.Join(t.TempDir(), ".qwen", "projects")
	path := filepath.Join(projects, "-tmp-qwentest", "chats", filepath.Base(src[0]))
	units, _ := qwencode.Discover(src)
	if len(units) != 1 {
		t.Fatalf("the sample holds %d sessions; want 1", len(units))
	}
	sid := units[0].ID
	growsLive(t, qwencode.Kind, projects, src[0], path, sid, 4, func(path string) int {
		units, _ := qwencode.Discover([]string{path})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return qwencode.Parse(units[0], []adapters.File{{Path: path, Body: f}}).Steps
	})
}
