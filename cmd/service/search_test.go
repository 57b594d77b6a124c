package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// `service search` and `service reindex` work on the store file beside a
// running server, as the real binary.
func TestSearchCommandBesideServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := mustBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "store.db")
	srv := startServer(t, bin, home, db)
	token := ingestToken(t, home)
	// Agent content with an escape sequence: it must not reach the terminal.
	body := bytes.Replace(batchJSON("s1", 1), []byte(`"stdout":"`), []byte(`"stdout":"\u001b[2J panic in handlers/auth_test.go `), 1)
	if code, out, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
		t.Fatalf("push = %d %s %v; want 201", code, out, err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("search", "auth_test.go", "--db", db)
	if err != nil || !strings.Contains(out, "s1  2026-01-02T10:00:00Z  multi") || !strings.Contains(out, "#1 command") || !strings.Contains(out, "auth_test.go") {
		t.Errorf("service search auth_test.go = %v\n%s\nwant session s1 and step #1 with the snippet", err, out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("service search printed an escape sequence of agent content: %q", out)
	}

	out, err = run("search", "panic type:command", "--json", "--db", db)
	var res store.SearchResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) != 1 || res.Hits[0].SessionID != "s1" || res.Hits[0].Seq != 1 {
		t.Errorf("service search --json = %v\n%s\nwant one hit, s1 step 1", err, out)
	}

	out, err = run("search", `"unclosed`, "--db", db)
	if err == nil || !strings.Contains(out, `search query: has a " that is never closed`) {
		t.Errorf("service search with a malformed query = %v\n%s\nwant a failure naming the problem", err, out)
	}

	// A second session with the word: --limit 1 prints the cursor, and
	// --after it gives the other hit.
	body = bytes.Replace(batchJSON("s2", 1), []byte(`"stdout":"`), []byte(`"stdout":"panic again `), 1)
	if code, out, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
		t.Fatalf("push = %d %s %v; want 201", code, out, err)
	}
	out, err = run("search", "panic", "--limit", "1", "--db", db)
	_, cursor, _ := strings.Cut(out, "go on with --after ")
	cursor, _, _ = strings.Cut(cursor, ")")
	if err != nil || strings.Count(out, "#1 command") != 1 || cursor == "" {
		t.Fatalf("service search --limit 1 = %v\n%s\nwant one hit and a cursor to go on with", err, out)
	}
	more, err := run("search", "panic", "--limit", "1", "--after", cursor, "--db", db)
	first, _, _ := strings.Cut(out, " ")
	second, _, _ := strings.Cut(more, " ")
	if err != nil || strings.Count(more, "#1 command") != 1 || strings.Contains(more, "--after") || first == second {
		t.Errorf("service search --after %s = %v\n%s\nwant the other session's hit and no cursor (first page: %s)", cursor, err, more, out)
	}

	// --session searches that session alone.
	for _, sid := range []string{"s1", "s2"} {
		out, err := run("search", "panic", "--json", "--session", sid, "--db", db)
		var res store.SearchResult
		if err != nil || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) != 1 || res.Hits[0].SessionID != sid {
			t.Errorf("service search panic --session %s = %v\n%s\nwant its one hit alone", sid, err, out)
		}
	}

	out, err = run("reindex", "--db", db)
	if err != nil || !strings.Contains(out, "search index rebuilt: 4 sessions and steps") {
		t.Errorf("service reindex = %v\n%s", err, out)
	}
	if out, err := run("search", "panic", "--db", db); err != nil || !strings.Contains(out, "#1 command") {
		t.Errorf("service search after reindex = %v\n%s", err, out)
	}

	// A message's hit names its role after its type, and its snippet goes
	// on past the role its indexed text begins with.
	var msg map[string]any
	if err := json.Unmarshal(batchJSON("s3", 1), &msg); err != nil {
		t.Fatal(err)
	}
	reply := map[string]any{"role": "assistant", "text": "The flaky handler is mended now."}
	step := msg["steps"].([]any)[0].(map[string]any)
	step["type"], step["decision"], step["payload"] = "message", "n/a", reply
	body, _ = json.Marshal(msg)
	if code, out, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
		t.Fatalf("push = %d %s %v; want 201", code, out, err)
	}
	want := fmt.Sprintf("#1 message %s ok  %s", reply["role"], reply["text"])
	if out, err := run("search", "flaky", "--db", db); err != nil || !strings.Contains(out, want) {
		t.Errorf("service search flaky = %v\n%s\nwant the line %q", err, out, want)
	}

	// Another tool's hit names the tool.
	if err := json.Unmarshal(batchJSON("s4", 1), &msg); err != nil {
		t.Fatal(err)
	}
	fetch := map[string]any{"tool_name": "WebFetch", "raw": map[string]any{"url": "https://example.com/unmended"}}
	step = msg["steps"].([]any)[0].(map[string]any)
	step["type"], step["payload"] = "other", fetch
	body, _ = json.Marshal(msg)
	if code, out, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
		t.Fatalf("push = %d %s %v; want 201", code, out, err)
	}
	want = fmt.Sprintf("#1 other %s ok", fetch["tool_name"])
	if out, err := run("search", "unmended", "--db", db); err != nil || !strings.Contains(out, want) {
		t.Errorf("service search unmended = %v\n%s\nwant the line %q", err, out, want)
	}

	// A step's notes print under its hit, the first store.MaxHitNotes of
	// them, with how many more; note: finds the steps by them.
	texts := []string{"Flaky \x1b[2J twice", "Second look", "Third", "Fourth", "Fifth"}
	for _, text := range texts {
		note, _ := json.Marshal(map[string]any{"seq": 1, "author": "Ann", "text": text})
		req, _ := http.NewRequest(http.MethodPost, srv.base+"/api/sessions/s2/notes", bytes.NewReader(note))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST note = %v %v; want 201", resp, err)
		}
		resp.Body.Close()
	}
	out, err = run("search", "note:flaky", "--db", db)
	for _, text := range texts[:store.MaxHitNotes] {
		if want := "note by Ann: " + terminalSafe(text); !strings.Contains(out, want) {
			t.Errorf("service search note:flaky = %v\n%s\nwant the line %q", err, out, want)
		}
	}
	if want := fmt.Sprintf("(and %d more on the step)", len(texts)-store.MaxHitNotes); err != nil || !strings.Contains(out, want) ||
		strings.Contains(out, texts[store.MaxHitNotes]) || !strings.HasPrefix(out, "s2 ") || strings.Contains(out, "\x1b") {
		t.Errorf("service search note:flaky = %v\n%s\nwant s2's step alone, %q and no escape", err, out, want)
	}

	// A failed step's error prints under its hit, on one line.
	if err := json.Unmarshal(batchJSON("s5", 1), &msg); err != nil {
		t.Fatal(err)
	}
	step = msg["steps"].([]any)[0].(map[string]any)
	stepErr := map[string]any{"type": "exit_code", "message": "Exit code 1\nFAIL\tbroken_pkg \x1b[31m"}
	step["outcome"], step["error"] = "failed", stepErr
	body, _ = json.Marshal(msg)
	if code, out, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
		t.Fatalf("push = %d %s %v; want 201", code, out, err)
	}
	want = fmt.Sprintf("      error %s: %s\n", stepErr["type"], terminalSafe(stepErr["message"].(string)))
	if out, err := run("search", "status:failed", "--db", db); err != nil || !strings.Contains(out, want) || strings.Contains(out, "\x1b") || strings.Contains(out, "[31m") {
		t.Errorf("service search status:failed = %v\n%s\nwant the line %q", err, out, want)
	}
}
