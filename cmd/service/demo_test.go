package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestDemoServesReadOnlyExamples runs `service demo`: the app shows the
// bundled sessions with their reviews, and ingest and delete are refused.
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
	// The demo's reviews: each verdict in the list, each note found by
	// note:* on the step of its command.
	var list store.SessionList
	if err := getJSON(base+"/api/sessions", &list); err != nil {
		t.Fatal(err)
	}
	var hits store.SearchResult
	if err := getJSON(base+"/api/search?q=note:*", &hits); err != nil {
		t.Fatal(err)
	}
	found, written := 0, 0
	for _, r := range demoReviews {
		written += len(r.notes)
		i := slices.IndexFunc(list.Sessions, func(o store.SessionOverview) bool { return o.ID == r.session })
		if i < 0 || list.Sessions[i].Verdict == nil || *list.Sessions[i].Verdict != r.verdict || list.Sessions[i].Summary.Notes != len(r.notes) {
			t.Errorf("demo session %s in the list: %+v; want its verdict %+v and %d notes", r.session, list.Sessions, r.verdict, len(r.notes))
		}
		for _, n := range r.notes {
			if slices.ContainsFunc(hits.Hits, func(h store.SearchHit) bool {
				return h.SessionID == r.session && h.Type == store.TypeCommand && strings.HasPrefix(h.Snippet, n.command) &&
					len(h.Notes) == 1 && h.Notes[0].Author == r.verdict.Reviewer && h.Notes[0].Text == n.text
			}) {
				found++
			}
		}
	}
	if found != written || len(hits.Hits) != written {
		t.Errorf("note:* in the demo = %d hits, %d with the notes written; want %d", len(hits.Hits), found, written)
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

// getJSON decodes the JSON answer of a GET of url into v.
func getJSON(url string, v any) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s = %d", url, res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
