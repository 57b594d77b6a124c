package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agentreview/service/store"
)

// spotterSession is the session of the short Claude Code sample.
const spotterSession = "55604662-cf2a-4331-851a-ec234028f8ca"

// claudeTranscript copies the short Claude Code sample to a projects folder
// under dir and returns its path.
func claudeTranscript(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("../../adapters/claudecode/testdata/spotter/short.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "projects", "-home-marco-projects-spotter", spotterSession+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func hookPayload(event, transcript string) string {
	b, _ := json.Marshal(map[string]any{
		"session_id": spotterSession, "transcript_path": transcript, "cwd": "/home/marco/projects/spotter",
		"hook_event_name": event, "permission_mode": "default", "stop_hook_active": false,
	})
	return string(b)
}

// runHook runs `service hook --db db` with stdin and wants exit 0 and no
// output at all.
func runHook(t *testing.T, db, stdin string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := runWithStdin(context.Background(), []string{"hook", "--db", db}, strings.NewReader(stdin), &out, &errOut); err != nil {
		t.Fatalf("hook = %v; want exit 0", err)
	}
	if out.Len() > 0 || errOut.Len() > 0 {
		t.Errorf("hook printed %q and %q; want nothing", out.String(), errOut.String())
	}
}

func sessionCount(t *testing.T, db string) int {
	t.Helper()
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return 0
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.List(context.Background(), store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Sessions)
}

func TestHookStopImportsTheSession(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	transcript := claudeTranscript(t, dir)
	runHook(t, db, hookPayload("Stop", transcript))

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Detail(context.Background(), spotterSession, store.DetailQuery{})
	st.Close()
	if err != nil {
		t.Fatalf("Detail = %v; want the session the Stop hook named", err)
	}
	if len(d.Steps) == 0 || d.Source != "import:claude-code" || d.Metrics != nil {
		t.Errorf("session %+v with %d steps; want its steps, no metrics without telemetry", d.Session, len(d.Steps))
	}

	// The next turn's Stop with nothing new writes nothing.
	stamp := latestStamp(t, db)
	runHook(t, db, hookPayload("Stop", transcript))
	if again := latestStamp(t, db); again != stamp {
		t.Errorf("a Stop with an unchanged transcript wrote the store")
	}
	if _, err := os.Stat(filepath.Join(dir, "hook.log")); err == nil {
		b, _ := os.ReadFile(filepath.Join(dir, "hook.log"))
		t.Errorf("hook.log written: %s", b)
	}
}

func TestHookBadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	transcript := claudeTranscript(t, dir)
	cases := []struct {
		name, stdin, logged string
	}{
		{"not JSON", "{not json", "not a JSON object"},
		{"empty", "", "not a JSON object"},
		{"no transcript path", `{"session_id":"s","hook_event_name":"Stop"}`, "no session id or transcript path"},
		{"an event it does not handle", hookPayload("UserPromptSubmit", transcript), ""},
		{"a transcript not written yet", hookPayload("SessionStart", filepath.Join(dir, "none.jsonl")), ""},
		{"over 16 MB", `{"session_id":"s","hook_event_name":"Stop","x":"` + strings.Repeat("x", maxHookInput) + `"}`, "hook input larger than 16777216 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub := t.TempDir()
			db := filepath.Join(sub, "s.db")
			runHook(t, db, c.stdin)
			if n := sessionCount(t, db); n != 0 {
				t.Errorf("%d sessions written; want none", n)
			}
			logged, _ := os.ReadFile(filepath.Join(sub, "hook.log"))
			if c.logged == "" && len(logged) > 0 || !strings.Contains(string(logged), c.logged) {
				t.Errorf("hook.log = %q; want %q", logged, c.logged)
			}
		})
	}
}

// With the store locked by another writer the hook gives up within its
// bound, still exits 0 and prints nothing.
func TestHookGivesUpWhenTheStoreIsBusy(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	st, err := store.Open(context.Background(), db) // create it
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sqlitex.ExecuteTransient(conn, "BEGIN IMMEDIATE", nil); err != nil {
		t.Fatal(err)
	}
	defer sqlitex.ExecuteTransient(conn, "ROLLBACK", nil)

	saved := hookTimeout
	hookTimeout = 500 * time.Millisecond
	defer func() { hookTimeout = saved }()
	start := time.Now()
	runHook(t, db, hookPayload("Stop", claudeTranscript(t, dir)))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("hook took %s with a busy store; want it to give up after %s", took, hookTimeout)
	}
	logged, _ := os.ReadFile(filepath.Join(dir, "hook.log"))
	t.Logf("hook.log: %s", logged)
	if len(logged) == 0 {
		t.Error("hook.log empty; want the reason it gave up")
	}
}

// TestHookWritesOneSessionAtMost calls the hook with a transcript whose
// folder holds subagent files naming many other sessions: one call writes
// the session it names and no other.
func TestHookWritesOneSessionAtMost(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	transcript := claudeTranscript(t, dir)
	sample, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		other := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		b := strings.ReplaceAll(string(sample), spotterSession, other)
		if err := os.WriteFile(filepath.Join(filepath.Dir(transcript), fmt.Sprintf("agent-%d.jsonl", i)), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runHook(t, db, hookPayload("Stop", transcript))
	if n := sessionCount(t, db); n != 1 {
		t.Errorf("one Stop hook wrote %d sessions; want 1", n)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "captures")); len(entries) != 1 {
		t.Errorf("one Stop hook made %d capture folders; want 1", len(entries))
	}
}
