package views

import (
	"strconv"
	"time"
)

// SubagentBlock is one subagent's steps within a turn, shown nested under
// the step that spawned it.
type SubagentBlock struct {
	ActorID string
	Label   string // its kind; "compaction summariser" for the compactor
	Task    string // the description its spawning call gave, if any
	Steps   []StepView
	Failed  int
	Span    string // from its first step to its last
	First   string // RFC 3339 of its first step
}

// TimelineItem is a top-level step of a turn with the subagent blocks it
// spawned.
type TimelineItem struct {
	Step   StepView
	Blocks []*SubagentBlock
}

// ActorOption is an actor the session page's filter can show alone.
type ActorOption struct {
	ID, Label string
}

// spawnTools are the tool names whose call starts a subagent.
var spawnTools = map[string]bool{"Task": true, "Agent": true, "task": true, "agent": true}

// Timeline is the turn's steps as the page shows them: the main agent's
// steps in order, each subagent's steps in one block after the step that
// spawned it. The spawning step is derived here, not stored: the builder
// puts a subagent's steps in its spawning call's turn after that call, so
// it is the nearest earlier spawn call (Task, Agent) not yet claimed by
// another block, one of the subagent's kind first; else the nearest
// earlier top-level step. A block with neither comes first (lead).
func (t TurnView) Timeline() (lead []*SubagentBlock, items []TimelineItem) {
	blocks := map[string]*SubagentBlock{}
	claimed := map[int]bool{}
	for _, s := range t.Steps {
		if s.ActorType != "subagent" {
			items = append(items, TimelineItem{Step: s})
			continue
		}
		b := blocks[s.ActorID]
		if b == nil {
			b = &SubagentBlock{ActorID: s.ActorID, Label: s.ActorLabel, First: s.At}
			blocks[s.ActorID] = b
			at := spawnOf(items, claimed, s.ActorLabel)
			if at < 0 {
				lead = append(lead, b)
			} else {
				claimed[at] = true
				b.Task = items[at].Step.SpawnDesc
				items[at].Blocks = append(items[at].Blocks, b)
			}
		}
		b.Steps = append(b.Steps, s)
		if s.StatusClass == "failed" {
			b.Failed++
		}
	}
	for _, b := range blocks {
		first, _ := time.Parse(time.RFC3339Nano, b.First)
		last, _ := time.Parse(time.RFC3339Nano, b.Steps[len(b.Steps)-1].At)
		if !first.IsZero() && !last.IsZero() && !last.Before(first) {
			b.Span = Duration(last.Sub(first))
		}
	}
	return lead, items
}

// spawnOf is the index in items of the step that spawned a subagent of
// this kind, or -1 when no step comes before it.
func spawnOf(items []TimelineItem, claimed map[int]bool, kind string) int {
	latest := -1
	for i := len(items) - 1; i >= 0; i-- {
		st := items[i].Step
		if !spawnTools[st.ToolName] || claimed[i] {
			continue
		}
		if kind != "" && st.SpawnKind == kind {
			return i
		}
		if latest < 0 {
			latest = i
		}
	}
	if latest < 0 {
		return len(items) - 1
	}
	return latest
}

// SegmentDivider marks where a segment of the session begins in the
// timeline: after a compaction, a clear or a resume.
type SegmentDivider struct {
	Index  int64  // the segment's index, from 0
	Reason string // why it started: compaction, clear, resume, ...
	At     string // RFC 3339
}

// Title says what started the segment.
func (d SegmentDivider) Title() string {
	switch d.Reason {
	case "compaction":
		return "Context compacted"
	case "clear":
		return "Context cleared"
	case "resume":
		return "Session resumed"
	case "turn_aborted":
		return "After an aborted turn"
	case "":
		return "New segment"
	}
	return "New segment (" + d.Reason + ")"
}

// Begins is "segment 2 begins": segments are counted from 1 for readers.
func (d SegmentDivider) Begins() string {
	return "segment " + strconv.FormatInt(d.Index+1, 10) + " begins"
}
