package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemoServesReadOnlyExamples runs `service demo`: the app shows the
// bundled sessions, and ingest and delete are refused.
func TestDemoServesReadOnlyExamples(t *testing.T) {
	withHome(t)
	port := freePort(t)
	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"demo", "--port", strconv.Itoa(port)}, &out, &out) }()
	waitListening(t, port, &out)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"claude-code", "cline", "codex", "not recorded", "demo: read-only"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("demo list page lacks %q", want)
		}
	}
	for _, r := range []struct{ method, path string }{{"POST", "/api/ingest"}, {"DELETE", "/api/sessions/demo-codex-2b77"}} {
		req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s in the demo = %d; want 403", r.method, r.path, res.StatusCode)
		}
	}
	res, _ = http.Get(base + "/session?id=demo-ratelimit-4c1e")
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "earlier turns") || strings.Contains(string(page), "delete-button") {
		t.Error("the long demo session should offer earlier turns and no delete button")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demo did not stop")
	}
}
