package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportGeminiCLI runs `service import gemini-cli` without paths: it
// reads ~/.gemini/tmp, or $GEMINI_CLI_HOME/.gemini/tmp when that is set
// (the variable Gemini CLI itself honours), and a second run writes
// nothing. The adapter's own tests check the steps against the raw files.
func TestImportGeminiCLI(t *testing.T) {
	t.Setenv("GEMINI_CLI_HOME", "")
	os.Unsetenv("GEMINI_CLI_HOME")
	home := withHome(t)
	copyTree(t, "../../adapters/geminicli/testdata/tmp", filepath.Join(home, ".gemini", "tmp"), ".json", ".jsonl")
	db := filepath.Join(t.TempDir(), "s.db")
	first := regexp.MustCompile(`^imported 2 files: 2 sessions \(2 new, 0 updated, 0 unchanged\), [1-9]\d* steps written\n$`)
	if got := runImportCmd(t, "gemini-cli", "--db", db); !first.MatchString(got) {
		t.Errorf("import gemini-cli printed %q; want the 2 sample sessions new", got)
	}
	if got, want := runImportCmd(t, "gemini-cli", "--db", db), "imported 2 files: 2 sessions (0 new, 0 updated, 2 unchanged), 0 steps written\n"; got != want {
		t.Errorf("second import printed %q; want %q", got, want)
	}

	gemHome := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", gemHome)
	if got := runImportCmd(t, "gemini-cli", "--db", db); !strings.HasPrefix(got, "no gemini-cli files: none of "+filepath.Join(gemHome, ".gemini", "tmp")) {
		t.Errorf("with GEMINI_CLI_HOME set to an empty folder, import printed %q", got)
	}
	copyTree(t, "../../adapters/geminicli/testdata/handmade/tmp", filepath.Join(gemHome, ".gemini", "tmp"), ".jsonl")
	if got, want := runImportCmd(t, "gemini-cli", "--db", db), "imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), 6 steps written\n"; got != want {
		t.Errorf("import from GEMINI_CLI_HOME printed %q; want %q", got, want)
	}
}
