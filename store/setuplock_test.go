package store_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// TestOpenWaitsForAnotherSetup: while another process sets a new store up
// (it holds the setup lock, and has begun writing the still empty file),
// Open waits for it instead of failing. Without the lock, Open's own
// switch to WAL mode failed at once with "database is locked": SQLite asks
// for that lock without calling the busy handler. So of processes started
// together, one now and then exited at once.
func TestOpenWaitsForAnotherSetup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	unlock, err := store.LockSetup(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	other := mustExec(t, path, "BEGIN IMMEDIATE")
	done := make(chan error, 1)
	go func() {
		s, err := store.Open(context.Background(), path)
		if err == nil {
			err = s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Open during another process's setup = %v; want it to wait for that setup", err)
	case <-time.After(500 * time.Millisecond): // time for Open to reach the file, had it not waited
	}
	for _, sql := range []string{"COMMIT", "PRAGMA journal_mode = WAL"} {
		if err := sqlitex.ExecuteTransient(other, sql, nil); err != nil {
			t.Fatal(err)
		}
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("Open after the other setup = %v; want no error", err)
	}
}

// A process that still cannot open after the bounded wait gives up with
// one line naming the lock it waited for, leaves the store as it was, and
// opens once the lock is gone.
func TestOpenGivesUpNamingTheLock(t *testing.T) {
	tests := []struct {
		name string
		hold func(t *testing.T, path string) (release func())
		want string // the error after "store: open <path>: ", up to the time waited
	}{
		{"another setup", func(t *testing.T, path string) func() {
			unlock, err := store.LockSetup(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			return unlock
		}, fmt.Sprintf("process %d still holds %%s-lock, setting up the same store, after", os.Getpid())},
		{"another write", func(t *testing.T, path string) func() {
			s := mustOpenPath(t, path)
			mustApply(t, s, newBatch("kept"))
			conn := mustExec(t, path, "BEGIN IMMEDIATE", "DELETE FROM sessions")
			return func() {
				if err := sqlitex.ExecuteTransient(conn, "ROLLBACK", nil); err != nil {
					t.Fatal(err)
				}
			}
		}, "another process held the store's write lock for"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			release := tc.hold(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			s, err := store.Open(ctx, path)
			if err == nil {
				s.Close()
				t.Fatal("Open while another process holds the lock = nil error; want it to give up")
			}
			want := "store: open " + path + ": " + strings.ReplaceAll(tc.want, "%s", path)
			waited, ok := strings.CutPrefix(err.Error(), want+" ")
			if _, perr := time.ParseDuration(waited); !ok || perr != nil {
				t.Errorf("Open = %q; want %q and the time waited", err, want)
			}
			release()
			s = mustOpenPath(t, path)
			if tc.name == "another write" {
				mustDetail(t, s, "kept")
			}
		})
	}
}

// mustExec opens a plain connection to the file at path and runs sqls on
// it, as another process would; the connection closes when the test ends.
func mustExec(t *testing.T, path string, sqls ...string) *sqlite.Conn {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, sql := range sqls {
		if err := sqlitex.ExecuteTransient(conn, sql, nil); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// TestTwoProcessesMigrateAnOldStore opens a store left by the previous
// schema version from two processes (this test binary, see
// TestOpenProcess) at the same moment, several times: the last migration
// runs once (a second run would fail on its CREATE TABLE, and that
// process's Open with it), user_version ends at this build's count, and
// both processes write.
func TestTwoProcessesMigrateAnOldStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	n := store.Migrations()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "s.db")
		if err := store.CreateAtVersion(context.Background(), path, n-1); err != nil {
			t.Fatal(err)
		}
		if v := userVersion(t, path); v != n-1 {
			t.Fatalf("user_version of the old store = %d; want %d", v, n-1)
		}
		mustRunOpenProcesses(t, path, []string{"p0", "p1"})
		if v := userVersion(t, path); v != n {
			t.Fatalf("round %d: user_version = %d; want %d", round, v, n)
		}
		s := mustOpenPath(t, path)
		for _, sid := range []string{"p0", "p1"} {
			mustDetail(t, s, sid)
		}
	}
}

// mustRunOpenProcesses runs one TestOpenProcess per session on the store
// at path, all released at the same moment, and wants each to succeed.
func mustRunOpenProcesses(t *testing.T, path string, sessions []string) {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	var gates []io.WriteCloser
	for _, sid := range sessions {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORE_TEST_PROCESS_DB="+path, "STORE_TEST_PROCESS_SESSION="+sid)
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs, gates = append(cmds, cmd), append(outs, out), append(gates, gate)
	}
	for _, g := range gates {
		g.Close() // every process opens the store now
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process writing %s = %v; output:\n%s", sessions[i], err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestOpenProcess is one process of TestTwoProcessesMigrateAnOldStore: it
// waits for its stdin to close, opens the store and writes a session.
func TestOpenProcess(t *testing.T) {
	path := os.Getenv("STORE_TEST_PROCESS_DB")
	if path == "" {
		t.Skip("a process of TestTwoProcessesMigrateAnOldStore")
	}
	if n, err := strconv.ParseInt(os.Getenv("STORE_TEST_BUILD_CHUNK"), 10, 64); err == nil {
		store.SetBuildChunk(t, n)
	}
	io.Copy(io.Discard, os.Stdin)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustApply(t, s, newBatch(os.Getenv("STORE_TEST_PROCESS_SESSION")))
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v int
	err = sqlitex.ExecuteTransient(conn, "PRAGMA user_version", &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { v = st.ColumnInt(0); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
