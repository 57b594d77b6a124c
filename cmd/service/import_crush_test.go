package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/store"
)

// TestImportCrushDefaultFolders runs `service import crush` without paths:
// it finds the projects in Crush's projects.json, under HOME, then under
// $CRUSH_GLOBAL_DATA, each with a copy of the real sample database in a
// data dir that is not named .crush (the project's folder, from the list,
// is its workspace); a second run finds nothing changed.
func TestImportCrushDefaultFolders(t *testing.T) {
	for _, v := range []string{"XDG_DATA_HOME", "CRUSH_GLOBAL_DATA"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	sample, err := os.ReadFile("../../../shared/samples/crush/dbos-transact-golang/.crush/crush.db")
	if err != nil {
		t.Fatal(err)
	}
	// project writes a project's data dir with the sample, and the list
	// naming it in the global data folder global.
	project := func(global string) string {
		proj := filepath.Join(t.TempDir(), "dbos")
		data := filepath.Join(t.TempDir(), "crush-data")
		os.MkdirAll(data, 0o700)
		if err := os.WriteFile(filepath.Join(data, "crush.db"), sample, 0o600); err != nil {
			t.Fatal(err)
		}
		list, _ := json.Marshal(map[string]any{"projects": []map[string]any{{"path": proj, "data_dir": data, "last_accessed": "2025-08-09T03:55:40Z"}}})
		os.MkdirAll(global, 0o700)
		if err := os.WriteFile(filepath.Join(global, "projects.json"), list, 0o600); err != nil {
			t.Fatal(err)
		}
		return proj
	}
	home := withHome(t)
	t.Chdir(t.TempDir()) // no ./.crush
	proj := project(filepath.Join(home, ".local", "share", "crush"))
	db := filepath.Join(t.TempDir(), "s.db")
	first := runImportCmd(t, "crush", "--db", db)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List(context.Background(), store.ListQuery{})
	st.Close()
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("List = %d sessions, %v; the sample has 2", len(list.Sessions), err)
	}
	steps := 0
	for _, s := range list.Sessions {
		steps += int(s.Summary.Steps)
		if s.Workspace.Root != proj {
			t.Errorf("session %s workspace %q; want the project's folder %q from projects.json", s.ID, s.Workspace.Root, proj)
		}
	}
	if want := fmt.Sprintf("imported 1 file: 2 sessions (2 new, 0 updated, 0 unchanged), %d steps written\n", steps); first != want {
		t.Errorf("import crush from ~/.local/share/crush printed %q; want %q", first, want)
	}
	if got, want := runImportCmd(t, "crush", "--db", db), "imported 1 file: 2 sessions (0 new, 0 updated, 2 unchanged), 0 steps written\n"; got != want {
		t.Errorf("second import printed %q; want %q", got, want)
	}

	t.Setenv("CRUSH_GLOBAL_DATA", t.TempDir())
	project(os.Getenv("CRUSH_GLOBAL_DATA"))
	if got, want := runImportCmd(t, "crush", "--db", filepath.Join(t.TempDir(), "s.db")), fmt.Sprintf("imported 1 file: 2 sessions (2 new, 0 updated, 0 unchanged), %d steps written\n", steps); got != want {
		t.Errorf("import crush from $CRUSH_GLOBAL_DATA printed %q; want %q", got, want)
	}
}
