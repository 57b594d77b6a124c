package adapters

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/agentreview/service/store"
)

// Spill holds finished steps of a session too large to keep in memory, in
// a temporary file that is already unlinked, so nothing is left behind
// whatever happens to the process (the file is private to it, mode 0600).
// A step is written once (Put) and read back when its batch is built
// (Get), in a compact encoding that keeps every field exactly. The file
// holds them encrypted (AES in counter mode) with a key made for the
// spill and kept only in memory: the blocks an unlinked file leaves on
// disk would otherwise keep the session's text after it is deleted from
// the store.
type Spill struct {
	f       *os.File
	key     cipher.Block
	nonce   [8]byte
	size    int64  // the bytes put, written or pending
	written int64  // the bytes in the file; pending follow them
	pending []byte // steps put but not yet written: one write per spillWrite bytes
	buf     []byte
}

// spillWrite is how many bytes of steps a spill gathers before it writes
// them: a write per step cost 6% of a large import.
const spillWrite = 256 << 10

// spillRef is where one step is in a spill.
type spillRef struct {
	Off int64
	N   int32
}

// NewSpill creates a spill in the system's temporary folder.
func NewSpill() (*Spill, error) {
	f, err := os.CreateTemp("", "service-import-*")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spill: %w", err)
	}
	s := &Spill{f: f}
	var key [16]byte
	rand.Read(key[:])
	rand.Read(s.nonce[:])
	s.key, _ = aes.NewCipher(key[:]) // a 16-byte key is always valid
	return s, nil
}

// crypt encrypts or decrypts b, the bytes of the file from off on, in
// place: counter mode, so any stretch is read alone.
func (s *Spill) crypt(b []byte, off int64) {
	var iv [aes.BlockSize]byte
	copy(iv[:], s.nonce[:])
	binary.BigEndian.PutUint64(iv[8:], uint64(off/aes.BlockSize))
	stream := cipher.NewCTR(s.key, iv[:])
	if skip := off % aes.BlockSize; skip > 0 {
		var pad [aes.BlockSize]byte
		stream.XORKeyStream(pad[:skip], pad[:skip])
	}
	stream.XORKeyStream(b, b)
}

// get reads a step back.
func (s *Spill) get(ref spillRef) (store.Step, error) {
	if err := s.flush(); err != nil {
		return store.Step{}, err
	}
	if cap(s.buf) < int(ref.N) {
		s.buf = make([]byte, ref.N)
	}
	b := s.buf[:ref.N]
	if _, err := s.f.ReadAt(b, ref.Off); err != nil && !(err == io.EOF && int64(len(b)) == s.size-ref.Off) {
		return store.Step{}, fmt.Errorf("spill: %w", err)
	}
	s.crypt(b, ref.Off)
	d := decoder{b: b}
	st := d.step()
	if d.err != nil || len(d.b) > 0 {
		return store.Step{}, errors.New("spill: corrupt step")
	}
	return st, nil
}

// Close removes the spill.
func (s *Spill) Close() error {
	if s == nil {
		return nil
	}
	return s.f.Close()
}

// appendStep encodes every field of a step but Cut, which is only ever
// set on reads from the store.
func appendStep(b []byte, st *store.Step) []byte {
	for _, s := range []string{st.ID, st.SessionID, st.TurnID, st.ActorID, st.At, st.Type, st.Decision, st.Outcome, st.ContentStatus} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, st.SegmentIndex)
	b = binary.AppendVarint(b, st.Seq)
	b = appendBool(b, st.Error != nil)
	if st.Error != nil {
		b = appendString(appendString(b, st.Error.Type), st.Error.Message)
	}
	b = appendBool(b, st.Channels != nil)
	b = binary.AppendUvarint(b, uint64(len(st.Channels)))
	for _, c := range st.Channels {
		b = appendString(b, c)
	}
	b = appendBool(b, st.Flags != nil)
	b = binary.AppendUvarint(b, uint64(len(st.Flags)))
	for _, f := range st.Flags {
		b = appendString(appendString(appendString(b, f.Kind), f.Severity), f.Reason)
	}
	p := &st.Payload
	for _, s := range []*string{p.Command, p.Stdout, p.Stderr, p.Cwd, p.OutputRef, p.OldString, p.NewString, p.Text, p.TextRef} {
		b = appendBool(b, s != nil)
		if s != nil {
			b = appendString(b, *s)
		}
	}
	for _, s := range []string{p.Path, p.Role, p.ToolName, string(p.StructuredPatch), string(p.Raw)} {
		b = appendString(b, s)
	}
	b = appendBool(b, p.StructuredPatch != nil)
	b = appendBool(b, p.Raw != nil)
	b = appendBool(b, p.ExitCode != nil)
	if p.ExitCode != nil {
		b = binary.AppendVarint(b, *p.ExitCode)
	}
	for _, v := range []*bool{p.IsFullWrite, p.LandedInFinalState} {
		b = appendBool(b, v != nil)
		if v != nil {
			b = appendBool(b, *v)
		}
	}
	b = appendBool(b, p.Range != nil)
	if p.Range != nil {
		b = binary.AppendVarint(binary.AppendVarint(b, p.Range[0]), p.Range[1])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// decoder reads what appendStep wrote; the first problem sticks in err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) step() store.Step {
	var st store.Step
	for _, s := range []*string{&st.ID, &st.SessionID, &st.TurnID, &st.ActorID, &st.At, &st.Type, &st.Decision, &st.Outcome, &st.ContentStatus} {
		*s = d.string()
	}
	st.SegmentIndex = d.varint()
	st.Seq = d.varint()
	if d.bool() {
		st.Error = &store.StepError{Type: d.string(), Message: d.string()}
	}
	if d.bool() {
		st.Channels = make([]string, 0, d.count())
	} else {
		d.count()
	}
	for range cap(st.Channels) {
		st.Channels = append(st.Channels, d.string())
	}
	if d.bool() {
		st.Flags = make([]store.Flag, 0, d.count())
	} else {
		d.count()
	}
	for range cap(st.Flags) {
		st.Flags = append(st.Flags, store.Flag{Kind: d.string(), Severity: d.string(), Reason: d.string()})
	}
	p := &st.Payload
	for _, s := range []**string{&p.Command, &p.Stdout, &p.Stderr, &p.Cwd, &p.OutputRef, &p.OldString, &p.NewString, &p.Text, &p.TextRef} {
		if d.bool() {
			v := d.string()
			*s = &v
		}
	}
	p.Path, p.Role, p.ToolName = d.string(), d.string(), d.string()
	patch, raw := d.string(), d.string()
	if d.bool() {
		p.StructuredPatch = []byte(patch)
	}
	if d.bool() {
		p.Raw = []byte(raw)
	}
	if d.bool() {
		v := d.varint()
		p.ExitCode = &v
	}
	for _, v := range []**bool{&p.IsFullWrite, &p.LandedInFinalState} {
		if d.bool() {
			x := d.bool()
			*v = &x
		}
	}
	if d.bool() {
		p.Range = &[2]int64{d.varint(), d.varint()}
	}
	return st
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("corrupt")
	}
	d.b = nil
}

func (d *decoder) count() int {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return int(n)
}

func (d *decoder) string() string {
	n := d.count()
	if n > len(d.b) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) varint() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) bool() bool {
	if len(d.b) == 0 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// Spilled are the steps of a session too large to keep in memory, in
// session order: each one in a spill, with an outline in memory. Their
// batches are built one at a time when the session is written
// (Session.Each), so a session of any size takes the memory of its
// outlines and one batch.
type Spilled struct {
	spill *Spill
	root  string
	Steps []*SpilledStep
	// Join, when set, is called with each step as its batch is built,
	// before its flags (Builder.Join's join of spilled steps).
	Join func(*store.Step)
}

// SpilledStep is the outline of a spilled step: what numbering, placing
// and joining it need, kept small since a long session has many.
type SpilledStep struct {
	ID  string
	Seq int64

	ref    spillRef
	change *change // an edit's change, for FlagDeadEnds
	later  *later  // what was learnt about it after it was spilled
}

// later holds what became known of a spilled step after it was written:
// where the parser placed it once the whole session was read, and its
// dead-end flag.
type later struct {
	placed             bool
	turnID, at, decide string
	segment            int64
	flags              []store.Flag
}

// Place records where a spilled step goes, when that was not known as it
// was spilled: its turn and segment, its time when not empty, and its
// decision when not empty.
func (o *SpilledStep) Place(turnID string, segment int64, at, decision string) {
	if o.later == nil {
		o.later = &later{}
	}
	o.later.placed, o.later.turnID, o.later.segment, o.later.at, o.later.decide = true, turnID, segment, at, decision
}

// restore gives a step read back from the spill what its outline knows.
func (o *SpilledStep) restore(st *store.Step) {
	st.ID, st.Seq = o.ID, o.Seq
	l := o.later
	if l == nil {
		return
	}
	if l.placed {
		st.TurnID, st.SegmentIndex = l.turnID, l.segment
		if l.at != "" {
			st.At = l.at
		}
		if l.decide != "" {
			st.Decision = l.decide
		}
	}
}

// Put writes a finished step and returns its outline; the step is no
// longer needed in memory after this. The step should be as complete as
// it can be: what changes later is given to the outline (Place).
func (s *Spill) Put(st *store.Step) (*SpilledStep, error) {
	start := len(s.pending)
	s.pending = appendStep(s.pending, st)
	n := len(s.pending) - start
	if n > math.MaxInt32 {
		s.pending = s.pending[:start]
		return nil, errors.New("spill: step larger than 2 GB")
	}
	out := &SpilledStep{ID: st.ID, ref: spillRef{Off: s.size, N: int32(n)}}
	if c := editChange(*st); c.path != "" {
		out.change = &c
	}
	s.size += int64(n)
	if len(s.pending) >= spillWrite {
		if err := s.flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// flush writes the pending steps.
func (s *Spill) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	s.crypt(s.pending, s.written)
	if _, err := s.f.WriteAt(s.pending, s.written); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.written += int64(len(s.pending))
	if cap(s.pending) > 2*spillWrite {
		s.pending = nil // a large step's buffer is not kept
	} else {
		s.pending = s.pending[:0]
	}
	return nil
}

// flagSpilledDeadEnds is FlagDeadEnds over the outlines of spilled steps,
// which keep their edits' changes as keys.
func flagSpilledDeadEnds(steps []*SpilledStep) {
	var changes []change
	var edits []*SpilledStep // the step of each change
	for _, o := range steps {
		if o.change != nil {
			changes, edits = append(changes, *o.change), append(edits, o)
		}
	}
	deadEnds(changes, func(k int) int64 { return edits[k].Seq }, func(k int, f store.Flag) {
		o := edits[k]
		if o.later == nil {
			o.later = &later{}
		}
		o.later.flags = append(o.later.flags, f)
	})
}
