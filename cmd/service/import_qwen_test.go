package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/store"
)

// TestImportQwenCodeDefaultFolders runs `service import qwen-code` without
// paths: it reads ~/.qwen/projects, then $QWEN_HOME/projects, then
// $QWEN_RUNTIME_DIR/projects (which wins over $QWEN_HOME), each holding the
// real sample; a second run finds nothing changed.
func TestImportQwenCodeDefaultFolders(t *testing.T) {
	for _, v := range []string{"QWEN_HOME", "QWEN_RUNTIME_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	const samples = "../../adapters/qwencode/testdata/projects/-tmp-qwentest"
	home := withHome(t)
	copyTree(t, samples, filepath.Join(home, ".qwen", "projects", "-tmp-qwentest"), ".jsonl")
	db := filepath.Join(t.TempDir(), "s.db")
	first := runImportCmd(t, "qwen-code", "--db", db)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List(context.Background(), store.ListQuery{})
	st.Close()
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Summary.Steps == 0 {
		t.Fatalf("List = %+v, %v; want the sample's session with its steps", list.Sessions, err)
	}
	want := fmt.Sprintf("imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), %d steps written\n", list.Sessions[0].Summary.Steps)
	if first != want {
		t.Errorf("import qwen-code from ~/.qwen/projects printed %q; want %q", first, want)
	}
	if got, want := runImportCmd(t, "qwen-code", "--db", db), "imported 1 file: 1 session (0 new, 0 updated, 1 unchanged), 0 steps written\n"; got != want {
		t.Errorf("second import printed %q; want %q", got, want)
	}
	withSample := func() string {
		dir := t.TempDir()
		copyTree(t, samples, filepath.Join(dir, "projects", "-tmp-qwentest"), ".jsonl")
		return dir
	}
	t.Setenv("QWEN_HOME", withSample())
	if got := runImportCmd(t, "qwen-code", "--db", filepath.Join(t.TempDir(), "s.db")); got != want {
		t.Errorf("import qwen-code from $QWEN_HOME/projects printed %q; want %q", got, want)
	}
	t.Setenv("QWEN_HOME", t.TempDir()) // empty: $QWEN_RUNTIME_DIR must win over it
	t.Setenv("QWEN_RUNTIME_DIR", withSample())
	if got := runImportCmd(t, "qwen-code", "--db", filepath.Join(t.TempDir(), "s.db")); got != want {
		t.Errorf("import qwen-code from $QWEN_RUNTIME_DIR/projects printed %q; want %q", got, want)
	}
}
