package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentreview/service/store"
)

// Records are a whole parsed session before it is cut into batches.
// Steps are in session order: Split numbers them 1, 2, 3, ...
type Records struct {
	Header   store.SessionHeader
	Segments []store.Segment
	Actors   []store.Actor
	Turns    []store.Turn
	Steps    []store.Step
	Usage    []store.UsageRecord
}

// Split numbers the steps that have no seq yet by their place, fills the fields every record of the session
// shares, and cuts the records into batches of at most store.MaxItems of
// each kind. Parents go first: every segment, then every actor (in the
// order given, so list a parent actor before its children), then every
// turn, then the steps, so each batch only points at records in itself or
// in an earlier batch. A repeated id keeps its first record; a repeated
// step id gets a suffix so no step is lost. Steps get their flags here
// (FlagStep, FlagDeadEnds), the one place every adapter goes through.
func Split(r Records) []*store.Batch {
	sid := r.Header.ID
	var out []*store.Batch
	cur := newBatch(r.Header)
	flush := func() {
		out = append(out, cur)
		cur = newBatch(r.Header)
	}
	full := func(n int) bool { return n >= store.MaxItems }

	seenSeg := map[int64]bool{}
	for _, g := range r.Segments {
		if seenSeg[g.Index] {
			continue
		}
		seenSeg[g.Index] = true
		if g.SourceFiles == nil {
			g.SourceFiles = []string{}
		}
		if full(len(cur.Segments)) {
			flush()
		}
		cur.Segments = append(cur.Segments, g)
	}
	seenActor := map[string]bool{}
	for _, a := range r.Actors {
		if seenActor[a.ID] {
			continue
		}
		seenActor[a.ID] = true
		if full(len(cur.Actors)) {
			flush()
		}
		cur.Actors = append(cur.Actors, a)
	}
	seenTurn := map[string]bool{}
	for _, t := range r.Turns {
		if seenTurn[t.ID] {
			continue
		}
		seenTurn[t.ID] = true
		t.SessionID = sid
		if t.StepIDs == nil {
			t.StepIDs = []string{}
		}
		if full(len(cur.Turns)) {
			flush()
		}
		cur.Turns = append(cur.Turns, t)
	}
	seenStep := map[string]bool{}
	steps := make([]store.Step, 0, len(r.Steps))
	for i, st := range r.Steps {
		st.ID = uniqueID(seenStep, st.ID)
		if st.Seq == 0 {
			st.Seq = int64(i + 1)
		}
		finishStep(&st, sid, r.Header.Workspace.Root)
		steps = append(steps, st)
	}
	FlagDeadEnds(steps)
	for _, st := range steps {
		if full(len(cur.Steps)) {
			flush()
		}
		cur.Steps = append(cur.Steps, st)
	}
	for _, u := range r.Usage {
		if full(len(cur.Usage)) {
			flush()
		}
		cur.Usage = append(cur.Usage, u)
	}
	out = append(out, cur)
	return out
}

// uniqueID is id, or id with a suffix when seen already holds it (a
// repeated step id, so that no step is lost); it adds the result to seen.
func uniqueID(seen map[string]bool, id string) string {
	base := id
	for n := 2; seen[id]; n++ {
		id = fmt.Sprintf("%s#%d", base, n)
	}
	seen[id] = true
	return id
}

// finishStep fills the fields every step of a session shares, makes a
// rejected step not_run (a refused call never ran, whoever reported the
// refusal), applies the exit code rule to a command (commandExit), and
// adds the flags a step earns on its own (FlagStep).
func finishStep(st *store.Step, sid, root string) {
	st.SessionID = sid
	if st.Decision == DecisionRejected {
		st.Outcome = OutcomeNotRun
	}
	commandExit(st)
	if st.Channels == nil {
		st.Channels = []string{}
	}
	if st.Flags == nil {
		st.Flags = []store.Flag{}
	}
	FlagStep(st, root)
}

// SplitSpilled is Split for a session whose steps are in a spill: its
// parents (and r.Steps, steps not in the spill such as those joined from
// telemetry, with provisional seqs) become batches as Split makes them,
// and its spilled steps, given in session order, numbered and with unique
// ids (Builder.Finish), are checked for dead ends from their outlines;
// their batches are built as the session is written (Session.Each).
func SplitSpilled(r Records, sp *Spill, steps []*SpilledStep) ([]*store.Batch, *Spilled) {
	batches := Split(r)
	flagSpilledDeadEnds(steps)
	return batches, &Spilled{spill: sp, root: r.Header.Workspace.Root, Steps: steps}
}

// maxSpilledBatch caps the encoded size of the steps of one batch built
// from a spill, so that a session of large steps is written in parts the
// size of an ingest request.
const maxSpilledBatch = 2 << 20

// Each calls fn with each of the session's batches in order: Batches, then
// those built from Spilled. It stops at the first error. The batches of a
// spilled session are built one ahead, while fn writes the one before.
func (s *Session) Each(fn func(*store.Batch) error) error {
	for _, b := range s.Batches {
		if err := fn(b); err != nil {
			return err
		}
	}
	sp := s.Spilled
	if sp == nil || len(sp.Steps) == 0 {
		return nil
	}
	if len(s.Batches) == 0 {
		return errors.New("spilled steps without their session's batches")
	}
	header := s.Batches[len(s.Batches)-1].Session
	built := make(chan *store.Batch, 1)
	stop := make(chan struct{})
	var buildErr error
	go func() {
		defer close(built)
		buildErr = sp.build(header, func(b *store.Batch) bool {
			select {
			case built <- b:
				return true
			case <-stop:
				return false
			}
		})
	}()
	for b := range built {
		if err := fn(b); err != nil {
			close(stop)
			for range built {
			}
			return err
		}
	}
	return buildErr
}

// build reads the spilled steps back, in order, into batches of at most
// store.MaxItems steps and maxSpilledBatch bytes, and passes each to yield
// until it returns false.
func (sp *Spilled) build(header store.SessionHeader, yield func(*store.Batch) bool) error {
	if len(sp.Steps) == 0 {
		yield(newBatch(header))
		return nil
	}
	for rest := sp.Steps; len(rest) > 0; {
		// Each batch's steps are allocated once at their number: grown by
		// append, they were a fifth of the bytes a large import allocates,
		// and the collector's work under the import's memory limit.
		n := spilledBatchLen(rest)
		cur := newBatch(header)
		cur.Steps = make([]store.Step, n)
		for i, o := range rest[:n] {
			st := &cur.Steps[i]
			var err error
			if *st, err = sp.spill.get(o.ref); err != nil {
				return err
			}
			o.restore(st)
			if sp.Join != nil {
				sp.Join(st)
			}
			finishStep(st, header.ID, sp.root)
			if o.later != nil {
				for _, f := range o.later.flags {
					addFlag(st, f)
				}
			}
		}
		if rest = rest[n:]; !yield(cur) {
			return nil
		}
	}
	return nil
}

// spilledBatchLen is how many of the steps (at least one) go in the next
// batch: at most store.MaxItems, and no more than maxSpilledBatch bytes of
// them unless the first alone is more.
func spilledBatchLen(steps []*SpilledStep) int {
	n, size := 0, 0
	for _, o := range steps {
		if n > 0 && (n >= store.MaxItems || size+int(o.ref.N) > maxSpilledBatch) {
			break
		}
		n++
		size += int(o.ref.N)
	}
	return n
}

// Close removes the session's spill, if it has one.
func (s *Session) Close() error {
	if s.Spilled == nil {
		return nil
	}
	return s.Spilled.spill.Close()
}

func newBatch(h store.SessionHeader) *store.Batch {
	return &store.Batch{SchemaVersion: store.SchemaVersion, Session: h}
}

// DecodeObject reads a record that should be a JSON object into v: a
// field of an unexpected type is left empty rather than losing the record;
// JSON that is no object, or no JSON, is an error saying which.
func DecodeObject(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typ) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")):
		return nil
	case json.Valid(b):
		return errors.New("not a JSON object")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return errors.New("invalid JSON")
}

// ReadRange is the lines a read of limit lines from the 0-based line
// offset covers, 1-based and inclusive, as a read step's range: nil unless
// both are given, offset from 0, limit from 1, and each under 2^40 (no file
// has more lines; a larger value is not a range the agent read).
func ReadRange(offset, limit *int64) *[2]int64 {
	if offset == nil || limit == nil || *offset < 0 || *limit < 1 || *offset >= 1<<40 || *limit >= 1<<40 {
		return nil
	}
	return &[2]int64{*offset + 1, *offset + *limit}
}

// Text returns a pointer to s, for the optional text fields of a payload.
func Text(s string) *string { return &s }

// Int returns a pointer to i.
func Int(i int64) *int64 { return &i }

// Bool returns a pointer to b.
func Bool(b bool) *bool { return &b }

// Raw encodes v as the JSON object of an other step's raw field; v must
// encode to an object.
func Raw(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return json.RawMessage(`{}`)
	}
	return b
}

// Present reports whether a decoded raw JSON value is there and not null,
// so it may be written to a field that must be omitted rather than null.
func Present(v json.RawMessage) bool {
	return len(v) > 0 && string(v) != "null"
}

// Time is an agent's timestamp: the text to write and its instant.
type Time struct {
	Text string
	At   time.Time
}

// IsZero reports whether no time is known.
func (t Time) IsZero() bool { return t.Text == "" }

// ParseTime reads an RFC 3339 timestamp. A value the store accepts is kept
// as written, so a re-import writes the same text; any other RFC 3339 form
// is rewritten in UTC. A value without a zone is not a time (ok false).
func ParseTime(s string) (Time, bool) {
	if at, ok := store.ParseTimestamp(s); ok {
		return Time{Text: s, At: at}, true
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Time{}, false
	}
	return TimeOf(at), true
}

// TimeOf writes an instant as an RFC 3339 timestamp in UTC. Years the
// format cannot hold are clamped.
func TimeOf(at time.Time) Time {
	at = at.UTC()
	if at.Year() < 1 {
		at = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	} else if at.Year() > 9999 {
		at = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	}
	return Time{Text: at.Format(time.RFC3339Nano), At: at}
}

// UnixMilli is a timestamp given in milliseconds since 1970, as Cline and
// several others write them.
func UnixMilli(ms int64) Time { return TimeOf(time.UnixMilli(ms)) }

// MergeByTime interleaves lists that are each in reading order into one,
// by time, keeping every list's own order (a list's times need not be
// sorted); a tie goes to the earlier list. Appending to any list leaves the
// merged order of earlier items as it was, unless the new items are older
// than items of other lists.
func MergeByTime[T any](lists [][]T, at func(T) time.Time) []T {
	var out []T
	heads := make([]int, len(lists))
	for {
		best := -1
		for i, l := range lists {
			if heads[i] >= len(l) {
				continue
			}
			if best < 0 || at(l[heads[i]]).Before(at(lists[best][heads[best]])) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, lists[best][heads[best]])
		heads[best]++
	}
}

// SegmentAt is the segment of a step of turn made at t, for a step added
// after the builder (telemetry): the last segment started at or before t,
// never one before the turn's. It keeps the builder's rule: a turn stays
// in the segment it started in, a step is in the one current at its time.
func (r *Records) SegmentAt(turn store.Turn, t Time) int64 {
	seg := turn.SegmentIndex
	for _, g := range r.Segments {
		if at, ok := store.ParseTimestamp(g.StartedAt); ok && g.Index > seg && !at.After(t.At) {
			seg = g.Index
		}
	}
	return seg
}
