package opencode

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/opencode/opencodetest"
	"github.com/agentreview/service/store"
)

// TestGolden parses each sample in testdata (the storage folder and, named
// one by one as a user would, the export files) and compares its batches
// with testdata/golden/<sample>.json; -update rewrites them. The same
// records in opencode.db must make the same batches as in storage/.
func TestGolden(t *testing.T) {
	adapterstest.GoldenUnits(t, Agent, func(adapters.Unit) string { return "testdata/storage-derived" })
	exports, _ := filepath.Glob("testdata/*_export.json")
	for _, path := range exports {
		name := adapterstest.SampleName(t, path)
		t.Run(name, func(t *testing.T) {
			adapterstest.Golden(t, name, mustBatches(t, path))
		})
	}
	t.Run("sqlite", func(t *testing.T) {
		db := opencodetest.MustDB(t, filepath.Join("testdata", "storage-derived", "storage"), t.TempDir(), false)
		got, want := outline(t, mustBatches(t, db)), outline(t, mustBatches(t, "testdata/storage-derived"))
		if !bytes.Equal(got, want) {
			t.Errorf("batches from opencode.db differ from those of the same records in storage/:\n%s\nwant\n%s", got, want)
		}
	})
}

// outline is batches as JSON without their source files (the one thing
// that differs between the layouts).
func outline(t testing.TB, batches []*store.Batch) []byte {
	for _, b := range batches {
		for i := range b.Segments {
			b.Segments[i].SourceFiles = nil
		}
	}
	out, err := json.MarshalIndent(batches, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mustBatches parses the one session under root.
func mustBatches(t testing.TB, root string) []*store.Batch {
	t.Helper()
	units, problems := Discover([]string{root})
	if len(units) != 1 || len(problems) > 0 {
		t.Fatalf("Discover(%s) = %d units, problems %v; want 1", root, len(units), problems)
	}
	s := adapterstest.ParseUnit(t, Agent, units[0])
	if len(s.Problems) > 0 {
		t.Fatalf("Parse(%s) problems: %v", root, s.Problems)
	}
	var out []*store.Batch
	s.Each(func(b *store.Batch) error { out = append(out, b); return nil })
	return out
}
