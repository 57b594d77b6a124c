package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/crush"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// crushSample is the real Crush database of ../shared/samples.
const crushSample = "../../../shared/samples/crush/dbos-transact-golang/.crush/crush.db"

// TestCrushDatabaseUpdatesLive copies the real sample database into a
// project's .crush folder, captures it, then writes a prompt and a reply
// the way Crush does (one transaction, WAL mode, no busy wait: capture
// must hold no lock) and sees the session grow in the store.
func TestCrushDatabaseUpdatesLive(t *testing.T) {
	const sid = "f306c145-4c83-492c-b575-739c30bbced4" // the sample's session of 4 steps
	data := filepath.Join(t.TempDir(), "project", ".crush")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(crushSample)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(data, "crush.db")
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(0)

	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{crush.Kind: {data}}}
	runCapture(t, h.c)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return stepCount(t, h, sid) == 4, "the sample session is not stored with its 4 steps"
	})

	now := time.Now().Unix()
	err = func() (err error) {
		defer sqlitex.Transaction(conn)(&err)
		for _, q := range []string{
			`INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES ('live-u', ?1, 'user', '[{"type":"text","data":{"text":"now run the tests"}}]', ?2, ?2)`,
			`INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, updated_at, finished_at) VALUES ('live-a', ?1, 'assistant', '[{"type":"tool_call","data":{"id":"call_live","name":"bash","input":"{\"command\":\"go test ./...\"}","finished":true}}]', 'gpt-5', 'openai', ?2, ?2, ?2)`,
			`INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES ('live-r', ?1, 'tool', '[{"type":"tool_result","data":{"tool_call_id":"call_live","content":"ok  pkg\n","metadata":"{}","is_error":false}}]', ?2, ?2)`,
			`UPDATE sessions SET cost = cost + 0.01, updated_at = ?2 WHERE id = ?1`,
		} {
			if err := sqlitex.Execute(conn, q, &sqlitex.ExecOptions{Args: []any{sid, now}}); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		t.Fatalf("Crush's write = %v; want it to go through while capture runs", err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == 6, fmt.Sprintf("%d steps after the write; want 6", n)
	})
	d, _ := detail(t, h.st, sid)
	st, n := stepByID(d, "call_live")
	if n != 1 || st.Type != "command" || deref(st.Payload.Command) != "go test ./..." || deref(st.Payload.Stdout) != "ok  pkg\n" {
		t.Errorf("new step = %+v (found %d); want the command with its output", st, n)
	}
}

// TestCrushReadsDoNotRetrigger checks that capture's own reads of crush.db
// (which write to its -shm file) do not count as changes.
func TestCrushReadsDoNotRetrigger(t *testing.T) {
	for path, want := range map[string]bool{
		"/p/.crush/crush.db": true, "/p/.crush/crush.db-wal": true, "/p/.crush/crush.db-shm": false,
		"/p/.crush/logs/crush.log": false, "/p/.crush/crush.json": false,
	} {
		if got := crushFile(path); got != want {
			t.Errorf("crushFile(%s) = %v; want %v", path, got, want)
		}
	}
}

// TestCrushNewProjectFollowed starts capture while Crush's projects.json
// lists no project, then adds one the way Crush does when it first runs
// in a folder (its data dir with the real sample database, and the list
// rewritten to name it): capture follows it without a restart and stores
// its sessions; a session's step count is the sample's own.
func TestCrushNewProjectFollowed(t *testing.T) {
	global := t.TempDir()
	t.Setenv("CRUSH_GLOBAL_DATA", global)
	writeList := func(projects ...map[string]any) {
		t.Helper()
		b, err := json.Marshal(map[string]any{"projects": projects})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(global, "projects.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeList()
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Follow: map[string]func() []string{crush.Kind: crush.ProjectDataDirs}}
	runCapture(t, h.c)

	sample, err := os.ReadFile(crushSample)
	if err != nil {
		t.Fatal(err)
	}
	// The sample's session of 4 steps (TestCrushDatabaseUpdatesLive).
	const sid = "f306c145-4c83-492c-b575-739c30bbced4"
	data := filepath.Join(t.TempDir(), "crush-data", "proj-1a2b")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "crush.db"), sample, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // capture is running with the empty list
	if n := stepCount(t, h, sid); n != -1 {
		t.Fatalf("session %s stored before its project was listed (%d steps)", sid, n)
	}
	writeList(map[string]any{"path": filepath.Join(t.TempDir(), "proj"), "data_dir": data, "last_accessed": time.Now().Format(time.RFC3339)})
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == 4, fmt.Sprintf("%d steps of the new project's session; want 4", n)
	})
}
