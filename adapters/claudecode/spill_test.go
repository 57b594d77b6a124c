package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// spillEverything makes every session parsed until the test ends go
// through a spill.
func spillEverything(t *testing.T) {
	was := adapters.SpillAfter
	adapters.SpillAfter = 0
	t.Cleanup(func() { adapters.SpillAfter = was })
}

// TestSpilledSessionsMatchInMemory reads every sample twice, once with its
// steps in memory and once through a spill, and wants the same records.
func TestSpilledSessionsMatchInMemory(t *testing.T) {
	units, problems := Discover([]string{"testdata"})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	mem := map[string]all{}
	for _, u := range units {
		s := adapterstest.ParseUnit(t, Agent, u)
		if s.Spilled != nil {
			t.Fatalf("%s: spilled below SpillAfter", u.ID)
		}
		mem[u.ID] = gather(s)
	}
	spillEverything(t)
	for _, u := range units {
		s := adapterstest.ParseUnit(t, Agent, u)
		if s.Spilled == nil || len(s.Spilled.Steps) == 0 {
			t.Fatalf("%s: not spilled", u.ID)
		}
		got, want := gather(s), mem[u.ID]
		if len(got.steps) != s.Steps || len(got.steps) != len(want.steps) {
			t.Errorf("%s: %d steps spilled (Steps %d); want %d", u.ID, len(got.steps), s.Steps, len(want.steps))
		}
		gotJSON, _ := json.Marshal([]any{got.header, got.segments, got.actors, got.turns, got.steps})
		wantJSON, _ := json.Marshal([]any{want.header, want.segments, want.actors, want.turns, want.steps})
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: spilled session differs from the one read in memory", u.ID)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestImportSpilledSession imports the same transcripts into two stores,
// one with every session spilled, and compares what the stores hold; a
// second run of the spilled import writes nothing.
func TestImportSpilledSession(t *testing.T) {
	ctx := context.Background()
	read := func(spill bool) map[string]string {
		if spill {
			spillEverything(t)
		}
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), "store.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		im := &adapters.Importer{Store: st}
		sum, err := im.Run(ctx, Agent, []string{"testdata"})
		if err != nil || sum.New == 0 {
			t.Fatalf("import: %+v, %v", sum, err)
		}
		out := map[string]string{}
		for id := range adapterstest.ParseRoots(t, Agent, "testdata") {
			d, err := st.Detail(ctx, id, store.DetailQuery{})
			if err != nil {
				t.Fatal(err)
			}
			d.UpdatedAt = "" // when it was written
			b, _ := json.Marshal(d)
			out[id] = string(b)
		}
		im.Rescan = true
		again, err := im.Run(ctx, Agent, []string{"testdata"})
		if err != nil || again.New+again.Updated != 0 {
			t.Errorf("second import (spill %v): %+v, %v; want nothing written", spill, again, err)
		}
		return out
	}
	mem := read(false)
	spilled := read(true)
	for id, want := range mem {
		if spilled[id] != want {
			g, w := spilled[id], want
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("session %s: stored differently when spilled, at %d:\n got %.200s\nwant %.200s", id, i, g[max(0, i-100):], w[max(0, i-100):])
		}
	}
}

// A spilled session of more steps than a batch holds is written in
// batches of at most store.MaxItems steps, after its parents, and a
// writer's error stops Each with that error.
func TestSpilledSessionSplits(t *testing.T) {
	spillEverything(t)
	const calls = 6000
	lines := []string{`{"type":"user","uuid":"p","sessionId":"big","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","message":{"role":"user","content":"loop"}}`}
	for i := range calls {
		ts := fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60%60, i%60)
		lines = append(lines,
			fmt.Sprintf(`{"type":"assistant","uuid":"a%d","timestamp":"%s","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"echo %d"}}]}}`, i, ts, i, i, i),
			fmt.Sprintf(`{"type":"user","uuid":"r%d","timestamp":"%s","message":{"content":[{"type":"tool_result","tool_use_id":"t%d","content":"%d"}]},"toolUseResult":{"stdout":"%d","stderr":""}}`, i, ts, i, i, i))
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	writeFile(t, path, lines...)
	s := adapterstest.ParseRoots(t, Agent, path)["big"]
	defer s.Close()
	if s.Spilled == nil {
		t.Fatal("not spilled")
	}
	var sizes []int
	var seq int64
	err := s.Each(func(b *store.Batch) error {
		sizes = append(sizes, len(b.Steps))
		for _, st := range b.Steps {
			if seq++; st.Seq != seq {
				return fmt.Errorf("step %s has seq %d; want %d", st.ID, st.Seq, seq)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, store.MaxItems, calls + 1 - store.MaxItems}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("steps per batch = %v; want %v (the parents, then the steps)", sizes, want)
	}
	stop := errors.New("disk full")
	n := 0
	err = s.Each(func(b *store.Batch) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("Each with a failing writer = %v after %d batches; want the writer's error after 2", err, n)
	}
}

// outlineBudget is the most heap a spilled step may keep once its session
// is parsed: its outline, its share of the usage records, turns and
// segments. An import's memory limit (adapters.ImportMemoryLimit) is only
// cheap while the live heap stays this small (docs/performance.md,
// "Against ccusage").
const outlineBudget = 512

// TestSpilledSessionHeapPerStep parses two transcripts of real samples
// (8 and 16 MB, fresh ids in every copy) through the spill and wants the
// live heap they hold to grow by at most outlineBudget bytes for each step
// the larger one adds: a session's memory grows with its outlines, never
// with its steps' content (about 4 KB a step here).
func TestSpilledSessionHeapPerStep(t *testing.T) {
	spillEverything(t)
	live := func(mb int) (steps int, heap uint64) {
		s, heap := parseHeld(t, benchSession, largeTranscript(t, mb<<20))
		if s.Spilled == nil || len(s.Problems) > 0 {
			t.Fatalf("%d MB: spilled %v, problems %v", mb, s.Spilled != nil, s.Problems)
		}
		return s.Steps, heap
	}
	n1, h1 := live(8)
	n2, h2 := live(16)
	if n2 <= n1 {
		t.Fatalf("%d steps in 16 MB, %d in 8 MB", n2, n1)
	}
	perStep := float64(h2-min(h2, h1)) / float64(n2-n1)
	t.Logf("%d steps: %d KB live; %d steps: %d KB; %.0f bytes a step", n1, h1>>10, n2, h2>>10, perStep)
	if perStep > outlineBudget {
		t.Errorf("a spilled session holds %.0f bytes of heap a step (%d steps: %d KB, %d steps: %d KB); want at most %d", perStep, n1, h1>>10, n2, h2>>10, outlineBudget)
	}
}

// TestManySmallStepsSpill parses a transcript of 30,000 copies of a real
// prompt line (fresh uuids), 18 MB, below SpillAfter: a session of that
// many steps is spilled all the same (a step in memory takes several times
// a short line), and the live heap it holds stays below the transcript's
// size (0.6 times; 1.5 times without the spill).
func TestManySmallStepsSpill(t *testing.T) {
	body, err := os.ReadFile("testdata/agentlogs_crud.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var prompt map[string]any
	for line := range bytes.Lines(body) {
		var rec map[string]any
		if json.Unmarshal(line, &rec) == nil && rec["type"] == "user" {
			if m, _ := rec["message"].(map[string]any); m != nil {
				if _, ok := m["content"].(string); ok {
					prompt = rec
					break
				}
			}
		}
	}
	if prompt == nil {
		t.Fatal("no prompt line in the sample")
	}
	var transcript []byte
	parent := any(nil)
	for i := range 30_000 {
		prompt["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		prompt["parentUuid"] = parent
		parent = prompt["uuid"]
		line, err := json.Marshal(prompt)
		if err != nil {
			t.Fatal(err)
		}
		transcript = append(append(transcript, line...), '\n')
	}
	if len(transcript) >= adapters.SpillAfter {
		t.Fatalf("the transcript is %d bytes, not below SpillAfter", len(transcript))
	}
	s, live := parseHeld(t, prompt["sessionId"].(string), transcript)
	if s.Steps != 30_000 || len(s.Problems) > 0 {
		t.Fatalf("%d steps, problems %v; want 30000 and none", s.Steps, s.Problems)
	}
	if s.Spilled == nil {
		t.Errorf("a session of %d steps in %d bytes was not spilled", s.Steps, len(transcript))
	}
	if live > uint64(len(transcript)) {
		t.Errorf("the session holds %d KB of heap for a transcript of %d KB; want less", live>>10, len(transcript)>>10)
	}
}

// parseHeld parses a transcript written to a file of the session id and
// returns the session (closed when the test ends) and the live heap it
// holds once parsed.
func parseHeld(t *testing.T, id string, transcript []byte) (*adapters.Session, uint64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), id+".jsonl")
	if err := os.WriteFile(path, transcript, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := Parse(adapters.Unit{ID: id, Paths: []string{path}}, []adapters.File{{Path: path, Body: f}})
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Cleanup(func() { s.Close() })
	return s, after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}
