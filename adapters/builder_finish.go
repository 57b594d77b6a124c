package adapters

import (
	"slices"
	"strings"
	"time"

	"github.com/agentreview/service/store"
)

// Finish completes the session: it fixes the start, gives every turn its
// mode, places the subagents, orders the steps and cuts the batches (see
// Builder for the rules). The session has no batches when it has no id or
// no step. The builder is not used after Finish.
func (b *Builder) Finish() *Session {
	b.sealPending()
	sess := b.sess
	b.Header.ID = boundedID(b.Header.ID)
	sess.ID = b.Header.ID
	if b.nsteps == 0 || sess.ID == "" {
		b.spill.Close()
		return sess
	}
	var stored Stored
	if b.stored != nil {
		var err error
		if stored, err = b.stored(sess.ID); err != nil {
			// Without what is stored, a write could undo it: write nothing
			// this time, and the problem has the files read again.
			b.Problem(Problem{Path: b.streams[0].path, Message: err.Error()})
			b.spill.Close()
			return sess
		}
	}
	start := b.Start()
	if start.IsZero() {
		start = TimeOf(b.modTime)
		if b.modTime.IsZero() {
			start = TimeOf(time.Unix(0, 0))
		}
	}
	b.ensureSegment()
	b.segments[0].at = start // the first segment starts with the session
	for _, g := range b.segments {
		if g.at.IsZero() {
			g.at = start
		}
	}
	b.finishTurns(start)
	for _, a := range b.actors {
		if a.first.IsZero() {
			a.first = start
		}
		b.place(a, 0)
	}
	b.calls = nil // the memory goes to the outlines next
	ordered := b.order(start)
	var steps []store.Step
	var outlines []*SpilledStep
	ids := map[string]bool{}
	rootSteps := 0
	for i, s := range ordered {
		actor := RootActor
		decision := ""
		if s.actor == nil {
			rootSteps++
		} else {
			actor = s.actor.ID
			if b.Decide != nil {
				decision = b.Decide(s)
			}
		}
		if path := b.streams[s.stream].path; path != "" {
			b.segments[s.seg].files[path] = true
		}
		b.spillStep(s) // a call that never got its result too
		if s.St == nil {
			if s.actor != nil || s.noTime {
				s.out.Place(s.turn.ID, int64(s.seg), s.At.Text, decision)
			}
			s.out.ID, s.out.Seq = uniqueID(ids, s.out.ID), int64(i+1)
			outlines = append(outlines, s.out)
			continue
		}
		s.St.ID, s.St.Seq = uniqueID(ids, s.St.ID), int64(i+1)
		s.St.At, s.St.TurnID, s.St.SegmentIndex, s.St.ActorID = s.At.Text, s.turn.ID, int64(s.seg), actor
		if decision != "" {
			s.St.Decision = decision
		}
		steps = append(steps, *s.St)
	}
	if b.spillErr != nil {
		b.Problem(Problem{Path: b.streams[0].path, Message: b.spillErr.Error()})
		b.spill.Close()
		return sess
	}
	ids = nil
	b.Header.StartedAt = start.Text
	r := Records{Header: b.Header, Segments: b.finishSegments(), Actors: b.finishActors(rootSteps == 0), Turns: b.finishTurnRecords(), Steps: steps, Usage: b.finishUsage(start)}
	var joinSpilled func(*store.Step)
	if b.Join != nil {
		joinSpilled = b.Join(&r, outlines, stored)
	}
	KeepStoredSeqs(func(yield func(id string, seq *int64) bool) {
		for i := range r.Steps {
			if !yield(r.Steps[i].ID, &r.Steps[i].Seq) {
				return
			}
		}
		for _, o := range outlines {
			if !yield(o.ID, &o.Seq) {
				return
			}
		}
	}, stored.Seqs)
	if b.spill != nil {
		sess.Batches, sess.Spilled = SplitSpilled(r, b.spill, outlines)
		sess.Spilled.Join = joinSpilled
	} else {
		sess.Batches = Split(r)
	}
	sess.Steps = len(r.Steps) + len(outlines)
	return sess
}

// finishTurns gives each turn its time and mode: ModeAt's when the agent
// recorded none, else the mode of the turn before (see Builder).
func (b *Builder) finishTurns(start Time) {
	if len(b.turns) == 0 {
		b.NewTurn("start", "", start) // a session of subagent steps only
	}
	mode := ""
	for _, t := range b.turns {
		if t.At.IsZero() {
			t.At = start
		}
		if t.Mode == "" && b.ModeAt != nil {
			t.Mode = b.ModeAt(t.At)
		}
		if t.Mode == "" {
			t.Mode = mode
		}
		t.Mode = boundedMode(t.Mode)
		mode = t.Mode
	}
}

// maxModeBytes is the longest turn mode kept whole (real ones are words:
// plan, act, acceptEdits, bypassPermissions): a turn without one carries
// the mode before it, so a long one recorded once would be stored once a
// turn.
const maxModeBytes = 256

// boundedMode is mode cut to maxModeBytes, at a character.
func boundedMode(mode string) string {
	if len(mode) <= maxModeBytes {
		return mode
	}
	return strings.ToValidUTF8(mode[:maxModeBytes], "")
}

// place puts a subagent under the call that spawned it: its steps join
// that call's turn and segment, and its parent is the call's actor.
// Without a known call, its steps join the turn and segment that were
// current when it started.
func (b *Builder) place(a *Actor, depth int) {
	if a.placed {
		return
	}
	a.placed = true
	a.Parent = RootActor
	sp := a.spawn
	switch {
	case sp != nil && sp.actor == nil:
		a.turn, a.seg = sp.turn, sp.seg
	case sp != nil && depth < 20:
		b.place(sp.actor, depth+1)
		a.Parent = sp.actor.ID
		a.turn, a.seg = sp.actor.turn, sp.actor.seg
	default:
		a.turn, a.seg = b.turnAt(a.first), b.segmentAt(a.first)
	}
	if a.turn == nil {
		a.turn = b.turnAt(a.first)
	}
	for _, s := range a.steps {
		s.turn, s.seg = a.turn, a.seg
	}
}

// turnAt is the last turn started at or before t, else the first.
func (b *Builder) turnAt(t Time) *Turn {
	found := b.turns[0]
	for _, tr := range b.turns {
		if tr.At.At.After(t.At) {
			break
		}
		found = tr
	}
	return found
}

// segmentAt is the last segment started at or before t, else the first.
func (b *Builder) segmentAt(t Time) int32 {
	var found int32
	for _, g := range b.segments {
		if g.at.At.After(t.At) {
			break
		}
		found = int32(g.Index)
	}
	return found
}

// order interleaves the streams by time (MergeByTime); steps with no time
// get the session's start.
func (b *Builder) order(start Time) []*Step {
	lists := make([][]*Step, len(b.streams))
	for i, s := range b.streams {
		for _, st := range s.steps {
			if st.noTime || (st.out == nil && st.At.IsZero()) {
				st.At = start
			}
		}
		lists[i] = s.steps
	}
	return MergeByTime(lists, func(s *Step) time.Time { return s.At.At })
}

// finishSegments are the segments' records: each ends where the next
// starts; its source files are the session's, then those of its steps.
func (b *Builder) finishSegments() []store.Segment {
	var out []store.Segment
	for i, g := range b.segments {
		g.StartedAt = g.at.Text
		if i+1 < len(b.segments) {
			g.EndedAt = b.segments[i+1].at.Text
		}
		files := slices.Clone(b.files)
		var own []string
		for f := range g.files {
			if !slices.Contains(files, f) {
				own = append(own, f)
			}
		}
		slices.Sort(own)
		g.SourceFiles = append(files, own...)
		if g.SourceFiles == nil {
			g.SourceFiles = []string{}
		}
		out = append(out, g.Segment)
	}
	return out
}

// finishActors are the root actor and every subagent that has steps,
// in the order they were first seen. In a session of subagent steps only
// (the main transcript is missing) the root actor is labelled so.
func (b *Builder) finishActors(subagentsOnly bool) []store.Actor {
	actors := []store.Actor{RootActorRecord()}
	if subagentsOnly {
		actors[0].Label = SubagentsOnlyLabel
	}
	for _, a := range b.actors {
		if len(a.steps) > 0 {
			actors = append(actors, store.Actor{ID: a.ID, ParentID: a.Parent, Type: "subagent", Label: a.Label})
		}
	}
	return actors
}

func (b *Builder) finishTurnRecords() []store.Turn {
	var out []store.Turn
	for _, t := range b.turns {
		t.StartedAt = t.At.Text
		out = append(out, t.Turn)
	}
	return out
}
