package claudecode

import (
	"bytes"

	"github.com/agentreview/service/adapters"
)

// read is one line of a transcript read and decoded (readLine), for the
// parser to map in order (parser.take).
type read struct {
	n          int
	size       int // the line's bytes with its newline; 0 when no line came
	terminated bool
	err        error // from Lines.Next: ErrLineTooLong, io.EOF or a read error
	blank      bool
	rec        *record
	bad        error // the line is not a record (decodeRecord)
}

// readLine reads a file's next line and decodes it. It touches nothing of
// the parser's, so a reader can run it beside the mapping.
func readLine(lines *adapters.Lines) read {
	n, b, terminated, err := lines.Next()
	r := read{n: n, terminated: terminated, err: err}
	if b == nil {
		return r
	}
	r.size = len(b) + 1
	if len(bytes.TrimSpace(b)) == 0 {
		r.blank = true
		return r
	}
	r.rec, r.bad = decodeRecord(b)
	return r
}

// A reader reads and decodes a file's lines on a goroutine of its own
// while the parser maps the ones before: decoding is about half of the
// parse of a big transcript, and the mapping the rest
// (docs/performance.md, "A transcript decoded while it is mapped"). It
// hands them over in runs of about readerRun bytes, one run ahead, so
// what it holds is a few runs and one line, whatever the file's size.
type reader struct {
	runs    chan []read
	done    chan struct{} // closed by stop
	stopped chan struct{} // closed when the goroutine returns
	run     []read        // the run being taken
}

// readerRun is how many bytes of lines a reader gathers before it hands
// them over (a longer line goes alone).
const readerRun = 256 << 10

// startReader reads lines until the end of the file, a read error or
// stop, whichever is first.
func startReader(lines *adapters.Lines) *reader {
	rd := &reader{runs: make(chan []read, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(rd.stopped)
		defer close(rd.runs)
		var run []read
		size := 0
		for {
			r := readLine(lines)
			run = append(run, r)
			size += r.size
			last := r.err != nil && r.err != adapters.ErrLineTooLong
			if size < readerRun && !last {
				continue
			}
			select {
			case rd.runs <- run:
			case <-rd.done:
				return
			}
			if last {
				return
			}
			run, size = nil, 0
		}
	}()
	return rd
}

// next is the file's next line. The reader's last run ends with an error
// (io.EOF at the end), after which the parser asks for no more.
func (rd *reader) next() read {
	for len(rd.run) == 0 {
		run, ok := <-rd.runs
		if !ok {
			panic("claudecode: a line asked of a reader after its last")
		}
		rd.run = run
	}
	r := rd.run[0]
	rd.run = rd.run[1:]
	return r
}

// stop ends the reading, if the file is not read to its end yet, and
// waits until the goroutine no longer reads it.
func (rd *reader) stop() {
	close(rd.done)
	<-rd.stopped
}
