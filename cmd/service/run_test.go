package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write from the server goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// withHome points HOME at a fresh folder and clears the variables the
// service reads.
func withHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SERVICE_INGEST_TOKEN_FILE", "")
	os.Unsetenv("SERVICE_INGEST_TOKEN_FILE")
	t.Setenv("PORT", "")
	os.Unsetenv("PORT")
	return home
}

func waitListening(t *testing.T, port int, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not listening on %d; output:\n%s", port, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitServing waits for the server on port to accept connections and to
// say that it serves (the port is bound before the store opens, so a
// connection may wait in the listen queue until then).
func waitServing(t *testing.T, port int, out *syncBuffer) {
	t.Helper()
	waitListening(t, port, out)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "listening on"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server on %d did not say it serves; output:\n%s", port, out)
		}
	}
}

func TestServeDefaultsTokenAndShutdown(t *testing.T) {
	home := withHome(t)
	port := freePort(t)
	t.Setenv("PORT", strconv.Itoa(port))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, &out, &out) }()
	waitServing(t, port, &out)

	tokenFile := filepath.Join(home, ".service", "ingest-token")
	for _, want := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/api/ingest", port), tokenFile, fmt.Sprintf("listening on http://127.0.0.1:%d", port),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve printed %q; want it to include %q", out.String(), want)
		}
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(home, ".service"): 0o700,
		tokenFile:                       0o600,
		filepath.Join(home, ".service", "store.db"): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("stat %s: %v", path, err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v; want %v", path, st.Mode().Perm(), want)
		}
	}
	tok, _ := os.ReadFile(tokenFile)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}\n?$`).Match(tok) {
		t.Errorf("token file holds %q; want 43 base64url characters", tok)
	}

	// An open stream must end when the server stops.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/events", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	<-lines // retry: 2000
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run(serve) = %v after shutdown; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of the signal")
	}
	for range lines {
	}
}

func TestServeRefusesShortTokenFile(t *testing.T) {
	withHome(t)
	path := filepath.Join(t.TempDir(), "token")
	t.Setenv("SERVICE_INGEST_TOKEN_FILE", path)
	os.WriteFile(path, []byte("short-token\n"), 0o600)
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--port", strconv.Itoa(freePort(t))}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "fewer than 32") {
		t.Errorf("serve with an 11-character token file = %v; want an error naming %s", err, path)
	}
}

func TestLoadOrCreateToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "token")
	first, _, err := loadOrCreateToken(path)
	if err != nil || len(first) != 43 {
		t.Fatalf("loadOrCreateToken(new) = %q, %v; want 43 characters", first, err)
	}
	again, _, err := loadOrCreateToken(path)
	if err != nil || again != first {
		t.Errorf("loadOrCreateToken(existing) = %q, %v; want the same token %q", again, err, first)
	}
	other, _, _ := loadOrCreateToken(filepath.Join(dir, "other"))
	if other == first {
		t.Error("two new token files hold the same token")
	}
	exact := strings.Repeat("k", 32)
	os.WriteFile(filepath.Join(dir, "exact"), []byte(exact+"\n"), 0o600)
	if got, _, err := loadOrCreateToken(filepath.Join(dir, "exact")); err != nil || got != exact {
		t.Errorf("a 32-character token file = %q, %v; want it accepted", got, err)
	}
}

func TestPortFlagWinsOverEnv(t *testing.T) {
	withHome(t)
	flagPort, envPort := freePort(t), freePort(t)
	t.Setenv("PORT", strconv.Itoa(envPort))
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--port", strconv.Itoa(flagPort), "--db", filepath.Join(t.TempDir(), "s.db")}, &out, &out)
	}()
	waitListening(t, flagPort, &out)
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", envPort)); err == nil {
		c.Close()
		t.Errorf("listening on PORT=%d too; --port must win", envPort)
	}
	cancel()
	<-done
}

func TestDeleteCommand(t *testing.T) {
	withHome(t)
	db := filepath.Join(t.TempDir(), "s.db")
	var out bytes.Buffer
	err := run(context.Background(), []string{"delete", "nope", "--db", db}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `no session "nope"`) {
		t.Errorf("delete of an unknown id = %v; want an error naming it", err)
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &out); err != nil {
		t.Fatalf("run(--help) = %v", err)
	}
	for _, cmd := range []string{"serve", "delete"} {
		if !strings.Contains(out.String(), cmd) {
			t.Errorf("help does not list %s:\n%s", cmd, out.String())
		}
	}
}
