package adapters

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Every read of an agent's files is bounded, so a hostile or broken file
// (a line that never ends, /dev/zero linked as a transcript) is reported
// and skipped instead of growing memory without end.
const (
	// MaxLine is the longest line read from a JSON Lines file: 64 MB, room
	// for a transcript record holding several large images.
	MaxLine = 64 << 20
	// MaxDocument is the largest file read whole as one JSON document (a
	// Cline task's files): 256 MB, a long task with its screenshots.
	MaxDocument = 256 << 20
)

// ErrLineTooLong is a line longer than MaxLine: it was skipped, and the
// lines after it are still read.
var ErrLineTooLong = fmt.Errorf("line longer than %d MB: skipped", MaxLine>>20)

// Open opens an agent's file for reading. Only regular files are read: a
// device, pipe or socket (which may never end, or block) is an error.
func Open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() {
		kind := "a device"
		switch {
		case m.IsDir():
			kind = "a folder"
		case m&fs.ModeNamedPipe != 0:
			kind = "a pipe"
		case m&fs.ModeSocket != 0:
			kind = "a socket"
		}
		return nil, fmt.Errorf("not a regular file (%s): skipped", kind)
	}
	return os.Open(path)
}

// ReadDocument reads a whole file meant to hold one JSON document, at most
// MaxDocument bytes; a file that says it is larger is not read at all.
func ReadDocument(r io.Reader) ([]byte, error) {
	tooLarge := fmt.Errorf("file larger than %d MB: skipped", MaxDocument>>20)
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() > MaxDocument {
			return nil, tooLarge
		}
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxDocument+1))
	if err == nil && len(b) > MaxDocument {
		return nil, tooLarge
	}
	return b, err
}

// Lines reads the lines of an agent's file one at a time, without keeping
// them: the bytes Next returns are only good until the next call. It holds
// at most one line of MaxLine bytes, whatever it reads.
type Lines struct {
	br   *bufio.Reader
	n    int
	size int    // the bytes the last line took in the file (Size)
	long []byte // a line longer than the reader's buffer, put together
}

// Size is how many bytes of the file the line Next returned last took,
// its line ending included, also when it was too long to return: where an
// adapter needs offsets or a stamp of what it read.
func (l *Lines) Size() int { return l.size }

// NewLines reads lines from r.
func NewLines(r io.Reader) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line without its line ending (never nil), its
// number from 1, and whether it ended with a newline (only the last line
// can lack one, and then the file may still be being written). A line
// longer than MaxLine comes as a nil line and ErrLineTooLong, with its
// number; reading goes on after it. After the last line Next returns a nil
// line and io.EOF; a read error comes with the line read before it, if any.
func (l *Lines) Next() (n int, line []byte, terminated bool, err error) {
	line, err = l.br.ReadSlice('\n')
	l.size = len(line)
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			l.size += len(line)
			if len(l.long)+len(line) > MaxLine {
				return l.skip(err)
			}
			if len(l.long)+len(line) > cap(l.long) {
				// Double, so that putting a line together copies it about
				// twice at most, never past MaxLine.
				l.long = append(make([]byte, 0, min(2*cap(l.long)+len(line), MaxLine)), l.long...)
			}
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

// skip reads past the rest of a line longer than MaxLine, keeping none of
// it; err is the last read's.
func (l *Lines) skip(err error) (n int, line []byte, terminated bool, _ error) {
	for err == bufio.ErrBufferFull {
		var rest []byte
		rest, err = l.br.ReadSlice('\n')
		l.size += len(rest)
	}
	l.n++
	if err != nil && err != io.EOF {
		return l.n, nil, false, err
	}
	return l.n, nil, err == nil, ErrLineTooLong
}

// ReadLines calls fn with each line of f (see Lines.Next); line is only
// good during the call. Lines longer than MaxLine and a read error are
// returned as problems.
func ReadLines(f File, fn func(n int, line []byte, terminated bool)) []Problem {
	problems, _ := ReadLinesWhile(f, func(n int, line []byte, terminated bool) bool {
		fn(n, line, terminated)
		return true
	})
	return problems
}

// ReadLinesWhile is ReadLines that stops after a line for which fn returns
// false; end reports whether it read to the end of f.
func ReadLinesWhile(f File, fn func(n int, line []byte, terminated bool) bool) (problems []Problem, end bool) {
	lines := NewLines(f.Body)
	for {
		n, line, term, err := lines.Next()
		more := line == nil || fn(n, line, term)
		switch err {
		case nil:
		case ErrLineTooLong:
			problems = append(problems, Problem{Path: f.Path, Line: n, Message: err.Error()})
		case io.EOF:
			return problems, true
		default:
			return append(problems, Problem{Path: f.Path, Message: "read: " + err.Error()}), true
		}
		if !more {
			return problems, false
		}
	}
}
