package handlers

import (
	"context"
	"errors"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// segmentMarks places the timeline's segment dividers by one rule: a
// divider stands where a segment begins, before the first main-agent step
// in it, or before the header of the turn that started in it (the builder
// keeps a turn in the segment it started in, and each step in its own).
// A subagent's steps are in their spawning call's segment and mark none.
// The page, its fragments and the export all walk the turns through it.
type segmentMarks struct {
	segs map[int64]store.Segment
	cur  int64 // the segment the timeline is in so far
}

func newSegmentMarks(segs []store.Segment) *segmentMarks {
	m := &segmentMarks{segs: make(map[int64]store.Segment, len(segs))}
	for _, g := range segs {
		m.segs[g.Index] = g
	}
	return m
}

// turn is the divider before a turn's header, if its segment begins there.
func (m *segmentMarks) turn(t store.Turn) *views.SegmentDivider { return m.enter(t.SegmentIndex) }

// step is the divider before a step, if its segment begins there.
func (m *segmentMarks) step(v views.StepView) *views.SegmentDivider {
	if v.ActorType != "root" {
		return nil
	}
	return m.enter(v.Segment)
}

// enter moves the timeline into segment seg. Only a later segment begins:
// a step recorded out of order never draws a segment a second time.
func (m *segmentMarks) enter(seg int64) *views.SegmentDivider {
	if seg <= m.cur {
		return nil
	}
	m.cur = seg
	g := m.segs[seg]
	return &views.SegmentDivider{Index: seg, Reason: shorten(g.StartReason, lineChars), At: g.StartedAt}
}

// segmentsBefore is, for each turn of d that does not follow the turn
// before it in d (the first of a page, an earlier batch or a changed
// turn), the segment the timeline is in before it: that of the step
// before its first step. Turns in the first segment need no look-up.
func segmentsBefore(ctx context.Context, src interface {
	Detail(context.Context, string, store.DetailQuery) (store.SessionDetail, error)
}, d store.SessionDetail) (map[string]int64, error) {
	first := map[string]int64{}
	for _, s := range d.Steps {
		if f, ok := first[s.TurnID]; !ok || s.Seq < f {
			first[s.TurnID] = s.Seq
		}
	}
	out := map[string]int64{}
	for i, t := range d.Turns {
		seq, ok := first[t.ID]
		if t.SegmentIndex == 0 || !ok || seq <= 1 || (i > 0 && d.Turns[i-1].Index == t.Index-1) {
			continue
		}
		prev := seq - 1
		p, err := src.Detail(ctx, d.ID, store.DetailQuery{Seq: &prev, Head: 1})
		if errors.Is(err, store.ErrNotFound) || (err == nil && len(p.Steps) == 0) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[t.ID] = p.Steps[0].SegmentIndex
	}
	return out, nil
}
