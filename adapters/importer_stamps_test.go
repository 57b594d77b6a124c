package adapters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// TestImporterStamps imports two sessions held in one file: a session whose
// stamp is unchanged is skipped though the file changed, one whose stamp
// changed is read again, and the file is counted once.
func TestImporterStamps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "sessions.db")
	stamps := map[string]int64{"a": 1, "b": 1}
	write := func(mod time.Time) {
		os.WriteFile(db, []byte("2"), 0o600)
		os.Chtimes(db, mod, mod)
	}
	parsed := 0
	agent := fakeAgent(dir, &parsed)
	agent.Discover = func([]string) ([]adapters.Unit, []adapters.Problem) {
		var units []adapters.Unit
		for _, id := range []string{"a", "b"} {
			units = append(units, adapters.Unit{ID: id, Paths: []string{db},
				Stamps: []store.ImportedFile{{Path: db + "#" + id, ModTime: stamps[id]}}})
		}
		return units, nil
	}
	st := mustOpen(t)
	im := &adapters.Importer{Store: st}
	run := func(want string) {
		t.Helper()
		sum, err := im.Run(ctx, agent, nil)
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := sum.String(); got != want {
			t.Errorf("Run =\n%s\nwant\n%s", got, want)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write(t0)
	run("imported 1 file: 2 sessions (2 new, 0 updated, 0 unchanged), 4 steps written")
	write(t0.Add(time.Minute)) // the file changed for session b only
	stamps["b"] = 2
	parsed = 0
	run("imported 1 file: 2 sessions (0 new, 0 updated, 2 unchanged), 0 steps written")
	if parsed != 1 {
		t.Errorf("the second run parsed %d sessions; want 1 (b, whose stamp changed)", parsed)
	}
}
