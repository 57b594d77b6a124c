package claudecode

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// corpusSessionRE finds the session ids a sample names.
var corpusSessionRE = regexp.MustCompile(`"sessionId":\s*"([0-9a-f-]{36})"`)

// writeCorpus copies every transcript of testdata into dir copies times,
// each copy of a file under a fresh session id in project folder p<k>, as
// the 96 MB corpus of docs/performance.md is built (samples x160).
func writeCorpus(tb testing.TB, dir string, copies int) (size int64) {
	tb.Helper()
	var files []string
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for k := 1; k <= copies; k++ {
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			n++
			id := "c0ffee00-0000-4000-8000-" + strconv.FormatInt(int64(1e11+n), 10)[:12]
			body = corpusSessionRE.ReplaceAll(body, []byte(`"sessionId":"`+id+`"`))
			out := filepath.Join(dir, "p"+strconv.Itoa(k), id+".jsonl")
			if rel, _ := filepath.Rel("testdata", f); strings.Contains(rel, "/subagents/") {
				out = filepath.Join(dir, "p"+strconv.Itoa(k), id, "subagents", filepath.Base(f))
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(out, body, 0o600); err != nil {
				tb.Fatal(err)
			}
			size += int64(len(body))
		}
	}
	return size
}

// BenchmarkImportCorpus imports the samples copied 160 times (96 MB, 1,600
// files, as service import claude-code does: Importer into a new store,
// closed at the end so the search index has caught up), reporting MB/s.
func BenchmarkImportCorpus(b *testing.B) {
	dir := b.TempDir()
	size := writeCorpus(b, filepath.Join(dir, "corpus"), 160)
	defer adapters.LimitMemory()()
	b.SetBytes(size)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(dir, "s"+strconv.Itoa(i)+".db"))
		if err != nil {
			b.Fatal(err)
		}
		im := &adapters.Importer{Store: st}
		sum, err := im.Run(ctx, Agent, []string{filepath.Join(dir, "corpus")})
		if err != nil || sum.New != 1600 {
			b.Fatalf("Run = %v, %v", sum, err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestImportGroupsSmallSessions imports 40 small sessions, which are
// written in groups (store.ApplyGroup) with their files recorded, so the
// next run opens none; then reads them all again with one deleted in the
// service: it is skipped without holding back the rest of its group.
func TestImportGroupsSmallSessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeCorpus(t, filepath.Join(dir, "corpus"), 4)
	st, err := store.Open(ctx, filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gone := "c0ffee00-0000-4000-8000-100000000007"
	first, err := (&adapters.Importer{Store: st}).Run(ctx, Agent, []string{filepath.Join(dir, "corpus")})
	if err != nil || first.New != 40 {
		t.Fatalf("Run = %v, %v; want 40 new sessions", first, err)
	}
	// The groups recorded every file: the next run opens none.
	sum, err := (&adapters.Importer{Store: st}).Run(ctx, Agent, []string{filepath.Join(dir, "corpus")})
	if err != nil || sum.Unchanged != 40 || sum.FilesUnchanged != 40 {
		t.Errorf("Run(again) = %+v, %v; want the 40 files unchanged and skipped", sum, err)
	}
	if err := st.Delete(ctx, gone); err != nil {
		t.Fatalf("Delete(%s) = %v", gone, err)
	}
	// Read everything again, the deleted session among the others.
	sum, err = (&adapters.Importer{Store: st, Rescan: true}).Run(ctx, Agent, []string{filepath.Join(dir, "corpus")})
	if err != nil || sum.Unchanged != 39 || sum.Deleted != 1 || sum.Steps != 0 {
		t.Errorf("Run(rescan) = %+v, %v; want 39 unchanged, 1 deleted, no step written", sum, err)
	}
	for k := 1; k <= 40; k++ {
		id := "c0ffee00-0000-4000-8000-" + strconv.FormatInt(int64(1e11+k), 10)[:12]
		seqs, err := st.StepSeqs(ctx, id)
		if err != nil || (id == gone) != (len(seqs) == 0) {
			t.Errorf("StepSeqs(%s) = %d steps, %v; want steps unless deleted", id, len(seqs), err)
		}
	}
}
