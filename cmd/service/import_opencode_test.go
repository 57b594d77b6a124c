package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters/opencode/opencodetest"
)

// TestImportOpencodeDefaultFolders runs `service import opencode` without
// paths: it reads opencode's data folder under HOME (the 1.1 storage
// files), then the one $XDG_DATA_HOME names (opencode.db), then the
// database $OPENCODE_DB names; a second run finds nothing changed.
func TestImportOpencodeDefaultFolders(t *testing.T) {
	for _, v := range []string{"XDG_DATA_HOME", "OPENCODE_DB"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	home := withHome(t)
	samples := "../../adapters/opencode/testdata/storage-derived/storage"
	copyTree(t, samples, filepath.Join(home, ".local", "share", "opencode", "storage"), ".json")
	db := filepath.Join(t.TempDir(), "s.db")
	const want = "imported 27 files: 1 session (1 new, 0 updated, 0 unchanged), 6 steps written\n"
	if got := runImportCmd(t, "opencode", "--db", db); got != want {
		t.Errorf("import opencode from ~/.local/share/opencode printed %q; want %q", got, want)
	}
	if got, want := runImportCmd(t, "opencode", "--db", db), "imported 27 files: 1 session (0 new, 0 updated, 1 unchanged), 0 steps written\n"; got != want {
		t.Errorf("second import printed %q; want %q", got, want)
	}

	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "opencode"), 0o700)
	opencodetest.MustDB(t, samples, filepath.Join(xdg, "opencode"), true)
	t.Setenv("XDG_DATA_HOME", xdg)
	const wantDB = "imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), 6 steps written\n"
	if got := runImportCmd(t, "opencode", "--db", filepath.Join(t.TempDir(), "s.db")); got != wantDB {
		t.Errorf("import opencode from $XDG_DATA_HOME/opencode printed %q; want %q", got, wantDB)
	}

	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("OPENCODE_DB", opencodetest.MustDB(t, samples, t.TempDir(), false))
	if got := runImportCmd(t, "opencode", "--db", filepath.Join(t.TempDir(), "s.db")); got != wantDB {
		t.Errorf("import opencode from $OPENCODE_DB printed %q; want %q", got, wantDB)
	}
}
