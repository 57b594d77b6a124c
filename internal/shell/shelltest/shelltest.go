// Package shelltest runs a command line in a real POSIX shell for tests,
// with fake programs that say how they were run.
package shelltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs line with sh -c in a new empty folder (from), with Programs
// of the given names first on PATH; it returns the lines they print. The
// test is skipped where there is no sh.
func Run(t testing.TB, line string, programs ...string) (printed []string, from string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+Programs(t, programs...)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("sh -c %q: %v", line, err)
		return nil, cmd.Dir
	}
	return Lines(out), cmd.Dir
}

// Programs writes a script of each name into a new folder, which it
// returns, to put first on PATH: each prints the folder it runs in, its
// own name and each of its words, a line each.
func Programs(t testing.TB, names ...string) (bin string) {
	t.Helper()
	bin = t.TempDir()
	script := "#!/bin/sh\npwd\nfor w in \"${0##*/}\" \"$@\"; do printf '%s\\n' \"$w\"; done\n"
	for _, p := range names {
		if err := os.WriteFile(filepath.Join(bin, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// Lines are what Programs printed, a line each.
func Lines(out []byte) []string {
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
