package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

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
