package handlers

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDevServerRendersFromCore runs a core and a UI development server
// (Deps.Core) against it: the pages show the core's sessions, fragments
// work, and /api, the event stream included, is proxied to the core.
func TestDevServerRendersFromCore(t *testing.T) {
	core := newTestService(t)
	coreSrv := loopbackServer(t, core)
	b := newBatch("s1")
	b["steps"].(arr)[1].(obj)["payload"].(obj)["stdout"] = strings.Repeat("x", 5000)
	core.mustPush(b, http.StatusCreated)

	coreURL, _ := url.Parse(coreSrv.URL)
	dev := httptest.NewServer(Routes(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Core: coreURL}))
	t.Cleanup(dev.Close)

	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(dev.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, c := range []struct{ path, want string }{
		{"/", "Fix the failing test"},
		{"/session?id=s1", `data-testid="timeline"`},
		{"/session/step?id=s1&seq=2&all=1", strings.Repeat("x", 5000)},
		{"/session/export-panel?id=s1", `data-testid="export-findings"`},
		{"/api/sessions/s1", `"id":"s1"`},
	} {
		if code, body := get(c.path); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("dev GET %s = %d; want 200 containing %q", c.path, code, c.want)
		}
	}
	// The usage page reads the core's reports, one request a group, the
	// days split by the stack: the same page as the core's own.
	mustUsageFixture(t, core)
	nonce := regexp.MustCompile(`nonce="[^"]*"`)
	for _, path := range []string{"/usage?since=2026-03-01&until=2026-03-31", "/usage?since=2026-03-01&until=2026-03-31&stack=agent",
		"/usage?since=2026-03-01&until=2026-03-31&project=%2Fsrc%2Fbeta", "/usage?since=2026-03-01&until=2026-03-31&sort=cost"} {
		code, body := get(path)
		own := core.get(path)
		if code != http.StatusOK || !strings.Contains(body, `data-testid="usage-chart-day"`) ||
			nonce.ReplaceAllString(body, "") != nonce.ReplaceAllString(own.Body.String(), "") {
			t.Errorf("dev GET %s = %d; want 200 and the core's own page", path, code)
		}
	}
	// A turn of many steps: its window, a link to a step in its gap, the
	// steps before the window and a live update from a step before it (a
	// page the reader added steps to), as the core's own.
	core.mustPush(longTurn("long", 900, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	from := 902 - recentSteps + 1 // the last of the 900 steps is seq 902
	for _, path := range []string{"/session?id=long", "/session?id=long&turns=all&step=300", "/session/steps?id=long&turn=long-t2&after=3&before=" + fmt.Sprint(from),
		"/session/updates?id=long&since=2026-01-01T00:00:00Z&from=" + fmt.Sprint(from-100)} {
		code, body := get(path)
		own := core.get(path)
		if code != http.StatusOK || !strings.Contains(body, `data-testid="earlier-steps"`) ||
			nonce.ReplaceAllString(body, "") != nonce.ReplaceAllString(own.Body.String(), "") {
			t.Errorf("dev GET %s = %d; want 200 and the core's own page, with its earlier-steps control", path, code)
		}
	}
	// The list total's estimate, asked of the core's list.
	mustApplyUnrecorded(t, core, "ea", "claude-code", unrecordedSessions()["ea"])
	for _, path := range []string{"/total-estimate", "/total-estimate?agent=claude-code"} {
		code, body := get(path)
		if own := core.get(path).Body.String(); code != http.StatusOK || !strings.Contains(body, `data-testid="total-estimate"`) || body != own {
			t.Errorf("dev GET %s = %d %q; want 200 and the core's own %q", path, code, body, own)
		}
	}
	// The next failed or flagged step (the e and E keys), asked of the
	// core's own route: a step, going round, none, and not found.
	pr := newBatch("pr")
	pr["steps"].(arr)[2].(obj)["outcome"] = "failed"
	pr["steps"].(arr)[4].(obj)["flags"] = arr{obj{"kind": "dangerous_command", "severity": "danger", "reason": "test"}}
	core.mustPush(pr, http.StatusCreated)
	for _, path := range []string{"/session/problem?id=pr&after=0", "/session/problem?id=pr&before=1",
		"/session/problem?id=pr&after=5", "/session/problem?id=s1&after=1", "/session/problem?id=nope&after=1"} {
		code, body := get(path)
		if own := core.get(path); code != own.Code || body != own.Body.String() || strings.HasPrefix(path, "/session/problem?id=pr") && !strings.Contains(body, `"seq"`) {
			t.Errorf("dev GET %s = %d %q; want the core's own %d %q", path, code, body, own.Code, own.Body)
		}
	}
	if code, _ := get("/session?id=nope"); code != http.StatusNotFound {
		t.Errorf("dev GET /session?id=nope = %d; want 404", code)
	}
	if code, body := get("/session?id=s1"); code == http.StatusOK && strings.Contains(body, strings.Repeat("x", 2049)) {
		t.Error("the dev page delivered more than the first 2 KB of an output")
	}

	// The stream goes through the proxy and reports a push to the core.
	res, err := http.Get(dev.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := res.Body.Read(buf)
			if n > 0 {
				got <- string(buf[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	var seen strings.Builder
	deadline := time.After(3 * time.Second)
	pushed := false
	for !strings.Contains(seen.String(), `"session_id":"s2"`) {
		select {
		case s, ok := <-got:
			if !ok {
				t.Fatalf("proxied stream ended: %q", seen.String())
			}
			seen.WriteString(s)
			if !pushed && strings.Contains(seen.String(), "event: ready") {
				core.mustPush(newBatch("s2"), http.StatusCreated)
				pushed = true
			}
		case <-deadline:
			t.Fatalf("no change through the dev server's proxy within 3 s: %q", seen.String())
		}
	}
}
