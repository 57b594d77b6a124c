package claudecode

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// A reader holds a few runs of lines ahead of the parser, not the file:
// with the parser stopped after its first line, the file is read no
// further than the run being taken, one run handed over, one being
// gathered and the line reader's buffer.
func TestReaderReadsAFewRunsAhead(t *testing.T) {
	var file bytes.Buffer
	lines := 0
	for ; file.Len() < 32*readerRun; lines++ {
		i := lines
		fmt.Fprintf(&file, `{"type":"user","uuid":"u%d","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"%0900d"}}`+"\n", i, i)
	}
	size := int64(file.Len())
	src := &countingReader{r: &file}
	rd := startReader(adapters.NewLines(src))
	defer rd.stop()
	if r := rd.next(); r.err != nil || r.rec == nil || r.rec.UUID != "u0" {
		t.Fatalf("first line = %+v; want the record u0", r)
	}
	// Wait until the goroutine stops reading (it blocks handing a run over).
	last := int64(-1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := src.n.Load()
		if n == last || n == size {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader still reads after 10 s (%d of %d bytes)", n, size)
		}
		last = n
	}
	bound := int64(3*readerRun + 2*(64<<10)) // three runs, and a line past each and the 64 KB buffer
	if n := src.n.Load(); n > bound {
		t.Errorf("the reader read %d bytes of %d ahead of a parser at its first line; want at most %d", n, size, bound)
	}
	// The rest still comes, in order.
	for i := 1; ; i++ {
		r := rd.next()
		if r.err == io.EOF {
			if i != lines {
				t.Fatalf("EOF after %d lines; want %d", i, lines)
			}
			break
		}
		if r.rec == nil || r.rec.UUID != fmt.Sprint("u", i) {
			t.Fatalf("line %d = %+v; want the record u%d", i, r, i)
		}
	}
}
