// Package adapterstest holds what the adapters' tests share: golden files
// of the v1.2 batches each small sample in testdata parses to.
package adapterstest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// update is the -update flag of every test binary that uses this package.
var update = flag.Bool("update", false, "rewrite testdata/golden/*.json with the batches the samples parse to now")

// GoldenUnits checks the golden file (Golden) of each small sample
// (Small) that a discovers under testdata, parsed by a (ParseUnit). sample
// gives the file or folder whose path under testdata names a unit's
// golden file (SampleName).
func GoldenUnits(t *testing.T, a adapters.Agent, sample func(adapters.Unit) string) {
	t.Helper()
	units, problems := a.Discover([]string{"testdata"})
	if len(problems) > 0 {
		t.Fatalf("Discover(testdata) problems: %v", problems)
	}
	for _, u := range units {
		if !Small(t, u.Paths) {
			continue
		}
		name := SampleName(t, sample(u))
		t.Run(name, func(t *testing.T) {
			s := ParseUnit(t, a, u)
			if s == nil {
				t.Fatalf("Parse(%v) = nil; want a session", u.Paths)
			}
			var batches []*store.Batch
			if err := s.Each(func(b *store.Batch) error { batches = append(batches, b); return nil }); err != nil {
				t.Fatal(err)
			}
			Golden(t, name, batches)
		})
	}
}

// Files reads the files at paths for a parser.
func Files(t testing.TB, paths []string) []adapters.File {
	t.Helper()
	var files []adapters.File
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, adapters.File{Path: p, Body: bytes.NewReader(b)})
	}
	return files
}

// SmallSample is the most bytes a sample's files may hold together for its
// batches to be kept as a golden file; larger samples are checked by
// counts only, so a golden file stays small enough to read in a review.
const SmallSample = 200 << 10

// Small reports whether the files together hold fewer than SmallSample
// bytes.
func Small(t testing.TB, paths []string) bool {
	t.Helper()
	var n int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n < SmallSample
}

// SampleName names the sample at path (a file or folder under the package's
// testdata) for its golden file: its path under testdata, without the
// extension, with _ for each slash. testdata/spotter/short.jsonl is
// spotter_short.
func SampleName(t testing.TB, path string) string {
	t.Helper()
	rel, err := filepath.Rel(mustAbs(t, "testdata"), mustAbs(t, path))
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("sample %s is not under testdata", path)
	}
	rel = strings.TrimSuffix(rel, ".jsonl")
	rel = strings.TrimSuffix(rel, ".json")
	return strings.ReplaceAll(filepath.ToSlash(rel), "/", "_")
}

// Golden compares batches, as indented JSON, with
// testdata/golden/<name>.json byte for byte; with -update it writes that
// file instead. The source_files of the batches are made relative to the
// package folder first (the batches are changed), so a golden file reads
// the same wherever the repository is cloned.
func Golden(t testing.TB, name string, batches []*store.Batch) {
	t.Helper()
	wd := mustAbs(t, ".")
	for _, b := range batches {
		for i := range b.Segments {
			files := make([]string, len(b.Segments[i].SourceFiles))
			for k, f := range b.Segments[i].SourceFiles {
				if rel, err := filepath.Rel(wd, f); err == nil && filepath.IsAbs(f) {
					f = filepath.ToSlash(rel)
				}
				files[k] = f
			}
			b.Segments[i].SourceFiles = files
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // transcripts are full of <tags>; keep them readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(batches); err != nil {
		t.Fatalf("json.Encode(batches of %s) = %v", name, err)
	}
	got := buf.Bytes()
	if bytes.Contains(got, []byte(filepath.ToSlash(wd))) {
		t.Fatalf("batches of %s hold this machine's path %s outside source_files; make it relative before keeping a golden file", name, wd)
	}
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	how := fmt.Sprintf("if the new batches are right, rewrite the golden files with: go test %s -run Golden -update", packageDir(t, wd))
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; %s", err, how)
	}
	if !bytes.Equal(got, want) {
		line, g, w := firstDiff(got, want)
		t.Errorf("batches of %s differ from %s at line %d:\n  got:    %s\n  golden: %s\n%s", name, path, line, g, w, how)
	}
}

// firstDiff returns the number of the first line where got and want
// differ, and that line of each ("(end of file)" past the last one).
func firstDiff(got, want []byte) (int, string, string) {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := func(lines []string, i int) string {
		if i < len(lines) {
			return lines[i]
		}
		return "(end of file)"
	}
	for i := 0; ; i++ {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			return i + 1, line(g, i), line(w, i)
		}
	}
}

// packageDir is the package folder dir as go test takes it:
// ./adapters/codex, relative to the module's root.
func packageDir(t testing.TB, dir string) string {
	t.Helper()
	for root := dir; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, _ := filepath.Rel(root, dir)
			return "./" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return "."
		}
		root = up
	}
}

func mustAbs(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// ParseRoots discovers a's sessions under roots and parses each, by
// session id; a problem Discover reports fails the test.
func ParseRoots(t testing.TB, a adapters.Agent, roots ...string) map[string]*adapters.Session {
	t.Helper()
	units, problems := a.Discover(roots)
	if len(problems) > 0 {
		t.Fatalf("Discover(%v) problems: %v", roots, problems)
	}
	out := map[string]*adapters.Session{}
	for _, u := range units {
		out[u.ID] = ParseUnit(t, a, u)
	}
	return out
}

// ParseUnit parses one unit's files with a.
func ParseUnit(t testing.TB, a adapters.Agent, u adapters.Unit) *adapters.Session {
	t.Helper()
	return a.Parse(u, Files(t, u.Paths))
}

// Batches are the batches a makes of its sessions under roots, usage
// records included: each session's in order, the sessions by id.
func Batches(t testing.TB, a adapters.Agent, roots ...string) []*store.Batch {
	t.Helper()
	sessions := ParseRoots(t, a, roots...)
	var out []*store.Batch
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		s := sessions[id]
		if err := s.Each(func(b *store.Batch) error { out = append(out, b); return nil }); err != nil {
			t.Fatalf("batches of %s: %v", id, err)
		}
		s.Close()
	}
	return out
}
