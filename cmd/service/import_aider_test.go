package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// TestImportAiderDefaultFolder runs `service import aider` without paths
// in a repository whose root holds Aider's history (the real excerpt): a
// session per run it started, with the repository as workspace; a second
// run finds nothing changed.
func TestImportAiderDefaultFolder(t *testing.T) {
	b, err := os.ReadFile("../../../shared/samples/aider/aider-ai/chat-history_lines_2706-4009.aider.chat.history.md")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "# aider chat started at ") {
			runs++
		}
	}
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, ".aider.chat.history.md"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	withHome(t)
	t.Chdir(repo)
	db := filepath.Join(t.TempDir(), "s.db")
	first := runImportCmd(t, "aider", "--db", db)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List(context.Background(), store.ListQuery{})
	st.Close()
	if err != nil || len(list.Sessions) != runs {
		t.Fatalf("List = %d sessions, %v; the history starts %d runs", len(list.Sessions), err, runs)
	}
	steps := 0
	for _, s := range list.Sessions {
		steps += s.Summary.Steps
		if s.Workspace.Root != repo {
			t.Errorf("session %s workspace %q; want the repository %q", s.ID, s.Workspace.Root, repo)
		}
	}
	sessions := fmt.Sprintf("%d sessions", runs)
	if runs == 1 {
		sessions = "1 session"
	}
	if want := fmt.Sprintf("imported 1 file: %s (%d new, 0 updated, 0 unchanged), %d steps written\n", sessions, runs, steps); first != want {
		t.Errorf("import aider printed %q; want %q", first, want)
	}
	if got, want := runImportCmd(t, "aider", "--db", db), fmt.Sprintf("imported 1 file: %s (0 new, 0 updated, %d unchanged), 0 steps written\n", sessions, runs); got != want {
		t.Errorf("second import printed %q; want %q", got, want)
	}
}
