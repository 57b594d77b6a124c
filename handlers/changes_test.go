package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The Changes section of a session that changed many files shows the
// first firstChanges files in the page, whatever the session's size, and
// its control loads the next moreChanges files as a fragment until every
// file is shown, in the order of the changes route. Each file, closed, has
// its diffs loaded from its own fragment.
func TestChangesSectionPages(t *testing.T) {
	const files = 75 // 20 in the page, 50, then 5
	s := newTestService(t)
	b := newBatch("big")
	var steps arr
	for i := range files {
		steps = append(steps, obj{
			"id": fmt.Sprintf("big-s%d", i+1), "session_id": "big", "segment_index": 0, "turn_id": "big-t1",
			"actor_id": "big-root", "seq": i + 1, "at": "2026-01-02T10:00:02Z", "type": "edit",
			"decision": "accepted", "outcome": "ok", "content_status": "inline", "channels": arr{"hook"}, "flags": arr{},
			"payload": obj{"path": fmt.Sprintf("/tmp/ws/f%03d.go", i), "old_string": "a", "new_string": fmt.Sprintf("b%03d", i), "is_full_write": false},
		})
	}
	b["steps"] = steps
	s.mustPush(b, http.StatusCreated)

	var want []string
	rec := s.get("/api/sessions/big/changes")
	var a changesAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || len(a.Files) != files {
		t.Fatalf("GET changes = %d %s; want %d files", rec.Code, rec.Body, files)
	}
	for _, f := range a.Files {
		want = append(want, f.Path)
	}

	page := func(path string) *goquery.Document {
		t.Helper()
		rec := s.get(path)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s; want 200", path, rec.Code, rec.Body)
		}
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	var got []string
	doc := page("/session?id=big")
	for _, step := range []struct {
		shown int
		more  string // the control's text, "" when none is left
	}{
		{firstChanges, fmt.Sprintf("Show %d more files (%d not shown)", moreChanges, files-firstChanges)},
		{moreChanges, "Show 5 more files (5 not shown)"},
		{5, ""},
	} {
		changes := doc.Find(`[data-testid="change"]`)
		if changes.Length() != step.shown {
			t.Fatalf("after %d files: %d shown; want %d", len(got), changes.Length(), step.shown)
		}
		changes.Each(func(i int, c *goquery.Selection) {
			if id, _ := c.Attr("id"); id != fmt.Sprintf("change-%d", len(got)+1) {
				t.Errorf("file %d has id %s; want change-%d", len(got)+1, id, len(got)+1)
			}
			if _, open := c.Attr("open"); open {
				t.Errorf("file %d is open; want closed among %d files", len(got)+1, files)
			}
			if c.Find(`[data-testid="change-edit"]`).Length() != 0 {
				t.Errorf("file %d, closed, has its diffs in the page; want them loaded when opened", len(got)+1)
			}
			// Named by its path in the workspace, on the page and in each
			// page the control adds.
			path := c.AttrOr("data-path", "")
			if name := c.Find(`[data-testid="change-path"]`).Text(); name != strings.TrimPrefix(path, "/tmp/ws/") || name == path {
				t.Errorf("file %d (%s) is shown as %q; want its path in the workspace /tmp/ws", len(got)+1, path, name)
			}
			url, _ := c.Attr("data-body-url")
			body := page(url)
			wantDiff := "-a+b" + strings.TrimSuffix(strings.TrimPrefix(path, "/tmp/ws/f"), ".go") // its own edit
			if d := body.Find(`[data-testid="change-edit-diff"] .dl`); d.Length() != 2 || d.Text() != wantDiff {
				t.Errorf("file %d (%s) opened: diff %q; want %q", len(got)+1, path, d.Text(), wantDiff)
			}
			got = append(got, path)
		})
		more := doc.Find(`[data-testid="more-changes"]`)
		if text := strings.Join(strings.Fields(more.Text()), " "); text != step.more {
			t.Fatalf("after %d files the control reads %q; want %q", len(got), text, step.more)
		}
		if step.more != "" {
			url, _ := more.Attr("hx-get")
			doc = page(url)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files shown =\n%v\nwant the changes route's\n%v", got, want)
	}

	for path, code := range map[string]int{
		"/session/changes?id=big&from=0":    http.StatusBadRequest,
		"/session/changes?id=big&from=x":    http.StatusBadRequest,
		"/session/changes?id=big":           http.StatusBadRequest,
		"/session/changes?id=never&from=20": http.StatusNotFound,
		"/session/changes?id=big&from=999":  http.StatusOK,
		"/session/change?id=big":            http.StatusBadRequest,
		"/session/change?id=big&path=/none": http.StatusNotFound,
		"/session/change?id=never&path=/x":  http.StatusNotFound,
	} {
		if rec := s.get(path); rec.Code != code {
			t.Errorf("GET %s = %d %s; want %d", path, rec.Code, rec.Body, code)
		}
	}
}
