package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesOddTokenFiles starts serve with each kind of broken token
// file: each stops the start with one line naming the file and the fix.
func TestServeRefusesOddTokenFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"dangling symlink", func(t *testing.T, path string) {
			mustSymlink(t, filepath.Join(filepath.Dir(path), "gone"), path)
		}, "remove the link"},
		{"symlink loop", func(t *testing.T, path string) {
			mustSymlink(t, path+"-b", path)
			mustSymlink(t, path, path+"-b")
		}, "loop of symbolic links"},
		{"self link", func(t *testing.T, path string) { mustSymlink(t, path, path) }, "loop of symbolic links"},
		{"folder", func(t *testing.T, path string) { os.Mkdir(path, 0o700) }, "not a regular file"},
		{"device", func(t *testing.T, path string) { mustSymlink(t, "/dev/zero", path) }, "not a regular file"},
		{"huge", func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("k"), 1<<20), 0o600)
		}, "larger than 4096 bytes"},
		{"empty", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, "holds 0 characters"},
		{"parent is a file", func(t *testing.T, path string) {
			os.WriteFile(filepath.Dir(path), nil, 0o600)
		}, "not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withHome(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "token")
			if tc.name == "parent is a file" {
				path = filepath.Join(dir, "file", "token")
			}
			tc.make(t, path)
			t.Setenv("SERVICE_INGEST_TOKEN_FILE", path)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, []string{"serve", "--port", strconv.Itoa(freePort(t))}, &out, &out)
			if err == nil {
				t.Fatalf("serve with a %s as token file = nil; want an error", tc.name)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("serve with a %s as token file = %q; want one line naming %s and saying %q", tc.name, msg, path, tc.want)
			}
		})
	}
}

// TestServeWarnsOfATokenFileOthersCanRead starts serve on a 0666 token
// file: it starts, and says which chmod fixes the file.
func TestServeWarnsOfATokenFileOthersCanRead(t *testing.T) {
	withHome(t)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(strings.Repeat("k", 43)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	t.Setenv("SERVICE_INGEST_TOKEN_FILE", path)
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--port", strconv.Itoa(port)}, &stdout, &stderr) }()
	waitServing(t, port, &stdout)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve with a 0666 token file = %v; want it to start", err)
	}
	if want := "chmod 600 " + path; !strings.Contains(stderr.String(), want) {
		t.Errorf("serve with a 0666 token file wrote %q to stderr; want a warning naming %q", stderr.String(), want)
	}

	os.Chmod(path, 0o600)
	if _, warning, err := loadOrCreateToken(path); err != nil || warning != "" {
		t.Errorf("loadOrCreateToken(0600 file) = warning %q, %v; want none", warning, err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
