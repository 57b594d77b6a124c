package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

func TestListAndDetailRoutes(t *testing.T) {
	s := newTestService(t)
	a, b := newBatch("a"), newBatch("b")
	b["session"].(obj)["agent"].(obj)["kind"] = "other-agent"
	b["session"].(obj)["started_at"] = "2026-01-03T10:00:00Z"
	s.mustPush(a, http.StatusCreated)
	s.mustPush(b, http.StatusCreated)

	var l store.SessionList
	rec := s.get("/api/sessions")
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != 200 {
		t.Fatalf("GET /api/sessions = %d %v", rec.Code, err)
	}
	if len(l.Sessions) != 2 || l.Sessions[0].ID != "b" || len(l.Agents) != 2 || l.Total.Sessions != 2 || l.Total.CostUSD != 1.0 {
		t.Errorf("list = %+v; want b then a, 2 agents, total 2 sessions and $1.00", l)
	}
	rec = s.get("/api/sessions?agent=other-agent")
	json.Unmarshal(rec.Body.Bytes(), &l)
	if len(l.Sessions) != 1 || l.Sessions[0].ID != "b" {
		t.Errorf("list ?agent=other-agent = %+v; want only b", l.Sessions)
	}

	var d store.SessionDetail
	rec = s.get("/api/sessions/a")
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != 200 {
		t.Fatalf("GET /api/sessions/a = %d %v", rec.Code, err)
	}
	if d.Summary.Steps != 5 || d.Summary.Title != "Fix the failing test" || len(d.Report.Commands) != 1 || len(d.Turns[0].StepIDs) != 5 {
		t.Errorf("detail = %+v; want 5 steps, the prompt as title, 1 command, 5 step ids", d.SessionOverview)
	}
	if rec := s.get("/api/sessions/nope"); rec.Code != http.StatusNotFound || decodeError(t, rec).Error != "not found" {
		t.Errorf("GET unknown = %d %s; want 404 JSON", rec.Code, rec.Body)
	}
}

func TestListRoutePages(t *testing.T) {
	s := newTestService(t)
	for _, id := range []string{"a", "b", "c"} {
		s.mustPush(newBatch(id), http.StatusCreated)
	}
	var l store.SessionList
	json.Unmarshal(s.get("/api/sessions?limit=2").Body.Bytes(), &l)
	if len(l.Sessions) != 2 || l.Next == "" || l.Total.Sessions != 3 {
		t.Fatalf("?limit=2 = %d sessions, next %q, total %d; want 2, a cursor, 3", len(l.Sessions), l.Next, l.Total.Sessions)
	}
	var rest store.SessionList
	json.Unmarshal(s.get("/api/sessions?limit=2&after="+url.QueryEscape(l.Next)).Body.Bytes(), &rest)
	if len(rest.Sessions) != 1 || rest.Next != "" {
		t.Errorf("second page = %d sessions, next %q; want the last one and no cursor", len(rest.Sessions), rest.Next)
	}
	for _, q := range []string{"?limit=x", "?after=nonsense"} {
		if rec := s.get("/api/sessions" + q); rec.Code != http.StatusBadRequest {
			t.Errorf("GET /api/sessions%s = %d; want 400", q, rec.Code)
		}
	}
}

// TestListRouteIsJSONEncoding: the list, streamed from the encodings the
// store remembers, is byte for byte what encoding/json makes of the same
// list, gzipped as before, on sessions with odd values: unicode, <>&,
// U+2028, empty and null fields, verdicts, many sessions, filters and a
// page with a cursor; after a change, the changed session's new encoding.
func TestListRouteIsJSONEncoding(t *testing.T) {
	s := newTestService(t)
	odd := []string{"", "<b>&amp;</b>", "line\u2028sep\u2029para", "日本語 ü 🙂", `"quoted" \ back`, "tab\there\x7f"}
	for i := range 120 {
		id := fmt.Sprintf("s%03d-%s", i, []string{"a", "é", "<&>"}[i%3])
		b := newBatch(id)
		h := b["session"].(obj)
		h["workspace"] = obj{"root": "/tmp/" + odd[i%len(odd)] + "ws"}
		if repo := odd[(i+1)%len(odd)]; repo != "" {
			h["workspace"].(obj)["repo"] = repo
		}
		h["agent"].(obj)["kind"] = []string{"testagent", "other<&>", "ünï"}[i%3]
		h["started_at"] = fmt.Sprintf("2026-01-%02dT10:00:00Z", 1+i%28)
		if i%2 == 0 {
			delete(h, "metrics")
		} else {
			h["ended_at"] = "2026-02-01T00:00:00Z"
		}
		steps := b["steps"].(arr)
		steps[0].(obj)["payload"].(obj)["text"] = odd[i%len(odd)] + " title " + odd[(i+2)%len(odd)]
		if i%5 == 0 {
			b["steps"] = steps[1:] // no prompt: an empty title
		}
		s.mustPush(b, http.StatusCreated)
		if i%4 == 0 {
			if err := s.store.SetVerdict(context.Background(), id, store.Verdict{State: odd[i%len(odd)] + "state", Note: odd[(i+3)%len(odd)], Reviewer: odd[(i+4)%len(odd)]}); err != nil {
				t.Fatalf("SetVerdict(%s) = %v", id, err)
			}
		}
	}
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	check := func(path string, q store.ListQuery) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s = %d, encoding %q, type %q; want 200, gzip, application/json", path, res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Content-Type"))
		}
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatalf("GET %s: gzip: %v", path, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		l, err := s.store.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List(%+v) = %v", q, err)
		}
		if want := append(mustJSON(t, l), '\n'); !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("GET %s differs from json.Marshal at byte %d of %d:\n got %q\nwant %q", path, i, len(want), got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
	}
	for range 2 { // the first computes each session, the second remembers
		check("/api/sessions", store.ListQuery{})
		check("/api/sessions?agent="+url.QueryEscape("other<&>"), store.ListQuery{Agent: "other<&>"})
		check("/api/sessions?limit=7", store.ListQuery{Limit: 7})
	}
	if err := s.store.SetVerdict(context.Background(), "s001-é", store.Verdict{State: "needs_attention", Note: "<\u2028>"}); err != nil {
		t.Fatal(err)
	}
	check("/api/sessions", store.ListQuery{})
	if rec := s.get("/api/sessions"); !strings.Contains(rec.Body.String(), `"note":"\u003c\u2028\u003e"`) {
		t.Errorf("GET /api/sessions after a verdict holds no new note:\n%.300s", rec.Body)
	}
}

// TestSessionTimeSpan: a session's and a turn's time say how long they
// took when their steps' times span some, and say nothing when every
// step has the same time (as Aider records each step of a run at the
// run's start): "0 ms" would read as a measured time.
func TestSessionTimeSpan(t *testing.T) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		sid   string
		gap   time.Duration
		ended bool
		want  string
	}{{"spans-time", 90 * time.Second, false, "1 min 30 s"}, {"ended", 90 * time.Second, true, "1 min 30 s"}, {"no-time", 0, false, ""}} {
		x := sessionBatch(c.sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
		if c.ended {
			x["session"].(obj)["ended_at"] = isoUTC(at.Add(c.gap))
		}
		x["turns"] = arr{turnRec(c.sid, 1, at, "")}
		x["steps"] = arr{
			stepRec(c.sid, 1, 1, at, "message", userPrompt("Deploy")),
			stepRec(c.sid, 2, 1, at.Add(c.gap), "command", obj{"command": "make deploy"}),
		}
		s.mustPush(x, http.StatusCreated)
		doc := mustDocument(t, s, "/session?id="+c.sid)
		summary := strings.Join(strings.Fields(doc.Find(`[data-testid="summary-time"]`).Text()), " ")
		turn := doc.Find(`[data-testid="turn-duration"]`).Text()
		wantSummary := "2026-01-02 10:00 UTC – open · " + c.want + " · 1 segment · last activity"
		if c.ended {
			wantSummary = "2026-01-02 10:00 UTC – 2026-01-02 10:01 UTC · " + c.want + " · 1 segment"
		}
		if c.want != "" && (!strings.HasPrefix(summary, wantSummary) || turn != c.want) {
			t.Errorf("%s: the session's time %q, the turn's %q; want %q and %s", c.sid, summary, turn, wantSummary, c.want)
		}
		if c.want == "" && (strings.Contains(summary, " ms") || turn != "") {
			t.Errorf("%s: the session's time %q, the turn's %q; want no duration", c.sid, summary, turn)
		}
	}
}
