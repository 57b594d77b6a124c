package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// mustBuild builds this command once per test run, for tests that need
// real processes.
func mustBuild(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "service-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "service")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// proc is the service binary running as a server.
type proc struct {
	base string
	out  *syncBuffer
	cmd  *exec.Cmd
}

func startServer(t *testing.T, bin, home, db string) *proc {
	t.Helper()
	port := freePort(t)
	p := &proc{base: fmt.Sprintf("http://127.0.0.1:%d", port), out: &syncBuffer{}}
	p.cmd = exec.Command(bin, "serve", "--port", strconv.Itoa(port), "--db", db)
	p.cmd.Env = append(os.Environ(), "HOME="+home)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		p.cmd.Wait()
	})
	waitListening(t, port, p.out)
	return p
}

func batchJSON(sid string, seq int) []byte {
	b := map[string]any{
		"schema_version": "1.2",
		"session": map[string]any{
			"id": sid, "agent": map[string]any{"kind": "multi", "version": "1"},
			"workspace": map[string]any{"root": "/w"}, "started_at": "2026-01-02T10:00:00Z",
		},
		"segments": []any{map[string]any{"index": 0, "start_reason": "start", "started_at": "2026-01-02T10:00:00Z", "source_files": []any{}}},
		"actors":   []any{map[string]any{"id": "root", "type": "root"}},
		"turns": []any{map[string]any{"id": "t1", "session_id": sid, "segment_index": 0, "actor_id": "root",
			"index": 1, "started_at": "2026-01-02T10:00:00Z", "step_ids": []any{}}},
		"steps": []any{map[string]any{
			"id": fmt.Sprintf("step-%d", seq), "session_id": sid, "segment_index": 0, "turn_id": "t1", "actor_id": "root",
			"seq": seq, "at": "2026-01-02T10:00:01Z", "type": "command", "decision": "accepted", "outcome": "ok",
			"content_status": "inline", "channels": []any{}, "flags": []any{},
			"payload": map[string]any{"command": fmt.Sprintf("echo %d", seq), "stdout": strings.Repeat("out ", 200)},
		}},
	}
	out, _ := json.Marshal(b)
	return out
}

func pushTo(base, token string, body []byte) (int, string, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/api/ingest", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestSeveralProcessesOneStore runs two servers, an import and the terminal
// delete on one store file at once: no client sees an error, nothing acknowledged is
// lost, and the first server's stream reports every write, whichever
// process made it.
func TestSeveralProcessesOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := mustBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "store.db")
	a := startServer(t, bin, home, db)
	b := startServer(t, bin, home, db)
	token := ingestToken(t, home)

	const doomed = 8
	for i := range doomed {
		if code, body, err := pushTo(a.base, token, batchJSON(fmt.Sprintf("doomed-%d", i), 0)); err != nil || code != 201 {
			t.Fatalf("setup push = %d %s %v", code, body, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evMu sync.Mutex
	seen := map[string][]string{} // session -> updated_at of each change
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == "event: ready" {
				close(ready)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "{}" {
				var c struct {
					SessionID string `json:"session_id"`
					UpdatedAt string `json:"updated_at"`
				}
				json.Unmarshal([]byte(data), &c)
				evMu.Lock()
				seen[c.SessionID] = append(seen[c.SessionID], c.UpdatedAt)
				evMu.Unlock()
			}
		}
	}()
	<-ready

	type ack struct {
		session string
		seq     int
	}
	var (
		mu     sync.Mutex
		acks   []ack
		errs   []string
		wg     sync.WaitGroup
		pushes = 25
	)
	writer := func(base, sid string) {
		defer wg.Done()
		for seq := range pushes {
			code, body, err := pushTo(base, token, batchJSON(sid, seq))
			mu.Lock()
			if err != nil || (code != 200 && code != 201) {
				errs = append(errs, fmt.Sprintf("push %s/%d to %s = %d %s %v", sid, seq, base, code, body, err))
			} else {
				acks = append(acks, ack{sid, seq})
			}
			mu.Unlock()
		}
	}
	for i := range 3 {
		wg.Add(2)
		go writer(a.base, fmt.Sprintf("via-a-%d", i))
		go writer(b.base, fmt.Sprintf("via-b-%d", i))
	}
	// An import, a third writing process, of real Claude Code transcripts.
	samples, _ := filepath.Abs("../../adapters/claudecode/testdata")
	wg.Add(1)
	go func() {
		defer wg.Done()
		cmd := exec.Command(bin, "import", "claude-code", samples, "--db", db)
		cmd.Env = append(os.Environ(), "HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "imported") {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("service import: %v: %s", err, out))
			mu.Unlock()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range doomed {
			sid := fmt.Sprintf("doomed-%d", i)
			out, err := exec.Command(bin, "delete", sid, "--db", db).CombinedOutput()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("service delete %s: %v: %s", sid, err, out))
				mu.Unlock()
			}
		}
	}()
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}

	for _, k := range acks {
		resp, err := http.Get(a.base + "/api/sessions/" + k.session)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), fmt.Sprintf(`"id":"step-%d"`, k.seq)) {
			t.Errorf("acknowledged step %d of %s is missing", k.seq, k.session)
		}
	}
	time.Sleep(time.Second) // two polls
	evMu.Lock()
	defer evMu.Unlock()
	for i := range 3 {
		for _, sid := range []string{fmt.Sprintf("via-a-%d", i), fmt.Sprintf("via-b-%d", i)} {
			resp, _ := http.Get(a.base + "/api/sessions/" + sid)
			var d struct {
				UpdatedAt string `json:"updated_at"`
			}
			json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
			got := seen[sid]
			if len(got) == 0 || got[len(got)-1] != d.UpdatedAt {
				t.Errorf("changes seen for %s = %v; want the last to be its final updated_at %s", sid, got, d.UpdatedAt)
			}
		}
	}
	for i := range doomed {
		sid := fmt.Sprintf("doomed-%d", i)
		if len(seen[sid]) == 0 {
			t.Errorf("no change event for %s, deleted by another process", sid)
		}
		if resp, _ := http.Get(b.base + "/api/sessions/" + sid); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET deleted %s = %d; want 404", sid, resp.StatusCode)
		}
	}
	var l struct {
		Agents []struct{ Kind string } `json:"agents"`
	}
	if resp, err := http.Get(a.base + "/api/sessions"); err == nil {
		json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
	}
	if !strings.Contains(fmt.Sprint(l.Agents), "claude-code") {
		t.Errorf("agents after the import = %v; want the imported claude-code sessions listed", l.Agents)
	}
	imported := 0
	for sid := range seen {
		if !strings.HasPrefix(sid, "via-") && !strings.HasPrefix(sid, "doomed-") {
			imported++
		}
	}
	if imported == 0 {
		t.Error("no change event for any session written by the import process")
	}
	if t.Failed() {
		t.Logf("server a:\n%s\nserver b:\n%s", a.out, b.out)
	}
}
