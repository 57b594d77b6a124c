package adapters

// EnableSpill makes the builder spill finished steps once more than after
// bytes were read (Read), or more than spillSteps steps were added, so a
// session of any size is built in the memory of its steps' outlines. 0
// spills from the first byte.
func (b *Builder) EnableSpill(after int) {
	b.spillAfter = after
	b.noSpill = false
	b.spillOn = true
}

// SpillAfter is how many bytes of an agent's files a session is read with
// its steps in memory, for the adapters that spill (EnableSpill); past it,
// each step goes to a spill once finished, so files of any size take the
// memory of their steps' outlines. Tests set it to 0 to spill every
// session.
var SpillAfter = 32 << 20

// spillSteps is how many steps a builder holds in memory however few bytes
// it has read: a step in memory takes about 1.4 KB even when its line was
// 100 bytes, so 80,000 one-line prompts (a 22 MB transcript, below
// EnableSpill's 32 MB) held 207 MB, and the import's collector ran
// without pause under its memory limit (docs/performance.md, "Many small
// steps").
const spillSteps = 10_000

// Read counts n bytes of the agent's files read, and starts spilling past
// EnableSpill's limit or spillSteps steps, with every step finished so
// far. A spill that cannot be made leaves the steps in memory.
func (b *Builder) Read(n int) {
	b.read += n
	if !b.spillOn || b.spill != nil || b.noSpill || b.read <= b.spillAfter && b.nsteps <= spillSteps {
		return
	}
	sp, err := NewSpill()
	if err != nil {
		b.noSpill = true
		return
	}
	b.spill = sp
	for _, s := range b.streams {
		for i, st := range s.steps {
			if i < len(s.steps)-1 {
				b.seal(st)
			}
		}
	}
}

// seal moves a finished step to the spill, when there is one; a call
// still waiting for its result stays.
func (b *Builder) seal(s *Step) {
	if s.Done() {
		b.spillStep(s)
	}
}

// sealPending seals the calls whose results were given out since the last
// call to the builder (the adapter has completed them since), unless one
// is still the last step of its stream.
func (b *Builder) sealPending() {
	for _, s := range b.toSeal {
		if b.streams[s.stream].Last() != s {
			b.seal(s)
		}
	}
	b.toSeal = b.toSeal[:0]
}

// spillStep moves a step to the spill, when there is one, with what is
// known of its place: its time and actor, and a root step's turn and
// segment (a subagent's are known once the session is read).
func (b *Builder) spillStep(s *Step) {
	if b.spill == nil || s.St == nil {
		return
	}
	s.St.At, s.St.ActorID, s.noTime = s.At.Text, RootActor, s.At.IsZero()
	if s.actor != nil {
		s.St.ActorID = s.actor.ID
	} else {
		s.St.TurnID, s.St.SegmentIndex = s.turn.ID, int64(s.seg)
	}
	out, err := b.spill.Put(s.St)
	if err != nil {
		b.spillErr = err
		return
	}
	s.St, s.out, s.At.Text = nil, out, ""
}
