//go:build linux

package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// On a full disk, ingest and delete answer 507 naming the cause, the store
// keeps everything it had, reads keep working, and writes succeed again
// once space returns. The store sits on a small tmpfs filled for real.
func TestDiskFull(t *testing.T) {
	dir := mustMountTmpfs(t, "8m")
	st := mustOpenStore(t, filepath.Join(dir, "store.db"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewHub(st, log)
	t.Cleanup(hub.Close)
	s := &testService{t: t, store: st, hub: hub,
		handler: Routes(Deps{Store: st, Hub: hub, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log})}
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	do := func(method, path string, body []byte) (int, string) {
		t.Helper()
		code, _, b := send(t, srv, method, path, body)
		return code, b
	}

	s.mustPush(newBatch("keep"), http.StatusCreated)
	// A delete leaves the write-ahead log empty, so the next write must
	// grow a file.
	s.mustPush(newBatch("scratch"), http.StatusCreated)
	if code, body := do(http.MethodDelete, "/api/sessions/scratch", nil); code != http.StatusOK {
		t.Fatalf("DELETE scratch = %d %s; want 200", code, body)
	}
	filler := mustFillDisk(t, dir)

	big := newBatch("new")
	big["steps"].(arr)[1].(obj)["payload"].(obj)["stdout"] = strings.Repeat("a line of build output\n", 50_000)
	update := newBatch("keep")
	update["steps"].(arr)[1].(obj)["payload"].(obj)["stdout"] = strings.Repeat("changed output\n", 50_000)
	before := s.snapshot()
	for _, c := range []struct {
		name, method, path string
		body               []byte
	}{
		{"push of a new session", http.MethodPost, "/api/ingest", mustJSON(t, big)},
		{"push to a stored session", http.MethodPost, "/api/ingest", mustJSON(t, update)},
		{"delete", http.MethodDelete, "/api/sessions/keep", nil},
	} {
		code, body := do(c.method, c.path, c.body)
		var e errorBody
		json.Unmarshal([]byte(body), &e)
		if code != http.StatusInsufficientStorage || !strings.HasPrefix(e.Error, "disk full: ") {
			t.Errorf("%s on a full disk = %d %s; want 507 with a disk full error", c.name, code, body)
		}
	}
	if s.snapshot() != before {
		t.Error("the refused writes changed the store")
	}
	for _, path := range []string{"/api/sessions", "/api/sessions/keep", "/api/sessions/keep/export", "/session?id=keep", "/"} {
		if code, body := do(http.MethodGet, path, nil); code != http.StatusOK {
			t.Errorf("GET %s on a full disk = %d %.200s; want 200", path, code, body)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, body := do(http.MethodPost, "/api/ingest", mustJSON(t, big)); code != http.StatusCreated {
		t.Errorf("push once space returned = %d %s; want 201", code, body)
	}
	if code, body := do(http.MethodDelete, "/api/sessions/keep", nil); code != http.StatusOK {
		t.Errorf("DELETE once space returned = %d %s; want 200", code, body)
	}
	if code, body := do(http.MethodPost, "/api/ingest", mustJSON(t, newBatch("keep"))); code != http.StatusGone {
		t.Errorf("push of the deleted session = %d %s; want 410", code, body)
	}
}

// mustMountTmpfs mounts a tmpfs of the given size (as mount's size=) on a
// temporary folder, unmounted when the test ends. It needs root, as CI runs.
func mustMountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount a %s tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// mustFillDisk writes a file in dir until the file system has no space
// left, and returns its path.
func mustFillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	// The last chunk may have stopped short of the last free bytes.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	return path
}
