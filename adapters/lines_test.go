package adapters_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/agentreview/service/adapters"
)

// filler reads n bytes of c without holding them.
type filler struct {
	c byte
	n int64
}

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.n)
	for i := range p[:n] {
		p[i] = f.c
	}
	f.n -= n
	return int(n), nil
}

// TestReadLinesSkipsLinesPastMaxLine reads a line four times MaxLine long
// between two short ones: it is reported with its path and number and
// skipped, the lines around it are read, and no more than a few MaxLine of
// memory is ever allocated. A last line past MaxLine that never ends (the
// file stops first) is reported the same way.
func TestReadLinesSkipsLinesPastMaxLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  io.Reader
		lines string
	}{
		{"in the middle", io.MultiReader(strings.NewReader("{\"a\":1}\n"), &filler{'x', 4 * adapters.MaxLine}, strings.NewReader("\n{\"b\":2}\n")), "[1:{\"a\":1} 3:{\"b\":2}]"},
		{"at the end, unterminated", io.MultiReader(strings.NewReader("{\"a\":1}\n"), &filler{0, 4 * adapters.MaxLine}), "[1:{\"a\":1}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var got []string
			problems := adapters.ReadLines(adapters.File{Path: "/p/s.jsonl", Body: tc.body}, func(n int, line []byte, _ bool) {
				got = append(got, fmt.Sprintf("%d:%s", n, line))
			})
			runtime.ReadMemStats(&after)
			if fmt.Sprint(got) != tc.lines {
				t.Errorf("ReadLines read %s; want %s", got, tc.lines)
			}
			want := []adapters.Problem{{Path: "/p/s.jsonl", Line: 2, Message: "line longer than 64 MB: skipped"}}
			if fmt.Sprint(problems) != fmt.Sprint(want) {
				t.Errorf("ReadLines problems = %v; want %v", problems, want)
			}
			// Putting a line of MaxLine together allocates about 2*MaxLine.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*adapters.MaxLine {
				t.Errorf("reading a %d MB line allocated %d MB; want at most %d MB", 4*adapters.MaxLine>>20, alloc>>20, 3*adapters.MaxLine>>20)
			}
		})
	}
}

// TestReadLinesKeepsALineOfMaxLine reads a line of exactly MaxLine bytes:
// it is a line, not a problem.
func TestReadLinesKeepsALineOfMaxLine(t *testing.T) {
	body := io.MultiReader(&filler{'x', adapters.MaxLine - 1}, strings.NewReader("\nnext\n"))
	var lens []int
	problems := adapters.ReadLines(adapters.File{Path: "f", Body: body}, func(_ int, line []byte, _ bool) {
		lens = append(lens, len(line))
	})
	if want := fmt.Sprint([]int{adapters.MaxLine - 1, 4}); fmt.Sprint(lens) != want || len(problems) > 0 {
		t.Errorf("ReadLines read lines of %v, problems %v; want %s and none", lens, problems, want)
	}
}

// TestOpenRefusesFilesThatAreNotRegular: a device or a pipe named as an
// agent's file is refused, not read (it may never end, or block).
func TestOpenRefusesFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{zero, fifo, dir} {
		if f, err := adapters.Open(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			f.Close()
			t.Errorf("Open(%s) = %v; want not a regular file", p, err)
		}
	}
}

// TestReadDocumentRefusesPastMaxDocument: a JSON document file larger than
// MaxDocument is refused without being read.
func TestReadDocumentRefusesPastMaxDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api_conversation_history.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(adapters.MaxDocument + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if b, err := adapters.ReadDocument(f); err == nil || !strings.Contains(err.Error(), "file larger than 256 MB") {
		t.Errorf("ReadDocument(%d bytes) = %d bytes, %v; want larger than 256 MB", adapters.MaxDocument+1, len(b), err)
	}
	if b, err := adapters.ReadDocument(io.MultiReader(&filler{' ', adapters.MaxDocument}, bytes.NewReader([]byte("{}")))); err == nil {
		t.Errorf("ReadDocument(a stream past MaxDocument) = %d bytes; want an error", len(b))
	}
}
