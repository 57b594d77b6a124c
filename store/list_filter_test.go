package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// TestListFilters: every list filter keeps the sessions it names, filters
// combine, and the agent and verdict counts follow every other filter.
func TestListFilters(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, sessionAt("old", "testagent", "2026-01-01T10:00:00Z", 1.25)) // a failed and a flagged step
	calm := sessionAt("calm", "testagent", "2026-01-02T10:00:00Z", nil)
	calm["steps"] = arr{step("calm", 1, "message"), step("calm", 2, "read")}
	mustApply(t, s, calm)
	other := sessionAt("other", "otheragent", "2026-01-03T10:00:00Z", 2.0)
	other["steps"] = arr{step("other", 1, "message")}
	mustApply(t, s, other)

	tests := []struct {
		name   string
		q      store.ListQuery
		ids    []string
		agents []store.AgentCount
	}{
		{"none", store.ListQuery{}, []string{"other", "calm", "old"}, []store.AgentCount{{"otheragent", 1}, {"testagent", 2}}},
		{"workspace", store.ListQuery{Workspace: "ws-ca"}, []string{"calm"}, []store.AgentCount{{"testagent", 1}}},
		{"since", store.ListQuery{Since: "2026-01-02"}, []string{"other", "calm"}, []store.AgentCount{{"otheragent", 1}, {"testagent", 1}}},
		{"until", store.ListQuery{Until: "2026-01-02T10:00:00Z"}, []string{"old"}, []store.AgentCount{{"testagent", 1}}},
		{"failed", store.ListQuery{Failed: true}, []string{"old"}, []store.AgentCount{{"testagent", 1}}},
		{"flagged", store.ListQuery{Flagged: true}, []string{"old"}, []store.AgentCount{{"testagent", 1}}},
		{"cost recorded", store.ListQuery{Cost: "recorded"}, []string{"other", "old"}, []store.AgentCount{{"otheragent", 1}, {"testagent", 1}}},
		{"cost not recorded", store.ListQuery{Cost: "not_recorded"}, []string{"calm"}, []store.AgentCount{{"testagent", 1}}},
		{"agent keeps every agent's count", store.ListQuery{Agent: "otheragent", Since: "2026-01-02"}, []string{"other"}, []store.AgentCount{{"otheragent", 1}, {"testagent", 1}}},
		{"combined", store.ListQuery{Agent: "testagent", Since: "2026-01-02", Cost: "not_recorded"}, []string{"calm"}, []store.AgentCount{{"testagent", 1}}},
		{"nothing left", store.ListQuery{Failed: true, Cost: "not_recorded"}, []string{}, []store.AgentCount{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := s.List(context.Background(), tc.q)
			if err != nil {
				t.Fatalf("List(%+v) = %v; want no error", tc.q, err)
			}
			if got := listIDs(l); !reflect.DeepEqual(got, tc.ids) {
				t.Errorf("List(%+v) = %v; want %v", tc.q, got, tc.ids)
			}
			if l.Total.Sessions != len(tc.ids) {
				t.Errorf("List(%+v).Total.Sessions = %d; want %d", tc.q, l.Total.Sessions, len(tc.ids))
			}
			if !reflect.DeepEqual(l.Agents, tc.agents) {
				t.Errorf("List(%+v).Agents = %+v; want %+v", tc.q, l.Agents, tc.agents)
			}
		})
	}

	for _, q := range []store.ListQuery{{Since: "yesterday"}, {Until: "2026-13-01"}, {Cost: "maybe"}} {
		if _, err := s.List(context.Background(), q); !errors.Is(err, store.ErrBadFilter) {
			t.Errorf("List(%+v) = %v; want ErrBadFilter", q, err)
		}
	}
}

// TestListOwner: the owner filter keeps the sessions a team server took
// from that user (Batch.Owner) and no other; a session pushed without an
// owner is OwnerLocal's.
func TestListOwner(t *testing.T) {
	s := mustOpen(t)
	owners := map[string]string{"a1": "alice", "a2": "alice", "b1": "bob", "l1": ""}
	for id, owner := range owners {
		b := mustParse(t, sessionAt(id, "testagent", "2026-01-01T10:00:00Z", nil))
		b.Owner = owner
		if _, err := s.Apply(context.Background(), b); err != nil {
			t.Fatalf("Apply(%s) = %v", id, err)
		}
	}
	for _, owner := range []string{"alice", "bob", store.OwnerLocal, "nobody"} {
		want := []string{}
		for id, o := range owners {
			if o == owner || (o == "" && owner == store.OwnerLocal) {
				want = append(want, id)
			}
		}
		slices.Sort(want) // same start time: ordered by id
		l, err := s.List(context.Background(), store.ListQuery{Owner: owner})
		if err != nil {
			t.Fatalf("List(owner %s) = %v", owner, err)
		}
		if got := listIDs(l); !reflect.DeepEqual(got, want) || l.Total.Sessions != len(want) {
			t.Errorf("List(owner %s) = %v (total %d); want %v", owner, got, l.Total.Sessions, want)
		}
	}
}

// TestListCostReportedPerRequest: a session without metrics whose requests
// reported their cost (usage records with a cost, as Aider's and
// opencode's) has its cost recorded: the total adds those costs, and the
// cost filter keeps it among the recorded ones; a session whose usage
// reported no cost, or that has none, is not recorded.
func TestListCostReportedPerRequest(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, sessionAt("metered", "testagent", "2026-01-01T10:00:00Z", 1.25))
	costs := []float64{0.0125, 0.031, 0.4}
	var want float64 = 1.25
	withUsage := func(sid string, costs []float64) {
		b := mustParse(t, sessionAt(sid, "testagent", "2026-01-02T10:00:00Z", nil))
		for i, c := range costs {
			r := store.UsageRecord{ID: fmt.Sprintf("r%d", i), At: fmt.Sprintf("2026-01-02T1%d:00:00Z", i), Model: "claude-sonnet-4-5",
				ActorID: sid + "-root", TurnID: sid + "-t1", Tokens: pricing.Tokens{Input: 100, Output: 10}, Source: store.UsageFromFile}
			if c >= 0 {
				r.CostUSD = &c
			}
			b.Usage = append(b.Usage, r)
		}
		if _, err := s.Apply(context.Background(), b); err != nil {
			t.Fatalf("Apply(%s) = %v", sid, err)
		}
	}
	withUsage("paid", costs)
	for _, c := range costs {
		want += c
	}
	withUsage("priced", []float64{-1, -1}) // usage, no cost reported
	mustApply(t, s, sessionAt("bare", "testagent", "2026-01-03T10:00:00Z", nil))

	l, err := s.List(context.Background(), store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Total.Sessions != 4 || math.Abs(l.Total.CostUSD-want) > 1e-9 || l.Total.CostNotRecorded != 2 {
		t.Errorf("Total = %+v; want 4 sessions, $%v, 2 not recorded", l.Total, want)
	}
	for cost, ids := range map[string][]string{"recorded": {"paid", "metered"}, "not_recorded": {"bare", "priced"}} {
		l, err := s.List(context.Background(), store.ListQuery{Cost: cost})
		if err != nil {
			t.Fatal(err)
		}
		got := listIDs(l)
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Errorf("List(cost=%s) = %v; want %v", cost, got, ids)
		}
	}
}
