package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/internal/shell/shelltest"
)

// resumeLine is the command a session page offers to copy, "" for none.
var resumeLine = regexp.MustCompile(`<code id="resume-command"[^>]*>([^<]*)</code>`)

// TestServeOffersResume serves real imported sessions and a pushed one:
// the Codex session's page offers `codex resume <id>` in its folder, both
// read from the raw rollout; Cline's offers none (its tasks are an
// editor's); and the pushed Claude Code session's line, whose folder and
// id are written to break a shell, runs in a real shell as `claude
// --resume <id>` in that folder.
func TestServeOffersResume(t *testing.T) {
	home := withHome(t)
	db := filepath.Join(t.TempDir(), "store.db")
	samples := filepath.Join("..", "..", "..", "shared", "samples")
	runImportCmd(t, "codex", filepath.Join(samples, "codex"), "--db", db)
	runImportCmd(t, "cline", filepath.Join(samples, "cline"), "--db", db)

	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--port", strconv.Itoa(port), "--db", db}, &out, &out) }()
	t.Cleanup(func() { cancel(); <-done })
	waitServing(t, port, &out)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	page := func(id string) string {
		t.Helper()
		resp, err := http.Get(base + "/session?id=" + url.QueryEscape(id))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("session %s: %d %s", id, resp.StatusCode, b)
		}
		if m := resumeLine.FindSubmatch(b); m != nil {
			return html.UnescapeString(string(m[1]))
		}
		return ""
	}

	// The rollout's first line names the session and the folder it ran in.
	f, err := os.Open(filepath.Join(samples, "codex", "agentlogs_crud_rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := bufio.NewReaderSize(f, 1<<20).ReadBytes('\n')
	f.Close()
	var meta struct {
		Payload struct{ ID, Cwd string }
	}
	if err := json.Unmarshal(first, &meta); err != nil || meta.Payload.ID == "" || meta.Payload.Cwd == "" {
		t.Fatalf("the rollout's session_meta: %v", err)
	}
	if got, want := page(meta.Payload.ID), "cd "+meta.Payload.Cwd+" && codex resume "+meta.Payload.ID; got != want {
		t.Errorf("the Codex session's resume = %q, want %q", got, want)
	}
	tasks, err := os.ReadDir(filepath.Join(samples, "cline", "tasks"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the Cline sample's tasks: %v", err)
	}
	if got := page(tasks[0].Name()); got != "" {
		t.Errorf("the Cline task's resume = %q, want none", got)
	}

	// A pushed session whose folder and id a shell would misread.
	dir := filepath.Join(t.TempDir(), "it's $HOME `x`")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := "s'1 $(touch pwned)"
	example, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "batch.json"))
	if err != nil {
		t.Fatal(err)
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	batch := strings.ReplaceAll(string(example), `"demo-7f3a9c"`, quote(id))
	batch = strings.Replace(batch, `"/home/dev/projects/todo-api"`, quote(dir), 1)
	if code, body, err := pushTo(base, ingestToken(t, home), []byte(batch)); err != nil || code != http.StatusCreated {
		t.Fatalf("push: %d %s %v", code, body, err)
	}
	line := page(id)
	if line == "" {
		t.Fatal("the pushed Claude Code session offers no resume")
	}
	got, from := shelltest.Run(t, line, "claude")
	if want := []string{dir, "claude", "--resume", id}; !slices.Equal(got, want) {
		t.Errorf("sh -c %q ran %q, want %q", line, got, want)
	}
	if _, err := os.Stat(filepath.Join(from, "pwned")); err == nil {
		t.Error("the id ran as a command")
	}
}
