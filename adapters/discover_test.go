package adapters

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"skip/a.jsonl", "keep/b.jsonl", "keep/skip/c.jsonl", "d.jsonl"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	skip := func(name string) bool { return name == "skip" }
	visit := func(p string, d fs.DirEntry, named bool) {
		rel, _ := filepath.Rel(dir, p)
		if named {
			rel = "named:" + rel
		}
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, filepath.ToSlash(rel))
	}
	problems := Walk([]string{filepath.Join(dir, "skip"), dir, filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "nope")}, skip, visit)
	want := []string{
		"skip/", "skip/a.jsonl", // a root is entered whatever its name
		"./", "d.jsonl", "keep/", "keep/b.jsonl", // skip/ and keep/skip/ below a root are not
		"named:d.jsonl",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Walk visited %q; want %q", got, want)
	}
	if len(problems) != 1 || problems[0].Path != filepath.Join(dir, "nope") {
		t.Errorf("Walk problems = %v; want one for the missing root", problems)
	}
}
