package main

import (
	"context"
	"os/exec"
	"os/user"
	"strings"
	"time"
)

// defaultReviewer is the name the review app fills in for a verdict or a
// note until the reviewer types another: git's user.name, else the OS
// user's name, else none.
func defaultReviewer(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "git", "config", "user.name").Output(); err == nil {
		if name := strings.TrimSpace(string(out)); name != "" {
			return name
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
