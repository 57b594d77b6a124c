package store

import (
	"strings"
	"testing"
)

// The catch-up reads only what changed: the changed sessions by their
// stamps and each one's changed steps by theirs, never every session or
// step of the store, so a live push's catch-up costs the same in a store
// of a million steps as in an empty one (BenchmarkCatchUp100). SQLite
// left to choose walked all of steps_by_change.
func TestCatchUpReadsOnlyWhatChanged(t *testing.T) {
	s := mustOpenInternal(t)
	for _, q := range append([]string{indexPlanSQL}, indexChangesSQL...) {
		plan := queryPlan(t, s, q)
		for _, step := range plan {
			if scan, ok := strings.CutPrefix(step, "SCAN "); ok && !strings.HasPrefix(scan, "idx.search_state") && scan != "changed" {
				t.Errorf("%s\nreads a whole table: %q (plan: %q)", q, step, plan)
			}
		}
	}
}
