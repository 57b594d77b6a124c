package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/agentreview/service/store"
)

// RootActor is the id of the actor every session has: the agent the user
// talks to. Subagents are actors under it (Builder.Subagent).
const RootActor = "root"

// RootActorRecord is the record of the root actor, the first of every
// session's actors.
func RootActorRecord() store.Actor { return store.Actor{ID: RootActor, Type: "root", Label: "main"} }

// SubagentsOnlyLabel is the root actor's label in a session whose main
// transcript is missing: only its subagents' steps were found.
const SubagentsOnlyLabel = "main (transcript missing: subagents only)"

// Builder builds one session from an agent's records. An adapter reads its
// agent's files and tells the builder what it found; the builder owns the
// bookkeeping every agent shares, so each rule below is written once:
//
//   - segments: the first starts with the session (at its start time,
//     reason "start"); NewSegment starts the next, which ends the one
//     before. A segment's source files are the session's files (Files)
//     and the files of the streams its steps came from. A segment that
//     starts inside a turn (a compaction mid-turn) does not move the turn:
//     a turn belongs to the segment it started in, and each root step
//     keeps the segment current when it was added, so a turn's steps may
//     span segments (the timeline draws a divider where one begins).
//   - turns: NewTurn opens a turn of the root actor in the current
//     segment; a root step before any turn opens one named for it. A turn
//     the agent recorded no mode for takes ModeAt's, else the mode of the
//     turn before it: every agent we read keeps its mode (permission,
//     plan/act, collaboration) until the user changes it and writes it
//     where it is set, not on every turn.
//   - actors: the root actor, and the subagents (Subagent). A subagent's
//     steps join the turn and segment of the call that spawned it
//     (Actor.SpawnedBy), else those current when its first step happened.
//   - steps: added to a Stream (a file or a conversation, read in order);
//     Finish interleaves the streams by time, keeping each stream's order,
//     and numbers them 1, 2, 3, ... (seq), so a re-read of files that only
//     grew keeps every earlier number; where the store holds the session
//     with other numbers (Unit.Stored), stored steps keep theirs
//     (KeepStoredSeqs). A repeated step id gets a suffix. Every step is
//     inline content on the builder's channels.
//   - tool calls: Call registers a call's steps under its id; Result finds
//     them when its result arrives (once: a repeated result finds none);
//     Await makes a completed call wait for a later result (a background
//     command's completion), which may rewrite it.
//   - timestamps: the session starts at SetStart's time, else the earliest
//     time Observe saw, else the files' modification time, else 1970. A
//     step, turn or segment with no time gets the session's start.
//   - outcomes: a rejected call did not run (Reject; Split makes every
//     rejected step not_run, whoever set the decision: the agent's files
//     or its telemetry).
//   - flags: FlagStep and FlagDeadEnds, applied by Split to every step.
//   - modes: a turn's mode is kept up to maxModeBytes, since turns without
//     one carry it.
//   - ids: a session's, turn's or subagent's id, copied into each of its
//     steps and usage records, is kept as written up to maxIDBytes;
//     longer, it is cut and a hash of the whole added (boundedID).
//   - folders: a working folder an agent records once, for a turn or the
//     session, goes into each command step that ran in it (Payload.Cwd)
//     and before each relative path a step names (Folder): all of these
//     copies of a session stay within twice what was read of its files
//     (Read) and folderSlack, so a file of many short steps in a long
//     folder cannot store many times its size. Past that a step records
//     no folder and a relative path stays as the agent wrote it.
//
// How an adapter uses it:
//
//  1. b := NewBuilder(unit, channels...); set b.Header's agent, workspace,
//     source (and ended_at, metrics) as they become known; Files for the
//     files that make no steps of their own; SetStart or Observe for times.
//  2. For each file or conversation, s := b.Stream(path); for each record,
//     in order: NewTurn for a prompt, s.Message or s.Add for a step,
//     s.Add then b.Call(id, step) for a tool call and b.Result(id) when
//     its result comes, NewSegment at a compaction, clear or resume,
//     Subagent and Actor.SpawnedBy for subagents, Skip and Problem for
//     what makes no step.
//  3. Optionally set ModeAt, Decide or Join (see their fields), then
//     return b.Finish(): it places subagents, orders and numbers the
//     steps, joins what is stored and cuts the batches. The session has no
//     batches when it has no id or no step.
//
// Memory: with EnableSpill, past a number of bytes read (Read), each
// finished step (not a call still waiting for its result, and not the last
// of its stream, which an adapter may still complete) goes to a Spill and
// only its outline stays, so a session of any size is built in bounded
// memory. A step is the adapter's to change until the next step of its
// stream is added, or, for a call, until its result's steps are completed
// and the adapter calls the builder again.
type Builder struct {
	// Header is the session's header, its id the unit's (set it from the
	// files when that is empty); Finish sets started_at.
	Header store.SessionHeader
	// ModeAt, when set, is the mode of a turn the agent recorded none for,
	// by the turn's time, before the mode of the turn before is carried.
	ModeAt func(Time) string
	// Decide, when set, is called for each subagent step once it is placed
	// (its turn known); a non-empty result replaces the step's decision.
	Decide func(*Step) string
	// Join, when set, joins what the store keeps beside the session
	// (Stored: the unit's lookup) with its records once they are numbered,
	// before their seqs are reconciled with the stored ones and they are
	// split: it may change steps and the header, and add steps that hold
	// a provisional seq (ProvisionalSeq and above). spilled are the
	// outlines of the steps in a spill; the function it returns, when not
	// nil, joins each of them as its batch is built.
	Join func(r *Records, spilled []*SpilledStep, stored Stored) func(*store.Step)

	sess     *Session
	modTime  time.Time
	stored   func(sid string) (Stored, error)
	channels []string
	start    Time
	earliest Time
	files    []string

	segments []*segment
	turns    []*Turn
	turn     *Turn
	actors   []*Actor
	byActor  map[string]*Actor
	streams  []*Stream
	calls    map[string][]*Step
	nsteps   int
	folders  int // bytes of folders copied into steps (Folder)

	spillOn    bool
	spillAfter int
	read       int
	spill      *Spill
	noSpill    bool
	spillErr   error
	toSeal     []*Step

	usage usageList
}

// Turn is a turn of the root actor. Its Mode may be set by the adapter
// until Finish.
type Turn struct {
	store.Turn
	At Time
}

// Actor is a subagent of the session.
type Actor struct {
	ID     string
	Parent string // set by Finish: the actor of the spawning call, or root
	Label  string
	spawn  *Step
	first  Time
	steps  []*Step
	placed bool
	turn   *Turn
	seg    int32
}

// Stream is a file or conversation whose steps are in reading order.
type Stream struct {
	b     *Builder
	idx   int32
	path  string
	steps []*Step
}

// Step is a step being built. St is the adapter's to fill until the step
// is finished (see Builder); it is nil once the step is spilled.
type Step struct {
	St *store.Step
	// At is its time; zero means the session's start.
	At Time
	// Call is the adapter's own data of a tool call, for its result.
	Call any

	actor  *Actor // nil for the root actor
	turn   *Turn
	seg    int32
	stream int32
	isCall bool
	done   bool
	out    *SpilledStep
	noTime bool
}

type segment struct {
	store.Segment
	at    Time
	steps int
	files map[string]bool
}

// NewBuilder starts a session: its id is the unit's (Header.ID may be set
// later when the files name it), and its steps carry channels.
func NewBuilder(u Unit, channels ...string) *Builder {
	return &Builder{
		Header:   store.SessionHeader{ID: u.ID},
		sess:     &Session{ID: u.ID, Skipped: map[string]int{}},
		modTime:  u.ModTime,
		stored:   u.Stored,
		channels: channels,
		byActor:  map[string]*Actor{},
		calls:    map[string][]*Step{},
	}
}

// Session is the session being built, for the adapter's own fields
// (Incomplete, Usage); Finish fills the rest.
func (b *Builder) Session() *Session { return b.sess }

// Skip counts a record that makes no step, by kind.
func (b *Builder) Skip(kind string) { b.sess.Skipped[kind]++ }

// Problem reports a line or file that could not be read.
func (b *Builder) Problem(p ...Problem) { b.sess.Problems = append(b.sess.Problems, p...) }

// BadLine records line n of the file at path, which could not be read: a
// last line without its newline is one the agent is still writing, so
// the file is Incomplete (and read again once the line is whole); any
// other is a Problem with message.
func (b *Builder) BadLine(path string, n int, terminated bool, message string) {
	if !terminated {
		b.sess.Incomplete = append(b.sess.Incomplete, path)
		return
	}
	b.Problem(Problem{Path: path, Line: n, Message: message})
}

// Files adds files every segment lists as its source (files read for the
// whole session), in the order given.
func (b *Builder) Files(paths ...string) {
	for _, p := range paths {
		if p != "" && !slices.Contains(b.files, p) {
			b.files = append(b.files, p)
		}
	}
}

// SetStart sets the session's start.
func (b *Builder) SetStart(t Time) { b.start = t }

// Start is the session's start as known so far: SetStart's, else the
// earliest time observed; zero when neither is known yet.
func (b *Builder) Start() Time {
	if !b.start.IsZero() {
		return b.start
	}
	return b.earliest
}

// Observe notes a time the agent recorded, for the session's start.
func (b *Builder) Observe(t Time) {
	if !t.IsZero() && (b.earliest.IsZero() || t.At.Before(b.earliest.At)) {
		b.earliest = t
	}
}

// NewSegment starts a segment at a compaction, a clear or a resume.
func (b *Builder) NewSegment(reason string, at Time) {
	b.ensureSegment()
	b.segments = append(b.segments, &segment{Segment: store.Segment{Index: int64(len(b.segments)), StartReason: reason}, at: at, files: map[string]bool{}})
}

// SegmentSteps is the number of steps in the current segment so far.
func (b *Builder) SegmentSteps() int {
	if len(b.segments) == 0 {
		return 0
	}
	return b.segments[len(b.segments)-1].steps
}

// Steps is the number of steps added so far.
func (b *Builder) Steps() int { return b.nsteps }

// SetStartReason changes why the first segment started (a session that
// opens with a clear, say), only while the session has no root step; it
// reports whether it did.
func (b *Builder) SetStartReason(reason string) bool {
	b.ensureSegment()
	for _, g := range b.segments {
		if g.steps > 0 {
			return false
		}
	}
	b.segments[0].StartReason = reason
	return true
}

// SegmentFile lists a file as a source of the current segment only: a
// file that started it without a step in it yet, or one of many files
// each of which holds records of one segment (opencode's message files),
// which Files would list in every segment.
func (b *Builder) SegmentFile(path string) {
	if path != "" {
		b.current().files[path] = true
	}
}

func (b *Builder) ensureSegment() {
	if len(b.segments) == 0 {
		b.segments = append(b.segments, &segment{Segment: store.Segment{StartReason: "start"}, files: map[string]bool{}})
	}
}

func (b *Builder) current() *segment {
	b.ensureSegment()
	return b.segments[len(b.segments)-1]
}

// NewTurn opens a turn of the root actor, with the id "turn-"+id
// (boundedID), in the current segment; mode is the one the agent recorded
// for it, or "".
func (b *Builder) NewTurn(id, mode string, at Time) *Turn {
	t := &Turn{Turn: store.Turn{
		ID: "turn-" + boundedID(id), SegmentIndex: b.current().Index, ActorID: RootActor,
		Index: int64(len(b.turns) + 1), Mode: mode,
	}, At: at}
	b.turns = append(b.turns, t)
	b.turn = t
	return t
}

// Turn is the current turn, nil before the first.
func (b *Builder) Turn() *Turn { return b.turn }

// Subagent returns the subagent actor with this id, adding it the first
// time; the actor's ID is boundedID(id).
func (b *Builder) Subagent(id string) *Actor {
	if a := b.byActor[id]; a != nil {
		return a
	}
	a := &Actor{ID: boundedID(id)}
	b.byActor[id] = a
	b.actors = append(b.actors, a)
	return a
}

// SpawnedBy names the call that started the subagent: its steps join that
// call's turn, and it is an actor under the call's actor.
func (a *Actor) SpawnedBy(s *Step) {
	if s != nil && s.actor != a {
		a.spawn = s
	}
}

// Stream starts a stream of steps read in order from path (a file, or a
// conversation in one).
func (b *Builder) Stream(path string) *Stream {
	s := &Stream{b: b, idx: int32(len(b.streams)), path: path}
	b.streams = append(b.streams, s)
	return s
}

// Last is the stream's last step, nil when it has none.
func (s *Stream) Last() *Step {
	if len(s.steps) == 0 {
		return nil
	}
	return s.steps[len(s.steps)-1]
}

// Add adds a step of actor a (nil for the root actor) at a time: a root
// step to the current turn and segment, a subagent's where Finish places
// it. The step's content status and channels are set here.
func (s *Stream) Add(a *Actor, st store.Step, at Time) *Step {
	b := s.b
	b.sealPending()
	if last := s.Last(); last != nil {
		b.seal(last) // no adapter changes a step once the next one is added
	}
	st.ContentStatus = store.ContentInline
	st.Channels = b.channels
	if cwd := st.Payload.Cwd; cwd != nil && *cwd != "" && b.Folder(*cwd) == "" {
		st.Payload.Cwd = nil
	}
	step := &Step{St: &st, At: at, stream: s.idx, actor: a}
	if a == nil {
		if b.turn == nil {
			b.NewTurn(st.ID, "", at)
		}
		g := b.current()
		step.turn, step.seg = b.turn, int32(g.Index)
		g.steps++
		if s.path != "" {
			g.files[s.path] = true
		}
	} else {
		if a.first.IsZero() {
			a.first = at
		}
		a.steps = append(a.steps, step)
	}
	s.steps = append(s.steps, step)
	b.nsteps++
	return step
}

// maxIDBytes is the longest id of a session, turn or subagent the
// builder keeps as the agent wrote it (real ones are uuids and the like,
// under 100 bytes): each is copied into every step and usage record of
// its own, so a long one in a hostile file, once, would be stored once a
// step.
const maxIDBytes = 256

// boundedID is id when it is at most maxIDBytes long, else its first 64
// bytes (cut at a character) and a hash of the whole: the same id for the
// same files, so a session read again is the same session.
func boundedID(id string) string {
	if len(id) <= maxIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return strings.ToValidUTF8(id[:64], "") + "~" + hex.EncodeToString(sum[:12])
}

// folderSlack is the bytes of folders a session's steps may copy beyond
// twice what was read of its files (Folder): 64 KiB, so that no session
// of real files loses one (a 100-byte folder in 650 steps of no output).
const folderSlack = 64 << 10

// Folder counts one more copy of the working folder cwd into a step (its
// Payload.Cwd, which Add counts, or a relative path made absolute against
// it) and returns cwd, or "" when the copies of the session's folders
// would pass twice the bytes read (Read) and folderSlack: a folder
// recorded once and copied into each of many short steps would make a
// file's steps many times its size.
func (b *Builder) Folder(cwd string) string {
	if b.folders+len(cwd) > 2*b.read+folderSlack {
		return ""
	}
	b.folders += len(cwd)
	return cwd
}

// Message adds a message step.
func (s *Stream) Message(a *Actor, id, role, text string, at Time) *Step {
	return s.Add(a, store.Step{
		ID: id, Type: store.TypeMessage, Decision: DecisionNone, Outcome: OutcomeOK,
		Payload: store.Payload{Role: role, Text: Text(text)},
	}, at)
}

// Call registers steps (added already) as those of the tool call id, for
// its result. A call made of several steps (a patch of several files) is
// completed together.
func (b *Builder) Call(id string, steps ...*Step) {
	for _, s := range steps {
		s.isCall = true
	}
	b.calls[id] = append(b.calls[id], steps...)
}

// Await makes a call whose result came wait for a later one under id (a
// command sent to the background, completed by a notification): the step
// stays the adapter's, unspilled, until Result(id) hands it back.
func (b *Builder) Await(id string, s *Step) {
	s.isCall, s.done = true, false
	b.calls[id] = append(b.calls[id], s)
}

// Called reports whether a call with this id was registered.
func (b *Builder) Called(id string) bool { return len(b.calls[id]) > 0 }

// CallSteps are the steps of call id, whether or not its result came.
func (b *Builder) CallSteps(id string) []*Step { return b.calls[id] }

// Result returns the steps of call id that wait for a result, marking them
// done, for the adapter to complete now. known is false when no call has
// this id; steps is empty when its result came already.
func (b *Builder) Result(id string) (steps []*Step, known bool) {
	b.sealPending()
	all := b.calls[id]
	waiting := 0
	for _, s := range all {
		if !s.done {
			waiting++
		}
	}
	if waiting == len(all) {
		steps = all // the usual case, without a copy
	}
	for _, s := range all {
		if !s.done {
			s.done = true
			if waiting < len(all) {
				steps = append(steps, s)
			}
			b.toSeal = append(b.toSeal, s)
		}
	}
	return steps, len(all) > 0
}

// Done reports whether the step is complete: not a call, or a call whose
// result came.
func (s *Step) Done() bool { return !s.isCall || s.done }

// Turn is the turn the step is in: for a subagent's step, nil until
// Finish places it.
func (s *Step) Turn() *Turn { return s.turn }

// Actor is the subagent whose step this is, nil for the root actor.
func (s *Step) Actor() *Actor { return s.actor }

// Reject marks a step as a call that was refused before it ran.
func Reject(st *store.Step, message string) {
	st.Decision, st.Outcome = DecisionRejected, OutcomeNotRun
	st.Error = &store.StepError{Type: "rejected", Message: message}
}

// Fail marks a step as failed with an error of type typ: a request to the
// model that failed is a message step failed with "api_error" (or the
// agent's own type of it), in every adapter that records one.
func Fail(st *store.Step, typ, message string) {
	st.Outcome = OutcomeFailed
	st.Error = &store.StepError{Type: typ, Message: message}
}
