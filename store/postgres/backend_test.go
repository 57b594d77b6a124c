package postgres_test

import (
	"context"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
	"github.com/agentreview/service/store/postgres/pgtest"
	"github.com/agentreview/service/store/storetest"
)

// TestBackend runs the behavioural suite of the store contract against
// PostgreSQL, each subtest on a database of its own.
func TestBackend(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend {
		s, err := postgres.Open(context.Background(), pgtest.DSN(t))
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
