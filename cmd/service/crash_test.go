package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// crashBatch is a 20-step batch for session sid, steps seq from..from+19:
// a batch is applied whole or not at all, so after a crash either all 20
// steps are there or none.
func crashBatch(sid string, from int) []byte {
	var steps []any
	for i := from; i < from+20; i++ {
		steps = append(steps, map[string]any{
			"id": fmt.Sprintf("step-%d", i), "session_id": sid, "segment_index": 0, "turn_id": "t1", "actor_id": "root",
			"seq": i, "at": "2026-01-02T10:00:01Z", "type": "command", "decision": "accepted", "outcome": "ok",
			"content_status": "inline", "channels": []any{}, "flags": []any{},
			"payload": map[string]any{"command": fmt.Sprintf("echo %d", i), "stdout": strings.Repeat("x", 2000)},
		})
	}
	b, _ := json.Marshal(map[string]any{
		"schema_version": "1.2",
		"session": map[string]any{"id": sid, "agent": map[string]any{"kind": "crash", "version": "1"},
			"workspace": map[string]any{"root": "/w"}, "started_at": "2026-01-02T10:00:00Z"},
		"segments": []any{map[string]any{"index": 0, "start_reason": "start", "started_at": "2026-01-02T10:00:00Z", "source_files": []any{}}},
		"actors":   []any{map[string]any{"id": "root", "type": "root"}},
		"turns": []any{map[string]any{"id": "t1", "session_id": sid, "segment_index": 0, "actor_id": "root",
			"index": 1, "started_at": "2026-01-02T10:00:00Z", "step_ids": []any{}}},
		"steps": steps,
	})
	return b
}

// TestCrashLosesNothingAcknowledged kills the server with SIGKILL during
// concurrent pushes, at random moments, several times. After each restart
// every push that got a 2xx is fully there, no batch is partly applied, and
// the file passes PRAGMA integrity_check.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills real processes")
	}
	bin := mustBuild(t)
	home := t.TempDir()
	db := filepath.Join(home, "store.db")
	acked := map[string]map[int]bool{} // session -> first seq of each acknowledged batch
	var mu sync.Mutex
	for round := range 4 {
		p := startServer(t, bin, home, db)
		token := ingestToken(t, home)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 4 {
			sid := fmt.Sprintf("round%d-writer%d", round, w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for from := 0; ctx.Err() == nil; from += 20 {
					code, _, err := pushTo(p.base, token, crashBatch(sid, from))
					if err == nil && (code == http.StatusOK || code == http.StatusCreated) {
						mu.Lock()
						if acked[sid] == nil {
							acked[sid] = map[int]bool{}
						}
						acked[sid][from] = true
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(150+rand.IntN(400)) * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		stop()
		wg.Wait()
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("reopen after the crashes: %v", err)
	}
	defer st.Close()
	for sid, batches := range acked {
		d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
		if err != nil {
			t.Errorf("session %s with %d acknowledged pushes: %v", sid, len(batches), err)
			continue
		}
		have := map[int]int{}
		for _, s := range d.Steps {
			have[int(s.Seq)/20*20]++
		}
		for from := range batches {
			if have[from] != 20 {
				t.Errorf("%s: acknowledged batch at seq %d has %d of its 20 steps", sid, from, have[from])
			}
		}
		for from, n := range have {
			if n != 20 {
				t.Errorf("%s: batch at seq %d is partly applied: %d of 20 steps", sid, from, n)
			}
		}
	}
	n := 0
	for _, b := range acked {
		n += len(b)
	}
	if n == 0 {
		t.Fatal("no push was acknowledged before the kills: the test proved nothing")
	}
	t.Logf("%d acknowledged batches over 4 kills, all present", n)
	conn, err := sqlite.OpenConn(db, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var result string
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA integrity_check", &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { result += s.ColumnText(0); return nil },
	}); err != nil || result != "ok" {
		t.Errorf("integrity_check = %q, %v; want ok", result, err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ingestToken is the token the server made under home.
func ingestToken(t *testing.T, home string) string {
	t.Helper()
	return strings.TrimSpace(mustRead(t, filepath.Join(home, ".service", "ingest-token")))
}
