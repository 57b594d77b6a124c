package qwencode

import (
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

// TestGolden parses each small sample in testdata and compares its batches
// with testdata/golden/<sample>.json; -update rewrites them.
func TestGolden(t *testing.T) {
	adapterstest.GoldenUnits(t, Agent, func(u adapters.Unit) string { return u.Paths[0] })
}
