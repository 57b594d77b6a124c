package store

import "slices"

// StepGap is the steps of a turn that a read left out (DetailQuery.Steps):
// Steps of them, between the turn's first step, seq After, which the read
// kept, and seq Before, the first of the steps it kept after them.
type StepGap struct {
	TurnID string `json:"turn_id"`
	After  int64  `json:"after"`
	Before int64  `json:"before"`
	Steps  int    `json:"steps"`
}

// Windowed reports whether q reads only a window of each turn's steps
// (DetailQuery.Steps).
func (q DetailQuery) Windowed() bool { return q.Steps > 0 && q.Seq == nil && !q.NoSteps }

// StepWindow is what a windowed read of q keeps of the steps of turns
// (in turn order), given each turn's steps' seqs before q.StepsBefore in
// seq order: every step of a turn of up to q.Steps+1 of them; of a longer
// turn its first step and its last q.Steps, or, when one of q.From is a
// step of it, its first step and every step from that one on. The steps
// kept are in seq order; gaps are in turn order.
func (q DetailQuery) StepWindow(turns []Turn, seqs map[string][]int64) (keep []int64, gaps []StepGap) {
	anchors := make(map[int64]bool, len(q.From))
	for _, seq := range q.From {
		anchors[seq] = true
	}
	for _, t := range turns {
		s := seqs[t.ID]
		from := len(s) - q.Steps
		if len(anchors) > 0 {
			if i := slices.IndexFunc(s, func(seq int64) bool { return anchors[seq] }); i >= 0 {
				from = i
			}
		}
		if from <= 1 {
			keep = append(keep, s...)
			continue
		}
		keep = append(keep, s[0])
		keep = append(keep, s[from:]...)
		gaps = append(gaps, StepGap{TurnID: t.ID, After: s[0], Before: s[from], Steps: from - 1})
	}
	slices.Sort(keep) // turns may interleave (a subagent's)
	return keep, gaps
}
