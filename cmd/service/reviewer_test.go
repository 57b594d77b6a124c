package main

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"
)

func TestDefaultReviewer(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", dir)
	cfg := filepath.Join(dir, "gitconfig")
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Chdir(dir)

	if err := os.WriteFile(cfg, []byte("[user]\n\tname = Ann Lee\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := defaultReviewer(context.Background()); got != "Ann Lee" {
		t.Errorf("defaultReviewer() with git's user.name = %q; want Ann Lee", got)
	}
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Skip("no OS user")
	}
	if got := defaultReviewer(context.Background()); got != u.Username {
		t.Errorf("defaultReviewer() without git's user.name = %q; want the OS user %q", got, u.Username)
	}
}
