package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

// heapAtEnd is a file body that measures the live heap each time it is
// read to its end: while the rollout is parsed, not after.
type heapAtEnd struct {
	*bytes.Reader
	most uint64
}

func (h *heapAtEnd) Read(b []byte) (int, error) {
	n, err := h.Reader.Read(b)
	if err == io.EOF {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		h.most = max(h.most, m.HeapAlloc)
	}
	return n, err
}

// A rollout is handled line by line as it is decoded, so the parse holds
// the session's steps, not every decoded line as well: at the end of
// its reading, a 16 MB rollout (the sample's lines again and again, each
// copy with call ids of its own) holds less live heap than its own size
// (2.5 MB).
// Holding every decoded line, it held 1.6 times its size.
func TestRolloutIsNotHeldWhole(t *testing.T) {
	sample, err := os.ReadFile("testdata/agentlogs_crud_rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := bytes.Cut(sample, []byte("\n"))
	var rollout bytes.Buffer
	rollout.Write(head)
	rollout.WriteByte('\n')
	for i := 0; rollout.Len() < 16<<20; i++ {
		rollout.WriteString(strings.ReplaceAll(string(rest), "call_", fmt.Sprintf("call_r%d_", i)))
	}
	body := &heapAtEnd{Reader: bytes.NewReader(rollout.Bytes())}
	u := adapters.Unit{ID: "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b", Paths: []string{"rollout.jsonl"}}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := Parse(u, []adapters.File{{Path: "rollout.jsonl", Body: body}})
	if len(s.Problems) > 0 || s.Steps < 1000 {
		t.Fatalf("%d steps, problems %v; want many and none", s.Steps, s.Problems)
	}
	// The rollout itself is in the heap all along (the test holds it).
	held := body.most - min(body.most, before.HeapAlloc)
	if held > uint64(rollout.Len()) {
		t.Errorf("parsing a rollout of %d KB held %d KB of heap at the end of its reading; want less than its size", rollout.Len()>>10, held>>10)
	}
	t.Logf("rollout %d KB, heap held at the end of reading %d KB, %d steps", rollout.Len()>>10, held>>10, s.Steps)
}

// Every sample read with its steps in memory and read through a spill
// (adapters.SpillAfter 0) gives the same records, and the spill is used.
func TestSpilledRolloutsMatchInMemory(t *testing.T) {
	roots := []string{"testdata/agentlogs_crud_rollout.jsonl", "testdata/handmade"}
	mem := map[string][]byte{}
	for _, root := range roots {
		for id, s := range adapterstest.ParseRoots(t, Agent, root) {
			if s.Spilled != nil {
				t.Fatalf("%s: spilled below adapters.SpillAfter", id)
			}
			a := gather(s)
			mem[id], _ = json.Marshal([]any{a.header, a.segs, a.turns, a.steps})
		}
	}
	was := adapters.SpillAfter
	adapters.SpillAfter = 0
	defer func() { adapters.SpillAfter = was }()
	spilled := 0
	for _, root := range roots {
		for id, s := range adapterstest.ParseRoots(t, Agent, root) {
			if s.Spilled != nil && len(s.Spilled.Steps) > 0 {
				spilled++
			}
			a := gather(s)
			got, _ := json.Marshal([]any{a.header, a.segs, a.turns, a.steps})
			if string(got) != string(mem[id]) {
				t.Errorf("%s: the session read through a spill differs from the one read in memory", id)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	if spilled == 0 || spilled < len(mem)/2 {
		t.Errorf("%d of %d sessions went through a spill; want most", spilled, len(mem))
	}
}
