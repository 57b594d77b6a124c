package storetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentreview/service/store"
)

// SampleBatches are the batches the adapters make of the real sample
// transcripts (their golden files, adapters/*/testdata/golden), in a fixed
// order: real agent text (paths, commands, code, prose) for tests that
// compare backends. They carry no usage records (Batch.Usage is not JSON).
func SampleBatches(t testing.TB) []*store.Batch {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("storetest: no source path for the golden files")
	}
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "adapters", "*", "testdata", "golden", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("storetest: no golden batches (%v)", err)
	}
	var all []*store.Batch
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var batches []*store.Batch
		if err := json.Unmarshal(data, &batches); err != nil {
			t.Fatalf("storetest: %s: %v", p, err)
		}
		all = append(all, batches...)
	}
	return all
}
