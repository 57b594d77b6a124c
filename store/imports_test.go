package store_test

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestWorkspaceRoots: each workspace root once, the one of the latest
// started session first, at most n.
func TestWorkspaceRoots(t *testing.T) {
	s := mustOpen(t)
	for i, c := range []struct{ id, root string }{{"w1", "/ws/a"}, {"w2", "/ws/b"}, {"w3", "/ws/a"}} {
		b := newBatch(c.id)
		h := b["session"].(obj)
		h["workspace"] = obj{"root": c.root}
		h["started_at"] = time.Date(2026, 3, 1, i, 0, 0, 0, time.UTC).Format(time.RFC3339)
		mustApply(t, s, b)
	}
	for n, want := range map[int][]string{3: {"/ws/a", "/ws/b"}, 1: {"/ws/a"}} {
		if got, err := s.WorkspaceRoots(context.Background(), n); err != nil || !slices.Equal(got, want) {
			t.Errorf("WorkspaceRoots(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
}
