package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
)

// copyTree copies the files under src whose names end with one of exts.
func copyTree(t *testing.T, src, dst string, exts ...string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		keep := false
		for _, e := range exts {
			keep = keep || strings.HasSuffix(p, e)
		}
		if !keep || strings.Contains(p, string(filepath.Separator)+"fuzz"+string(filepath.Separator)) {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o700)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFile copies the file src to dst, making dst's folders.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		os.MkdirAll(filepath.Dir(dst), 0o700)
		err = os.WriteFile(dst, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runImport runs the import command and returns its output.
func runImportCmd(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), append([]string{"import"}, args...), &out, &errOut); err != nil {
		t.Fatalf("run(import %v) = %v; stderr %s", args, err, errOut.String())
	}
	return out.String()
}

func latestStamp(t *testing.T, db string) int64 {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stamp, err := st.LatestStamp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stamp
}

func stepSeqs(t *testing.T, db, sid string) map[string]int64 {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seqs, err := st.StepSeqs(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func TestImportClaudeCode(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	copyTree(t, "../../adapters/claudecode/testdata", dir, ".jsonl")
	db := filepath.Join(t.TempDir(), "s.db")

	out := runImportCmd(t, "claude-code", dir, "--db", db)
	if want := "imported 10 files: 7 sessions (7 new, 0 updated, 0 unchanged), 102 steps written\n"; out != want {
		t.Fatalf("first import printed %q; want %q", out, want)
	}
	stamp := latestStamp(t, db)

	// A second run reads nothing and writes nothing: no new change stamp,
	// so no change event.
	out = runImportCmd(t, "claude-code", dir, "--db", db)
	if want := "imported 10 files: 7 sessions (0 new, 0 updated, 7 unchanged), 0 steps written\n"; out != want {
		t.Errorf("second import printed %q; want %q", out, want)
	}
	if got := latestStamp(t, db); got != stamp {
		t.Errorf("second import moved the change stamp %d -> %d", stamp, got)
	}
	// Reading every file again still writes nothing: Apply skips what is
	// unchanged, and the summary says no step was written.
	out = runImportCmd(t, "claude-code", dir, "--db", db, "--rescan")
	if want := "imported 10 files: 7 sessions (0 new, 0 updated, 7 unchanged), 0 steps written\n"; out != want {
		t.Errorf("rescan printed %q; want %q", out, want)
	}
	if got := latestStamp(t, db); got != stamp {
		t.Errorf("rescan moved the change stamp %d -> %d", stamp, got)
	}

	// The session grows by a line and a line breaks: the break is reported
	// with its place, the rest is imported.
	path := filepath.Join(dir, "agentlogs_crud.jsonl")
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines[4] = "{broken"
	lines = append(lines, `{"type":"assistant","uuid":"new-reply","timestamp":"2025-10-12T21:36:45.000Z","message":{"id":"msg_new","content":[{"type":"text","text":"One more thing."}]}}`)
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	out = runImportCmd(t, "claude-code", dir, "--db", db)
	if !strings.Contains(out, "(0 new, 1 updated, 6 unchanged), 2 steps written") || !strings.Contains(out, path+":5: invalid JSON") {
		t.Errorf("import after the change printed %q; want 1 updated and %s:5 reported", out, path)
	}
	if strings.Contains(out, "\r") || strings.Count(out, "\n") != 1 {
		t.Errorf("not on a terminal, import printed %q; want the summary line only", out)
	}
	if got := latestStamp(t, db); got <= stamp {
		t.Errorf("the change stamp did not move after the session grew")
	}
	if seqs := stepSeqs(t, db, "8122657c-fe54-4dc9-89a3-20049e8a84f7"); seqs["new-reply"] != 17 || len(seqs) != 17 {
		t.Errorf("after growing, the session has seqs %v; want the new reply at 17", seqs["new-reply"])
	}
	// The file with a broken line was not recorded, so it is read and
	// reported again; nothing is written.
	stamp = latestStamp(t, db)
	out = runImportCmd(t, "claude-code", dir, "--db", db)
	if !strings.Contains(out, "(0 new, 0 updated, 7 unchanged), 0 steps written") || !strings.Contains(out, path+":5: invalid JSON") {
		t.Errorf("the next import printed %q; want the problem again and nothing written", out)
	}
	if got := latestStamp(t, db); got != stamp {
		t.Errorf("re-reading the file with a problem moved the change stamp")
	}
}

func TestImportDeletedSession(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	copyTree(t, "../../adapters/claudecode/testdata", dir, "agentlogs_todos.jsonl")
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "claude-code", dir, "--db", db)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"delete", "0db46778-18a1-4d84-853f-d4dc72a07a1b", "--db", db}, &out, &out); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "agentlogs_todos.jsonl"), later, later)
	got := runImportCmd(t, "claude-code", dir, "--db", db)
	if want := "imported 1 file: 0 sessions (0 new, 0 updated, 0 unchanged), 0 steps written; 1 deleted session skipped\n"; got != want {
		t.Errorf("import of a deleted session printed %q; want %q", got, want)
	}
}

// TestImportDefaultFolders runs each import without paths: it reads the
// agent's own folders under HOME (or the folder its variable names).
func TestImportDefaultFolders(t *testing.T) {
	for _, v := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	home := withHome(t)
	copyTree(t, "../../adapters/claudecode/testdata", filepath.Join(home, ".claude", "projects", "-w"), "agentlogs_crud.jsonl")
	copyTree(t, "../../adapters/codex/testdata/handmade", filepath.Join(home, ".codex", "sessions"), ".jsonl")
	copyTree(t, "../../adapters/cline/testdata/handmade/tasks", filepath.Join(home, ".config", "Code", "User", "globalStorage", "saoudrizwan.claude-dev", "tasks"), ".json")
	copyTree(t, "../../adapters/cline/testdata/handmade/sessions", filepath.Join(home, ".cline", "data", "sessions"), ".json")
	db := filepath.Join(t.TempDir(), "s.db")
	for _, c := range []struct{ agent, want string }{
		{"claude-code", "imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), 16 steps written\n"},
		{"codex", "imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), 12 steps written\n"}, // with the compaction summary
		{"cline", "imported 6 files: 2 sessions (2 new, 0 updated, 0 unchanged), 21 steps written\n"},
	} {
		if got := runImportCmd(t, c.agent, "--db", db); got != c.want {
			t.Errorf("import %s printed %q; want %q", c.agent, got, c.want)
		}
	}

	config := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	if got := runImportCmd(t, "claude-code", "--db", db); !strings.HasPrefix(got, "no claude-code files: none of "+filepath.Join(config, "projects")) {
		t.Errorf("with CLAUDE_CONFIG_DIR set to an empty folder, import printed %q", got)
	}
	copyTree(t, "../../adapters/claudecode/testdata", filepath.Join(config, "projects", "-w"), "agentlogs_todos.jsonl")
	if got := runImportCmd(t, "claude-code", "--db", db); got != "imported 1 file: 1 session (1 new, 0 updated, 0 unchanged), 12 steps written\n" {
		t.Errorf("import from CLAUDE_CONFIG_DIR printed %q", got)
	}
}

// TestImportClaudeCodeXDGFolder: the import of Claude Code without paths
// reads the projects of Claude Code's folder in the XDG configuration
// folder too ($XDG_CONFIG_HOME/claude, else ~/.config/claude), beside
// ~/.claude's, as the import of that folder named does.
func TestImportClaudeCodeXDGFolder(t *testing.T) {
	for _, v := range []string{"CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	const sample = "../../adapters/claudecode/testdata"
	for _, c := range []struct{ name, xdg, folder string }{
		{"~/.config", "", filepath.Join(".config", "claude", "projects")},
		{"$XDG_CONFIG_HOME", "xdg", filepath.Join("xdg", "claude", "projects")},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := withHome(t)
			if c.xdg != "" {
				t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, c.xdg))
			}
			projects := filepath.Join(home, c.folder)
			copyTree(t, sample, filepath.Join(projects, "-w"), "agentlogs_crud.jsonl")
			want := runImportCmd(t, "claude-code", projects, "--db", filepath.Join(t.TempDir(), "s.db"))
			if !strings.Contains(want, "1 session (1 new") {
				t.Fatalf("import of %s printed %q; want one new session", projects, want)
			}
			if got := runImportCmd(t, "claude-code", "--db", filepath.Join(t.TempDir(), "s.db")); got != want {
				t.Errorf("import claude-code with the transcript in %s printed %q; want %q", c.folder, got, want)
			}
		})
	}
}

// TestImportCodexArchived: the import of Codex without paths reads the
// rollouts of sessions archived too (Codex moves them to
// archived_sessions), as the import of that file named does; a session
// imported, then archived, is the same session, written once.
func TestImportCodexArchived(t *testing.T) {
	t.Setenv("CODEX_HOME", "")
	os.Unsetenv("CODEX_HOME")
	home := withHome(t)
	const sample = "../../adapters/codex/testdata/agentlogs_crud_rollout.jsonl"
	name := "rollout-2026-01-25T10-32-00-019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b.jsonl"
	archived := filepath.Join(home, ".codex", "archived_sessions", name)
	copyFile(t, sample, archived)
	want := runImportCmd(t, "codex", archived, "--db", filepath.Join(t.TempDir(), "s.db"))
	if !strings.Contains(want, "1 session (1 new") {
		t.Fatalf("import of %s printed %q; want one new session", archived, want)
	}
	if got := runImportCmd(t, "codex", "--db", filepath.Join(t.TempDir(), "s.db")); got != want {
		t.Errorf("import codex with the rollout archived printed %q; want %q", got, want)
	}

	// Imported from sessions, then archived: no step more to write, its
	// file's new place recorded.
	os.Remove(archived)
	live := filepath.Join(home, ".codex", "sessions", "2026", "01", "25", name)
	copyFile(t, sample, live)
	db := filepath.Join(t.TempDir(), "s.db")
	if got := runImportCmd(t, "codex", "--db", db); got != want {
		t.Errorf("import codex with the rollout in sessions printed %q; want %q", got, want)
	}
	if err := os.Rename(live, archived); err != nil {
		t.Fatal(err)
	}
	if got, want := runImportCmd(t, "codex", "--db", db), "imported 1 file: 1 session (0 new, 1 updated, 0 unchanged), 0 steps written\n"; got != want {
		t.Errorf("import codex after the session was archived printed %q; want %q", got, want)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.List(context.Background(), store.ListQuery{})
	if err != nil || len(l.Sessions) != 1 {
		t.Fatalf("List = %d sessions, %v; want the one session", len(l.Sessions), err)
	}
	d, err := st.Detail(context.Background(), l.Sessions[0].ID, store.DetailQuery{NoSteps: true})
	if err != nil || len(d.Segments) != 1 || !slices.Equal(d.Segments[0].SourceFiles, []string{archived}) {
		t.Errorf("Detail = %+v, %v; want one segment read from %s", d.Segments, err, archived)
	}
}

// TestImportClineEditorFolders runs the import of Cline without paths with
// a task in one editor's folder at a time (each of the VS Code family, in
// $XDG_CONFIG_HOME or ~/.config, and a remote server's): it imports what
// the import of that folder named on the command line does.
func TestImportClineEditorFolders(t *testing.T) {
	for _, v := range []string{"CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	const task = "../../adapters/cline/testdata/handmade/tasks"
	want := runImportCmd(t, "cline", task, "--db", filepath.Join(t.TempDir(), "s.db"))
	if !strings.Contains(want, "1 session (1 new") {
		t.Fatalf("import of %s printed %q; want one new session", task, want)
	}
	tasks := filepath.Join("User", "globalStorage", "saoudrizwan.claude-dev", "tasks")
	type place struct{ name, config, folder string }
	var places []place
	for _, editor := range []string{"Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"} {
		places = append(places, place{editor + " in ~/.config", "", filepath.Join(".config", editor, tasks)},
			place{editor + " in $XDG_CONFIG_HOME", "xdg", filepath.Join("xdg", editor, tasks)})
	}
	places = append(places, place{"a remote server", "", filepath.Join(".vscode-server", "data", tasks)},
		place{"a Codespace", "", filepath.Join(".vscode-remote", "data", tasks)})
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) {
			home := withHome(t)
			t.Setenv("XDG_CONFIG_HOME", "")
			os.Unsetenv("XDG_CONFIG_HOME")
			if p.config != "" {
				t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, p.config))
			}
			copyTree(t, task, filepath.Join(home, p.folder), ".json")
			if got := runImportCmd(t, "cline", "--db", filepath.Join(t.TempDir(), "s.db")); got != want {
				t.Errorf("import cline with the task in %s printed %q; want %q", p.folder, got, want)
			}
		})
	}
}

func TestImportMissingPath(t *testing.T) {
	withHome(t)
	missing := filepath.Join(t.TempDir(), "nope")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"import", "codex", missing, "--db", filepath.Join(t.TempDir(), "s.db")}, &out, &errOut)
	if got := out.String(); !strings.Contains(got, "imported 0 files") || !strings.Contains(got, missing) {
		t.Errorf("import of a missing folder printed %q; want it named", got)
	}
	if err == nil || !strings.Contains(err.Error(), "no codex files found in "+missing) {
		t.Errorf("import of a missing folder = %v; want an error saying nothing was found", err)
	}
}

func TestImportHelp(t *testing.T) {
	var out bytes.Buffer
	run(context.Background(), []string{"import", "--help"}, &out, &out)
	for _, want := range []string{"claude-code", "cline", "codex"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("import --help does not list %s:\n%s", want, out.String())
		}
	}
}

// TestImportNothingFound runs the real binary on a folder that holds
// another agent's files only, for every agent: it says that nothing was
// found, names the files and layout it looks for, exits non-zero and
// writes no session.
func TestImportNothingFound(t *testing.T) {
	bin := mustBuild(t)
	claudeDir, clineDir := t.TempDir(), t.TempDir()
	copyTree(t, "../../adapters/claudecode/testdata", claudeDir, "agentlogs_crud.jsonl")
	copyTree(t, "../../adapters/cline/testdata", clineDir, ".json")
	for _, a := range agents.All {
		t.Run(a.Kind, func(t *testing.T) {
			dir := claudeDir
			if a.Kind == claudecode.Kind {
				dir = clineDir
			}
			db := filepath.Join(t.TempDir(), "s.db")
			cmd := exec.Command(bin, "import", a.Kind, dir, "--db", db)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("import %s %s = %v; want a non-zero exit", a.Kind, dir, err)
			}
			want := fmt.Sprintf("no %s files found in %s: it looks for %s", a.Kind, dir, a.Layout)
			if a.Layout == "" || !strings.Contains(stderr.String(), want) {
				t.Errorf("import %s stderr = %q; want it to contain %q", a.Kind, stderr.String(), want)
			}
			if !strings.HasPrefix(stdout.String(), "imported 0 files") {
				t.Errorf("import %s stdout = %q; want the summary of 0 files", a.Kind, stdout.String())
			}
			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if list, err := st.List(context.Background(), store.ListQuery{}); err != nil || len(list.Sessions) != 0 {
				t.Errorf("store after the import holds %+v, %v; want no session", list, err)
			}
		})
	}
}
