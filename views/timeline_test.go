package views

import (
	"slices"
	"testing"
)

func TestTimeline(t *testing.T) {
	root := func(seq int64, tool string) StepView {
		return StepView{Seq: seq, ActorID: "root", ActorType: "root", ToolName: tool}
	}
	sub := func(seq int64, actor, status string) StepView {
		return StepView{Seq: seq, ActorID: actor, ActorType: "subagent", ActorLabel: "kind-" + actor, StatusClass: status}
	}
	// Two Task calls in parallel, their subagents' steps interleaved, a
	// main step between them, and a subagent with no main step before it.
	turn := TurnView{Steps: []StepView{
		sub(1, "early", "ok"),
		root(2, ""),
		root(3, "Task"),
		root(4, "Task"),
		sub(5, "a", "ok"),
		root(6, "Read"),
		sub(7, "b", "failed"),
		sub(8, "a", "failed"),
	}}
	lead, items := turn.Timeline()
	if len(lead) != 1 || lead[0].ActorID != "early" {
		t.Fatalf("Timeline() lead = %v; want the block of early", lead)
	}
	spawnedBy := map[string]int64{}
	var top []int64
	for _, it := range items {
		top = append(top, it.Step.Seq)
		for _, b := range it.Blocks {
			spawnedBy[b.ActorID] = it.Step.Seq
		}
	}
	if want := []int64{2, 3, 4, 6}; !slices.Equal(top, want) {
		t.Errorf("Timeline() top-level steps = %v; want %v", top, want)
	}
	// Each block goes to the latest Task call not claimed by another.
	if spawnedBy["a"] != 4 || spawnedBy["b"] != 3 {
		t.Errorf("Timeline() spawning steps = %v; want a under 4, b under 3", spawnedBy)
	}
	// A call that names the subagent's kind is its spawn, whatever the order.
	turn.Steps[2].SpawnKind, turn.Steps[3].SpawnKind = "kind-a", "kind-b"
	turn.Steps[2].SpawnDesc = "look around"
	_, items = turn.Timeline()
	for _, it := range items {
		for _, b := range it.Blocks {
			spawnedBy[b.ActorID] = it.Step.Seq
			if b.ActorID == "a" && b.Task != "look around" {
				t.Errorf("block a task = %q; want its call's description", b.Task)
			}
		}
	}
	if spawnedBy["a"] != 3 || spawnedBy["b"] != 4 {
		t.Errorf("Timeline() spawning steps by kind = %v; want a under 3, b under 4", spawnedBy)
	}
	for _, it := range items {
		for _, b := range it.Blocks {
			var seqs []int64
			for _, s := range b.Steps {
				seqs = append(seqs, s.Seq)
			}
			want := map[string][]int64{"a": {5, 8}, "b": {7}}[b.ActorID]
			if !slices.Equal(seqs, want) {
				t.Errorf("block %s steps = %v; want %v", b.ActorID, seqs, want)
			}
			if b.Failed != 1 {
				t.Errorf("block %s failed = %d; want 1", b.ActorID, b.Failed)
			}
		}
	}
}
