package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/opencode/opencodetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

const (
	opencodeSamples = "../opencode/testdata/storage-derived/storage"
	opencodeSession = "ses_450b70e67ffeoaXH496F8i0fVA"
)

// startOpencodeCapture runs a capture that watches one opencode data
// folder and waits until the sample session is stored.
func startOpencodeCapture(t *testing.T, data string) *harness {
	t.Helper()
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{opencode.Kind: {data}}}
	runCapture(t, h.c)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return stepCount(t, h, opencodeSession) == 6, "the sample session is not stored with its 6 steps"
	})
	return h
}

// TestOpencodeDatabaseUpdatesLive writes a new prompt and a command to
// opencode.db the way opencode does (one immediate transaction, WAL
// mode, no busy wait: capture must hold no lock), and sees the session
// grow in the store.
func TestOpencodeDatabaseUpdatesLive(t *testing.T) {
	data := t.TempDir()
	db := opencodetest.MustDB(t, opencodeSamples, data, true)
	h := startOpencodeCapture(t, data)

	conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(0)
	now := time.Now().UnixMilli()
	err = func() (err error) {
		defer sqlitex.Transaction(conn)(&err)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_bb0000000001AAAAAAAAAAAAAA', ?1, ?2, ?2, '{"role":"user","time":{"created":1768172400000},"agent":"plan"}')`, nil},
			{`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_bb0000000001AAAAAAAAAAAAAA', 'msg_bb0000000001AAAAAAAAAAAAAA', ?1, ?2, ?2, '{"type":"text","text":"now list the files"}')`, nil},
			{`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_bb0000000002AAAAAAAAAAAAAA', ?1, ?2, ?2, '{"role":"assistant","time":{"created":1768172401000},"cost":0.01,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}')`, nil},
			{`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_bb0000000002AAAAAAAAAAAAAA', 'msg_bb0000000002AAAAAAAAAAAAAA', ?1, ?2, ?2, '{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a\nb","metadata":{"exit":0,"output":"a\nb"},"time":{"start":1768172402000}}}')`, nil},
		} {
			if err := sqlitex.Execute(conn, q.sql, &sqlitex.ExecOptions{Args: []any{opencodeSession, now}}); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		t.Fatalf("opencode's write = %v; want it to go through while capture runs", err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, opencodeSession)
		return n == 8, fmt.Sprintf("%d steps after the write; want 8", n)
	})
	d, _ := detail(t, h.st, opencodeSession)
	st, n := stepByID(d, "prt_bb0000000002AAAAAAAAAAAAAA")
	if n != 1 || st.Type != "command" || deref(st.Payload.Command) != "ls" || deref(st.Payload.Stdout) != "a\nb" {
		t.Errorf("new step = %+v (found %d); want the command ls with its output", st, n)
	}
	if last := d.Turns[len(d.Turns)-1]; last.Mode != "plan" {
		t.Errorf("new turn mode = %q; want plan", last.Mode)
	}
}

// TestOpencodeStorageUpdatesLive adds a part file to a message of the 1.1
// storage layout and sees the session grow in the store.
func TestOpencodeStorageUpdatesLive(t *testing.T) {
	data := t.TempDir()
	copyDir(t, opencodeSamples, filepath.Join(data, "storage"))
	h := startOpencodeCapture(t, data)

	msg := "msg_baf491bb5001iGYYlAIx76nKgI"
	part := filepath.Join(data, "storage", "part", msg, "prt_baf4999990001zzzzzzzzzzzzz.json")
	save(t, part, []byte(`{"id":"prt_baf4999990001zzzzzzzzzzzzz","sessionID":"`+opencodeSession+`","messageID":"`+msg+`","type":"text","text":"One more thing."}`))
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, opencodeSession)
		return n == 7, fmt.Sprintf("%d steps after the new part file; want 7", n)
	})
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
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

// TestOpencodeReadsDoNotRetrigger checks that capture's own reads of
// opencode.db (which write to its -shm file) do not count as changes.
func TestOpencodeReadsDoNotRetrigger(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/d/opencode.db", true},
		{"/d/opencode.db-wal", true},
		{"/d/opencode.db-shm", false},
		{"/d/opencode-beta.db", true},
		{"/d/other.db", false},
		{"/d/storage/part/msg_1/prt_1.json", true},
		{"/d/storage/project/p.json", false},
	} {
		if got := opencodeFile(tc.path); got != tc.want {
			t.Errorf("opencodeFile(%s) = %v; want %v", tc.path, got, tc.want)
		}
	}
}
