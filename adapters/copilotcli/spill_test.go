package copilotcli

import (
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// records is every record of a session's batches, as JSON, whichever
// batches they came in.
func records(t *testing.T, s *adapters.Session) string {
	t.Helper()
	var header store.SessionHeader
	var segs []store.Segment
	var actors []store.Actor
	var turns []store.Turn
	var steps []store.Step
	var usage []store.UsageRecord
	err := s.Each(func(b *store.Batch) error {
		header = b.Session
		segs, actors, turns = append(segs, b.Segments...), append(actors, b.Actors...), append(turns, b.Turns...)
		steps, usage = append(steps, b.Steps...), append(usage, b.Usage...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal([]any{header, segs, actors, turns, steps, usage})
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// Every sample's events log read with its steps in memory and read
// through a spill (adapters.SpillAfter 0) gives the same records.
func TestSpilledSessionsMatchInMemory(t *testing.T) {
	units, problems := Discover([]string{"testdata/session-state", "testdata/history-session-state"})
	if len(problems) > 0 || len(units) == 0 {
		t.Fatalf("%d units, problems %v", len(units), problems)
	}
	mem := map[string]string{}
	for _, u := range units {
		s := adapterstest.ParseUnit(t, Agent, u)
		if s.Spilled != nil {
			t.Fatalf("%s: spilled below adapters.SpillAfter", u.ID)
		}
		mem[u.ID] = records(t, s)
	}
	was := adapters.SpillAfter
	adapters.SpillAfter = 0
	defer func() { adapters.SpillAfter = was }()
	spilled := 0
	for _, u := range units {
		s := adapterstest.ParseUnit(t, Agent, u)
		if s.Spilled != nil && len(s.Spilled.Steps) > 0 {
			spilled++
		}
		if got := records(t, s); got != mem[u.ID] {
			t.Errorf("%s: the session read through a spill differs from the one read in memory", u.ID)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	if spilled == 0 {
		t.Errorf("no session of %d went through a spill", len(units))
	}
	// The handmade log (failed, refused and unknown calls, a resume).
	adapters.SpillAfter = was
	inMemory := records(t, parseText(handmade))
	adapters.SpillAfter = 0
	if got := records(t, parseText(handmade)); got != inMemory {
		t.Error("the handmade log read through a spill differs from the one read in memory")
	}
}
