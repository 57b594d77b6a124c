package adapters

import (
	"bufio"
	"bytes"
	"io"
)

// Lines reads the lines of an agent's file one at a time, without keeping
// them: the bytes Next returns are only good until the next call.
type Lines struct {
	br   *bufio.Reader
	n    int
	long []byte // a line longer than the reader's buffer, put together
}

// NewLines reads lines from r.
func NewLines(r io.Reader) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line without its line ending (never nil), its
// number from 1, and whether it ended with a newline (only the last line
// can lack one, and then the file may still be being written). After the
// last line it returns a nil line and io.EOF; a read error comes with the
// line read before it, if any.
func (l *Lines) Next() (n int, line []byte, terminated bool, err error) {
	line, err = l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if len(line) == 0 {
		return l.n, nil, false, err // io.EOF at the end, or a read error
	}
	l.n++
	terminated = line[len(line)-1] == '\n'
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if err == io.EOF {
		err = nil // the last line; EOF comes on the next call
	}
	return l.n, line, terminated, err
}

// ReadLines calls fn with each line of r (see Lines.Next); line is only
// good during the call.
func ReadLines(r io.Reader, fn func(n int, line []byte, terminated bool)) error {
	lines := NewLines(r)
	for {
		n, line, term, err := lines.Next()
		if line != nil {
			fn(n, line, term)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
