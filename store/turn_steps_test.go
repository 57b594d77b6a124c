package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// TestTurnSteps reads a turn's steps a few at a time: in seq order, past
// the last seq read, stopping once the budget is spent but always with at
// least one step, and only that turn's steps.
func TestTurnSteps(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	b["turns"] = arr{turn("a", "t1", 1), turn("a", "t2", 2)}
	in := func(seq int, tid, out string) obj {
		st := step("a", seq, "command")
		st["turn_id"] = tid
		st["payload"] = obj{"command": "cat", "stdout": out}
		return st
	}
	big := strings.Repeat("x", 1000)
	b["steps"] = arr{in(1, "a-t1", big), in(2, "a-t2", big), in(3, "a-t1", big), in(4, "a-t1", "small"), in(5, "a-t1", big)}
	mustApply(t, s, b)

	var pages [][]int64
	after := int64(-1)
	for {
		steps, err := s.TurnSteps(context.Background(), "a", "a-t1", after, 1500)
		if err != nil {
			t.Fatalf("TurnSteps(a-t1, after %d) = %v", after, err)
		}
		if len(steps) == 0 {
			break
		}
		var seqs []int64
		for _, st := range steps {
			seqs = append(seqs, st.Seq)
		}
		pages = append(pages, seqs)
		after = seqs[len(seqs)-1]
		if *steps[0].Payload.Stdout == "" {
			t.Errorf("TurnSteps cut step %d's output", steps[0].Seq)
		}
	}
	if want := [][]int64{{1, 3}, {4, 5}}; !reflect.DeepEqual(pages, want) {
		t.Errorf("TurnSteps pages of turn a-t1 = %v; want %v", pages, want)
	}
	if steps, err := s.TurnSteps(context.Background(), "a", "a-t1", -1, 1); err != nil || len(steps) != 1 {
		t.Errorf("TurnSteps with a budget smaller than a step = %d steps, %v; want 1", len(steps), err)
	}
	if _, err := s.TurnSteps(context.Background(), "nope", "a-t1", -1, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TurnSteps(nope) = %v; want ErrNotFound", err)
	}
	d, err := s.Detail(context.Background(), "a", store.DetailQuery{NoSteps: true})
	if err != nil || len(d.Steps) != 0 || len(d.Turns) != 2 || d.Summary.Steps != 5 {
		t.Errorf("Detail(NoSteps) = %d steps, %d turns, summary %d steps, %v; want 0, 2, 5", len(d.Steps), len(d.Turns), d.Summary.Steps, err)
	}
}
