package store

import (
	"math"
	"slices"
)

// StepGap is the steps of a turn that a read left out (DetailQuery.Steps):
// Steps of them, between seq After, the step the read kept before them
// (or DetailQuery.StepsAfter), and seq Before, the step it kept after them.
// First is the seq of the first of them and FirstAt its time: the step
// before the gap took until then.
type StepGap struct {
	TurnID  string `json:"turn_id"`
	After   int64  `json:"after"`
	Before  int64  `json:"before"`
	Steps   int    `json:"steps"`
	First   int64  `json:"first"`
	FirstAt string `json:"first_at"`
}

// GapFirsts are the seqs of the first steps gaps left out, whose times a
// read gives them (StepGap.FirstAt) by SetFirstAt.
func GapFirsts(gaps []StepGap) []int64 {
	out := make([]int64, len(gaps))
	for i, g := range gaps {
		out[i] = g.First
	}
	return out
}

// SetFirstAt gives each gap the time of its first step, by seq.
func SetFirstAt(gaps []StepGap, at map[int64]string) {
	for i := range gaps {
		gaps[i].FirstAt = at[gaps[i].First]
	}
}

// AroundSteps are the steps a windowed read keeps either side of the step
// of DetailQuery.Around.
const AroundSteps = 50

// SeqBounds are the seqs a windowed read's steps lie strictly between:
// q.StepsAfter, or below any seq (seqs are not negative), and
// q.StepsBefore, or above any.
func (q DetailQuery) SeqBounds() (after, before int64) {
	after, before = -1, q.StepsBefore
	if q.StepsAfter != nil {
		after = *q.StepsAfter
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	return after, before
}

// Windowed reports whether q reads only a window of each turn's steps
// (DetailQuery.Steps).
func (q DetailQuery) Windowed() bool { return q.Steps > 0 && q.Seq == nil && !q.NoSteps }

// StepWindow is what a windowed read of q keeps of the steps of turns
// (in turn order), given the seqs of each turn's steps between
// q.StepsAfter and q.StepsBefore (sorted here if they are not): its first step (unless the
// read starts after q.StepsAfter), its last q.Steps or, when one of q.From
// is a step of it, every step from that one on, and the AroundSteps either
// side of q.Around. The steps kept are in seq order; gaps, the runs of
// steps between those kept, in turn order and then seq order.
func (q DetailQuery) StepWindow(turns []Turn, seqs map[string][]int64) (keep []int64, gaps []StepGap) {
	anchors := make(map[int64]bool, len(q.From))
	for _, seq := range q.From {
		anchors[seq] = true
	}
	for _, t := range turns {
		s := seqs[t.ID]
		if !slices.IsSorted(s) { // an index's order gives them sorted: a pass
			slices.Sort(s)
		}
		kept := make([]bool, len(s))
		from := len(s) - q.Steps
		if len(anchors) > 0 {
			if i := slices.IndexFunc(s, func(seq int64) bool { return anchors[seq] }); i >= 0 {
				from = i
			}
		}
		for i := max(0, from); i < len(s); i++ {
			kept[i] = true
		}
		if q.StepsAfter == nil && len(s) > 0 {
			kept[0] = true // the turn's first step: its prompt
		}
		if i := slices.Index(s, q.Around); q.Around > 0 && i >= 0 {
			for j := max(0, i-AroundSteps); j <= min(len(s)-1, i+AroundSteps); j++ {
				kept[j] = true
			}
		}
		after, _ := q.SeqBounds()
		for i := 0; i < len(s); {
			if kept[i] {
				keep, after = append(keep, s[i]), s[i]
				i++
				continue
			}
			j := i + 1
			for j < len(s) && !kept[j] {
				j++
			}
			// j < len(s): the turn's last step is always kept (q.Steps > 0).
			gaps = append(gaps, StepGap{TurnID: t.ID, After: after, Before: s[j], Steps: j - i, First: s[i]})
			i = j
		}
	}
	slices.Sort(keep) // turns may interleave (a subagent's)
	return keep, gaps
}
