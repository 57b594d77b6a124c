package aider

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// maxLine is the longest line read from a chat history: 1 MB. Aider writes
// a line of Markdown at a time, text a person or a model wrote; a longer
// line (a pasted blob, a binary file under the history's name) is reported
// and skipped, so a read holds about this much whatever the file holds.
// adapters.MaxLine (64 MB) is sized for JSON records that carry images,
// which a chat history never does.
const maxLine = 1 << 20

var errLineTooLong = fmt.Errorf("line longer than %d MB: skipped", maxLine>>20)

// lineReader reads a history's lines one at a time, as adapters.Lines
// does, with the bound maxLine and the bytes each line took in the file
// (for a run's stamp and the builder's spill).
type lineReader struct {
	br   *bufio.Reader
	n    int
	long []byte // a line longer than the reader's buffer, put together
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending (\n or \r\n), its
// number from 1, the bytes it took in the file and whether it ended with a
// newline (only the last can lack one: the file is still being written).
// The line is only good until the next call. A line longer than maxLine
// comes as a nil line and errLineTooLong; reading goes on after it. After
// the last line next returns io.EOF; a read error ends the reading.
func (r *lineReader) next() (n int, line []byte, size int, terminated bool, err error) {
	line, err = r.br.ReadSlice('\n')
	size = len(line)
	tooLong := false
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			size += len(line)
			if tooLong = tooLong || len(r.long)+len(line) > maxLine+2; tooLong {
				continue
			}
			if len(r.long)+len(line) > cap(r.long) {
				// Double, so that putting a line together copies it about
				// twice at most (append grows large slices by a quarter).
				r.long = append(make([]byte, 0, min(2*cap(r.long)+len(line), maxLine+2)), r.long...)
			}
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	if size == 0 {
		return r.n, nil, 0, false, err // io.EOF at the end, or a read error
	}
	r.n++
	if err != nil && err != io.EOF {
		return r.n, nil, size, false, err
	}
	terminated = err == nil
	if tooLong {
		r.long = r.long[:0]
		return r.n, nil, size, terminated, errLineTooLong
	}
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	return r.n, line, size, terminated, nil
}

// runStart is how a run's header line starts, after the newline that ends
// the line before it.
var runStart = []byte("\n" + runHeader)

// skipToRun reads past whole lines up to the next that starts a run, which
// next returns then, counting the lines it passed; io.EOF when no run is
// left. It searches the reader's buffer instead of reading line by line,
// so Parse reaches its run at the end of a history of many quickly. It is
// called at the start of a line.
func (r *lineReader) skipToRun() error {
	start := true
	for {
		n := r.br.Buffered()
		if n < len(runStart) {
			n = r.br.Size() // read on, as much as the buffer holds
		}
		buf, err := r.br.Peek(n)
		if len(buf) == 0 {
			return err
		}
		if start && bytes.HasPrefix(buf, runStart[1:]) {
			return nil
		}
		if i := bytes.Index(buf, runStart); i >= 0 {
			r.n += bytes.Count(buf[:i+1], runStart[:1])
			r.br.Discard(i + 1)
			return nil
		}
		d := len(buf)
		if err == nil {
			d -= len(runStart) - 1 // a header may start in the last bytes
		}
		r.n += bytes.Count(buf[:d], runStart[:1])
		start = buf[d-1] == '\n'
		r.br.Discard(d)
		if err != nil {
			return err
		}
	}
}
