package copilotcli

import (
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

func parseUnit(t testing.TB, u adapters.Unit) *adapters.Session {
	t.Helper()
	return Parse(u, adapterstest.Files(t, u.Paths))
}

// TestGolden parses each sample in testdata and compares its batches with
// testdata/golden/<sample>.json; -update rewrites them.
func TestGolden(t *testing.T) {
	adapterstest.GoldenUnits(t, Discover, func(u adapters.Unit) string { return u.Paths[0] }, parseUnit)
}
