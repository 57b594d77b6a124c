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

// Run runs line with sh -c in a new empty folder (from), each of programs
// on PATH as a script that prints the folder it runs in, its own name and
// each of its words, a line each; it returns those lines. The test is
// skipped where there is no sh.
func Run(t testing.TB, line string, programs ...string) (printed []string, from string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\npwd\nfor w in \"${0##*/}\" \"$@\"; do printf '%s\\n' \"$w\"; done\n"
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(bin, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(sh, "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("sh -c %q: %v", line, err)
		return nil, cmd.Dir
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), cmd.Dir
}
