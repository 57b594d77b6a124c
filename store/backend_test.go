package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// TestBackend runs the behavioural suite of the store contract against
// SQLite, each subtest on a file of its own.
func TestBackend(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend {
		s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
		if err != nil {
			t.Fatalf("Open() = %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
		})
		return s
	})
}
