package claudecode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

const benchSession = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"

var (
	benchUUIDRE = regexp.MustCompile(`[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	sessionRE   = regexp.MustCompile(`"sessionId":"[^"]*"`)
	toolIDRE    = regexp.MustCompile(`(toolu_|msg_|req_)([A-Za-z0-9]+)`)
)

// largeTranscript builds a transcript of about size bytes for one session
// by repeating the lines of real samples, each copy with fresh record,
// tool call and message ids (the links inside a copy are kept).
func largeTranscript(b testing.TB, size int) []byte {
	b.Helper()
	var tmpl []byte
	for _, p := range []string{"testdata/spotter/tool_heavy.jsonl", "testdata/spotter/258c7280_excerpt_lines_481-630.jsonl", "testdata/agentlogs_crud.jsonl"} {
		body, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		tmpl = append(tmpl, bytes.TrimRight(body, "\n")...)
		tmpl = append(tmpl, '\n')
	}
	tmpl = sessionRE.ReplaceAll(tmpl, []byte(`"sessionId":"`+benchSession+`"`))
	out := make([]byte, 0, size+len(tmpl))
	for k := 0; len(out) < size; k++ {
		copyN := fmt.Appendf(nil, "%08x", k)
		c := benchUUIDRE.ReplaceAllFunc(tmpl, func(m []byte) []byte {
			if string(m) == benchSession {
				return m
			}
			return append(append([]byte{}, copyN...), m[8:]...)
		})
		c = toolIDRE.ReplaceAll(c, append([]byte("${1}"), append(copyN, "x${2}"...)...))
		out = append(out, c...)
	}
	return out
}

// BenchmarkImportClaudeCode parses a transcript file of 50 MB and one of
// 500 MB and builds every batch to write (Session.Each), as an import
// does, reporting MB/s (SetBytes), the bytes allocated per run, and the
// largest heap in use sampled while it runs. The transcript is read from
// a file, not held in memory, so that the heap is the importer's alone,
// under the memory limit service import sets (GOMEMLIMIT=off measures
// without it).
func BenchmarkImportClaudeCode(b *testing.B) {
	for _, mb := range []int{50, 500} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) { benchImport(b, mb<<20) })
	}
}

func benchImport(b *testing.B, size int) {
	path := filepath.Join(b.TempDir(), benchSession+".jsonl")
	if err := os.WriteFile(path, largeTranscript(b, size), 0o600); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	u := adapters.Unit{ID: benchSession, Paths: []string{path}}
	defer adapters.LimitMemory()() // as service import runs
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()

	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var steps int
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		s := Parse(u, []adapters.File{{Path: path, Body: f}})
		f.Close()
		if s == nil || len(s.Problems) > 0 {
			b.Fatalf("Parse = %v", s)
		}
		built := 0
		if err := s.Each(func(bt *store.Batch) error { built += len(bt.Steps); return nil }); err != nil || built != s.Steps {
			b.Fatalf("Each: %d of %d steps, %v", built, s.Steps, err)
		}
		s.Close()
		steps = s.Steps
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "input-MB")
	b.ReportMetric(float64(steps), "steps")
}
