package store

import (
	"context"
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
)

// A StepStream hands the steps of a batch being decoded (ParseBatchFrom)
// to the transaction writing it (ApplyParsing), so that a big push's
// inserts run beside its parse instead of after it.
//
// Steps are handed over only while the batch can be written in that
// order: the session's header came before the steps, and nothing wrong
// has been found so far. A header or steps array that comes again, which
// JSON allows (the last one counts), spoils what was handed over, and the
// batch is then written the ordinary way.
type StepStream struct {
	chunks chan []*Step // closed when the decoding ends
	chunk  []*Step

	// Set on the decoding goroutine before the first chunk is sent, and
	// read only after it is received.
	header SessionHeader
	batch  *Batch

	started, stopped, spoiled bool
}

// streamChunk is how many steps are handed over at a time.
const streamChunk = 64

func newStepStream() *StepStream {
	// Room for every chunk of the most steps a batch may have: the
	// decoder never waits for the writer, which may be waiting for
	// another writer's lock.
	return &StepStream{chunks: make(chan []*Step, MaxItems/streamChunk+1)}
}

// field is called at each of the batch's top-level names.
func (s *StepStream) field(name string) {
	if s != nil && s.started && (name == "session" || name == "steps") {
		s.spoiled = true
		s.stop()
	}
}

// begin is called as the batch's steps array begins; clean says nothing
// is wrong so far. Steps are handed over only if the header came first.
func (s *StepStream) begin(b *Batch, sawHeader, clean bool) {
	if s == nil || s.started || !sawHeader || !clean {
		return
	}
	s.started, s.header, s.batch = true, b.Session, b
}

// add hands over a step once it is decoded, while nothing is wrong; the
// step is not changed after this.
func (s *StepStream) add(st *Step, clean bool) {
	if s == nil || !s.started || s.stopped {
		return
	}
	if !clean {
		s.stop()
		return
	}
	s.chunk = append(s.chunk, st)
	if len(s.chunk) == streamChunk {
		s.chunks <- s.chunk
		s.chunk = nil
	}
}

// stop hands over no more steps (the rest are written from the batch).
func (s *StepStream) stop() {
	if !s.stopped && len(s.chunk) > 0 {
		s.chunks <- s.chunk
	}
	s.stopped, s.chunk = true, nil
}

// end is called once the decoding is over.
func (s *StepStream) end() {
	s.stop()
	close(s.chunks)
}

// errNotStreamed ends a transaction that cannot write a batch as it is
// decoded; the batch is then applied whole.
var errNotStreamed = errors.New("store: batch not written as decoded")

// ApplyParsing is Apply of a batch that parse decodes (ParseBatchFrom,
// passing it the stream), with owner as the batch's Owner. For a new
// session whose header comes before its steps, the transaction starts
// with the first steps and inserts each one as it is decoded; the checks
// of the whole batch (Validate, the references) run once the decoding
// ends, before the commit, and anything wrong rolls it all back. The
// answer is Apply's, with parse's errors first, as if the batch had been
// parsed before it was applied. Any other batch is parsed, then applied.
func (s *Store) ApplyParsing(ctx context.Context, owner string, parse func(*StepStream) (*Batch, error)) (ApplyResult, error) {
	stream := newStepStream()
	var (
		b        *Batch
		parseErr error
		panicked any // parse's panic, raised again on this goroutine
		parsed   = make(chan struct{})
	)
	go func() {
		defer close(parsed)
		defer stream.end()
		defer func() { panicked = recover() }()
		b, parseErr = parse(stream)
	}()
	first, streamed := <-stream.chunks
	var res ApplyResult
	err := errNotStreamed
	if streamed {
		err = s.write(ctx, func(conn *sqlite.Conn) (err error) {
			res, err = s.applyStreamed(conn, stream, first, owner, func() (*Batch, error) {
				<-parsed
				return b, parseErr
			})
			return err
		})
	}
	<-parsed
	if panicked != nil {
		panic(panicked)
	}
	if parseErr != nil {
		return ApplyResult{}, parseErr
	}
	b.Owner = owner
	switch {
	case errors.Is(err, errNotStreamed):
		return s.Apply(ctx, b)
	case err != nil:
		return ApplyResult{}, fmt.Errorf("store: apply batch: %w", Describe(err))
	}
	s.indexLater() // search_index.go
	return res, nil
}

// applyStreamed writes a new session's steps as stream hands them over
// (first is the first chunk), then, once parsed gives the whole batch,
// checks it and writes the rest of it. It returns errNotStreamed for a
// session that is stored or deleted, or a batch whose header or steps
// came again, and parse's error when parsing failed.
func (s *Store) applyStreamed(conn *sqlite.Conn, stream *StepStream, first []*Step, owner string, parsed func() (*Batch, error)) (ApplyResult, error) {
	h := &stream.header
	if deleted, err := isDeleted(conn, h.ID); err != nil || deleted {
		return ApplyResult{}, errNotStreamed // Apply says which, after Validate
	}
	pk, err := sessionPK(conn, h.ID)
	if err != nil || pk != 0 {
		return ApplyResult{}, errNotStreamed
	}
	stamp, err := nextStamp(conn)
	if err != nil {
		return ApplyResult{}, err
	}
	pk, err = s.insertSession(conn, h, owner, stamp)
	// The steps are drained whatever happens, to see the parse's answer
	// first; an insert's error is kept for after the checks.
	insertErr, inserted, written := err, 0, 0
	for chunk, ok := first, true; ok; chunk, ok = <-stream.chunks {
		for _, st := range chunk {
			if insertErr == nil {
				var c bool
				c, insertErr = upsertStep(conn, pk, st, stamp)
				inserted++
				if c {
					written++
				}
			}
		}
	}
	b, err := parsed()
	switch {
	case err != nil:
		return ApplyResult{}, err
	case stream.spoiled || b != stream.batch:
		return ApplyResult{}, errNotStreamed
	}
	if err := b.Validate(); err != nil {
		return ApplyResult{}, err
	}
	if err := CheckReferences(nil, b); err != nil { // a new session: nothing stored to check against
		return ApplyResult{}, err
	}
	if insertErr != nil {
		return ApplyResult{}, insertErr
	}
	_, w, err := writeRecords(conn, pk, b, stamp, true, inserted)
	res := batchResult(b)
	res.Created, res.Changed, res.StepsWritten = true, true, written+w
	return res, err
}
