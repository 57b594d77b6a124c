//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// lockedServe starts serve on a store held closed by its setup lock, as
// another process's setup would hold it, and returns once the port
// accepts connections: the port, a func that lets the store open, the
// cancel of serve's context, serve's result and its output.
func lockedServe(t *testing.T) (port int, unlock func(), cancel func(), done <-chan error, out *syncBuffer) {
	t.Helper()
	withHome(t)
	db := filepath.Join(t.TempDir(), "s.db")
	lock, err := os.OpenFile(db+"-lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	port = freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out = &syncBuffer{}
	result := make(chan error, 1)
	go func() { result <- run(ctx, []string{"serve", "--port", strconv.Itoa(port), "--db", db}, out, out) }()
	waitListening(t, port, out)
	unlock = func() {
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}
	return port, unlock, cancel, result, out
}

// TestServeBindsBeforeTheStoreOpens: the port is bound before the store
// opens, so no other process can take it meanwhile; a request made then
// waits in the listen queue and is answered once the store is open.
func TestServeBindsBeforeTheStoreOpens(t *testing.T) {
	port, unlock, cancel, done, out := lockedServe(t)
	if strings.Contains(out.String(), "listening on") {
		t.Fatalf("serve says it serves while its store is locked; output:\n%s", out)
	}
	// The request is sent whole before the store may open.
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	unlock()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("GET /api/sessions sent while the store was locked = %v, %v; want 200 once it opened", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve = %v; want a clean stop", err)
	}
}

// TestServeStoppedWhileTheStoreOpens: a stop (SIGINT, SIGTERM) while the
// store is still opening is a clean stop, not an error.
func TestServeStoppedWhileTheStoreOpens(t *testing.T) {
	_, _, cancel, done, out := lockedServe(t)
	cancel()
	if err := <-done; err != nil || !strings.Contains(out.String(), "service stopped") {
		t.Errorf("serve stopped while its store opened = %v, printed %q; want nil and \"service stopped\"", err, out.String())
	}
}
