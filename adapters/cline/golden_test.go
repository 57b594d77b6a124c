package cline

import (
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

// TestGolden parses each small sample in testdata (the task and session
// folders Discover finds, and the agentlogs task) and compares its batches
// with testdata/golden/<sample>.json; -update rewrites them.
func TestGolden(t *testing.T) {
	adapterstest.GoldenUnits(t, Agent, func(u adapters.Unit) string { return filepath.Dir(u.Paths[0]) })
	name := adapterstest.SampleName(t, agentlogsHistory)
	t.Run(name, func(t *testing.T) {
		s := parseAgentlogsTask(t)
		if s == nil {
			t.Fatalf("ParseTask(%s) = nil; want a session", agentlogsHistory)
		}
		adapterstest.Golden(t, name, s.Batches)
	})
}
