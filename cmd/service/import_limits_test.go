package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// endlessLine is the length of the line that never ends in the tests
// below: 1 GiB of zero bytes, kept as a hole so it uses no disk.
const endlessLine = 1 << 30

// maxImportRSS is the most memory an import of those files may take:
// a few times the 64 MB line limit, far below the line itself.
const maxImportRSS = 400 << 20

// writeWithHole writes the first n lines of sample to path, then a line of
// size zero bytes (a hole in the file), then the rest of sample.
func writeWithHole(t *testing.T, sample, path string, n int, size int64) {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(bytes.Join(lines[:n], nil))
	at, _ := f.Seek(size, 1)
	if _, err := f.WriteAt(append([]byte("\n"), bytes.Join(lines[n:], nil)...), at); err != nil {
		t.Fatal(err)
	}
}

// TestImportSkipsEndlessLinesInBoundedMemory runs the real binary's import
// of each agent on files holding a 1 GiB line (or a JSON file past its
// limit, or /dev/zero linked as a transcript): each is reported with its
// path (and line), the rest is imported, and the process stays within
// maxImportRSS.
func TestImportSkipsEndlessLinesInBoundedMemory(t *testing.T) {
	bin := mustBuild(t)
	for _, tc := range []struct {
		agent   string
		make    func(t *testing.T, dir string) (path string)
		problem string // after the path
		session bool   // the rest still makes a session
	}{
		{"claude-code", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "-p", spotterSession+".jsonl")
			writeWithHole(t, "../../adapters/claudecode/testdata/spotter/short.jsonl", path, 4, endlessLine)
			return path
		}, ":5: line longer than 64 MB: skipped", true},
		{"codex", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "rollout-2025-09-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl")
			writeWithHole(t, "../../adapters/codex/testdata/agentlogs_crud_rollout.jsonl", path, 2, endlessLine)
			return path
		}, ":3: line longer than 64 MB: skipped", true},
		{"cline", func(t *testing.T, dir string) string {
			task := filepath.Join(dir, "tasks", "1769000000000")
			copyTree(t, "../../adapters/cline/testdata/handmade/tasks/1769000000000", task, ".json")
			path := filepath.Join(task, "api_conversation_history.json")
			if err := os.Truncate(path, endlessLine); err != nil {
				t.Fatal(err)
			}
			return path
		}, ": file larger than 256 MB: skipped", false},
		{"claude-code", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "zero.jsonl")
			os.MkdirAll(dir, 0o700)
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
			return path
		}, ": not a regular file (a device): skipped", false},
	} {
		t.Run(tc.agent+tc.problem, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.make(t, filepath.Join(dir, "in"))
			cmd := exec.Command(bin, "import", tc.agent, "--db", filepath.Join(dir, "s.db"), filepath.Join(dir, "in"))
			if tc.problem == ": not a regular file (a device): skipped" {
				cmd.Args[len(cmd.Args)-1] = path // named: a folder walk does not follow links
			}
			cmd.Env = append(os.Environ(), "HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s = %v\n%s", cmd, err, out)
			}
			if want := path + tc.problem; !strings.Contains(string(out), want) {
				t.Errorf("import %s said %q; want it to report %q", tc.agent, out, want)
			}
			if tc.session && !strings.Contains(string(out), "1 session (1 new") {
				t.Errorf("import %s said %q; want the rest of the file imported as 1 new session", tc.agent, out)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
			t.Logf("import %s: peak RSS %d MB", tc.agent, rss>>20)
			if rss > maxImportRSS {
				t.Errorf("import %s peaked at %d MB of memory; want at most %d MB", tc.agent, rss>>20, maxImportRSS>>20)
			}
		})
	}
}
