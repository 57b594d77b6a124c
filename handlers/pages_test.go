package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

func mustDocument(t *testing.T, s *testService, path string) *goquery.Document {
	t.Helper()
	return mustDocumentStatus(t, s, path, http.StatusOK)
}

// mustDocumentStatus is the HTML page at path, answered with status.
func mustDocumentStatus(t *testing.T, s *testService, path string, status int) *goquery.Document {
	t.Helper()
	rec := s.get(path)
	if rec.Code != status || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s = %d %q; want %d HTML", path, rec.Code, rec.Header().Get("Content-Type"), status)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestListPageEmptyAndBadFilters: an empty list says why (no sessions
// yet, none matching the filters, none older), and a filter or cursor the
// list cannot read gets the page, 400, saying what is wrong, as the API
// answers it in JSON.
func TestListPageEmptyAndBadFilters(t *testing.T) {
	s := newTestService(t)
	empty := func(doc *goquery.Document) string { return strings.TrimSpace(doc.Find(`[data-testid="empty"]`).Text()) }
	if got := empty(mustDocument(t, s, "/")); !strings.HasPrefix(got, "No sessions yet.") || !strings.Contains(got, "service import claude-code") || !strings.Contains(got, "service capture") {
		t.Errorf("an empty store says %q; want no sessions yet, and how to import and capture some", got)
	}
	s.mustPush(newBatch("one-session"), http.StatusCreated)
	for _, path := range []string{"/?workspace=nowhere", "/?agent=nobody", "/?verdict=approved", "/?since=2100-01-01"} {
		doc := mustDocument(t, s, path)
		if got := empty(doc); got != "No sessions match these filters. Show every session" {
			t.Errorf("%s says %q; want that no session matches", path, got)
		}
		if href, _ := doc.Find(`[data-testid="empty"] a`).Attr("href"); href != "/" {
			t.Errorf("%s: the way back is %q; want /", path, href)
		}
	}
	if got := empty(mustDocument(t, s, "/?after=1:a")); got != "No older sessions." {
		t.Errorf("a page past the oldest session says %q; want no older sessions", got)
	}
	for _, c := range []struct{ path, want string }{
		{"/?since=2026-13-01", `This filter cannot be read: since: "2026-13-01" is not a date`},
		{"/?until=soon", `This filter cannot be read: until: "soon" is not a date`},
		{"/?cost=cheap", `This filter cannot be read: cost: "cheap" is not recorded or not_recorded.`},
		{"/?after=zzz", "This page's cursor (after) is not one the list gave out."},
		{"/rows?since=2026-13-01", `since: "2026-13-01" is not a date`},
	} {
		doc := mustDocumentStatus(t, s, c.path, http.StatusBadRequest)
		problem := doc.Find(`[data-testid="list-problem"]`)
		if !strings.Contains(problem.Text(), c.want) || doc.Find(`[data-testid="session-row"]`).Length() != 0 {
			t.Errorf("%s says %q and shows %d rows; want %q and none", c.path, problem.Text(), doc.Find(`[data-testid="session-row"]`).Length(), c.want)
		}
	}
	if v, _ := mustDocumentStatus(t, s, "/?since=2026-13-01", http.StatusBadRequest).Find(`[data-testid="filter-since"]`).Attr("value"); v != "2026-13-01" {
		t.Errorf("the form's since = %q; want the value given, to correct", v)
	}
	if rec := s.get("/api/sessions?since=2026-13-01"); rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("the API's answer to a bad since = %d %q; want 400 JSON", rec.Code, rec.Header().Get("Content-Type"))
	}
}

func TestListPage(t *testing.T) {
	s := newTestService(t)
	if doc := mustDocument(t, s, "/"); doc.Find(`[data-testid="empty"]`).Length() != 1 {
		t.Error("an empty store shows no empty-state message")
	}
	a := newBatch("alpha-session")
	a["steps"].(arr)[0].(obj)["payload"].(obj)["text"] = "<script>alert(1)</script> first line\nsecond line"
	b := newBatch("beta-session")
	b["session"].(obj)["agent"].(obj)["kind"] = "cline"
	delete(b["session"].(obj), "metrics")
	s.mustPush(a, http.StatusCreated)
	s.mustPush(b, http.StatusCreated)

	doc := mustDocument(t, s, "/")
	rows := doc.Find(`[data-testid="session-row"]`)
	if rows.Length() != 2 {
		t.Fatalf("list page shows %d rows; want 2", rows.Length())
	}
	if doc.Find("script:not([src])").Length() != 0 {
		t.Error("a prompt's <script> became an element")
	}
	title := rows.FilterFunction(func(_ int, r *goquery.Selection) bool {
		return strings.Contains(r.Find(`[data-testid="agent-badge"]`).Text(), "testagent")
	}).Find(`[data-testid="title"]`).Text()
	if strings.TrimSpace(title) != "<script>alert(1)</script> first line" {
		t.Errorf("title = %q; want the first line of the prompt, as text", title)
	}
	costs := doc.Find(`[data-testid="cost"]`).Map(func(_ int, c *goquery.Selection) string { return c.Text() })
	if !strings.Contains(strings.Join(costs, "|"), "not recorded") || !strings.Contains(strings.Join(costs, "|"), "$0.50") {
		t.Errorf("costs = %v; want $0.50 and not recorded", costs)
	}
	if total := strings.TrimSpace(doc.Find(`[data-testid="total"]`).Text()); total != "2 sessions · $0.50 (1 not recorded)" {
		t.Errorf("total = %q; want 2 sessions, the one reported cost and the one not", total)
	}

	doc = mustDocument(t, s, "/?agent=cline")
	if n := doc.Find(`[data-testid="session-row"]`).Length(); n != 1 {
		t.Errorf("/?agent=cline shows %d rows; want 1", n)
	}
	if total := strings.TrimSpace(doc.Find(`[data-testid="total"]`).Text()); total != "1 session · cost not recorded" {
		t.Errorf("total of a session without a reported cost = %q; want it said, not $0.00", total)
	}
	if active := doc.Find(".chip.active").Text(); !strings.Contains(active, "cline") {
		t.Errorf("active chip = %q; want cline", active)
	}
}

// TestUnknownAddressIsAPage: a mistyped or stale address opened in the
// browser gets a page of the app saying so, with the way back to the
// list; the API and the static files keep their own answers.
func TestUnknownAddressIsAPage(t *testing.T) {
	s := newTestService(t)
	for _, path := range []string{"/nope", "/sessions/abc", "/session/nope?id=x"} {
		doc := mustDocumentStatus(t, s, path, http.StatusNotFound)
		if got := doc.Find(`[data-testid="missing"]`).Text(); got != "There is no page at this address." {
			t.Errorf("GET %s says %q; want that there is no page there", path, got)
		}
		if doc.Find(`main a[href="/"]`).Length() != 1 || doc.Find(`[data-testid="topbar"]`).Length() != 1 {
			t.Errorf("GET %s: want the top bar and a link to the list", path)
		}
	}
	if rec := s.get("/api/nope"); rec.Code != http.StatusNotFound || decodeError(t, rec).Error != "not found" {
		t.Errorf("GET /api/nope = %d %q; want 404 JSON", rec.Code, rec.Body)
	}
	if rec := s.get("/static/nope.css"); rec.Code != http.StatusNotFound || strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("GET /static/nope.css = %d %q; want 404 without a page", rec.Code, rec.Header().Get("Content-Type"))
	}
	req := httptest.NewRequest(http.MethodPost, "/nope", nil)
	if rec := s.do(req); rec.Code != http.StatusNotFound || rec.Body.String() != "not found\n" {
		t.Errorf("POST /nope = %d %q; want 404 text", rec.Code, rec.Body)
	}
}

// The pages hold nothing the Content-Security-Policy refuses: no inline
// script or style, no style or event-handler attribute, and htmx is told
// not to inject its indicator style.
func TestPagesHaveNoInlineScriptOrStyle(t *testing.T) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	id := richSession()["session"].(obj)["id"].(string)
	for _, path := range []string{"/", "/rows", "/session?id=" + id, "/session?id=nope", "/no-such-page", "/session?id=" + id + "&turns=all",
		"/session/updates?id=" + id + "&since=2000-01-01T00:00:00Z", "/session/step?id=" + id + "&seq=2", "/session/export-panel?id=" + id} {
		rec := s.get(path)
		if rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Fatalf("GET %s = %d; want a page", path, rec.Code)
		}
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if n := doc.Find("script:not([src]), style, [style]").Length(); n != 0 {
			t.Errorf("GET %s: %d inline scripts, styles or style attributes; want none", path, n)
		}
		doc.Find("*").Each(func(_ int, e *goquery.Selection) {
			for _, a := range e.Nodes[0].Attr {
				if strings.HasPrefix(a.Key, "on") || strings.HasPrefix(a.Key, "hx-on") {
					t.Errorf("GET %s: <%s %s=%q>; want no inline handler", path, goquery.NodeName(e), a.Key, a.Val)
				}
			}
		})
		if strings.HasPrefix(path, "/session/") || path == "/rows" {
			continue // a fragment: the page around it has the htmx config
		}
		config := doc.Find(`meta[name="htmx-config"]`).AttrOr("content", "")
		if !strings.Contains(config, `"includeIndicatorStyles":false`) || !strings.Contains(config, `"allowEval":false`) {
			t.Errorf("GET %s: htmx-config = %q; want includeIndicatorStyles and allowEval off", path, config)
		}
	}
}

// TestStepLineReadsMessageMarkdown: a message's line in the timeline shows
// its role, then its first line as its Markdown reads, as a title does
// (code stays code, emphasis and heading marks go, HTML stays text); a
// command's line shows the command as written.
func TestStepLineReadsMessageMarkdown(t *testing.T) {
	s := newTestService(t)
	const (
		text    = "## Run **all** of `go test ./...` _now_, not <b>later</b>\nsecond line"
		command = "echo **not bold** `date`"
	)
	v := newBatch("md")
	steps := v["steps"].(arr)
	steps[0].(obj)["payload"].(obj)["text"] = text
	steps[1].(obj)["payload"].(obj)["command"] = command
	s.mustPush(v, http.StatusCreated)

	doc := mustDocument(t, s, "/session?id=md")
	line := doc.Find(`#step-1 .line`)
	if got, want := line.Text(), "user: Run all of go test ./... now, not <b>later</b> …"; got != want {
		t.Errorf("message line = %q; want %q", got, want)
	}
	if got := line.Find("code").Text(); got != "go test ./..." {
		t.Errorf("message line's code = %q; want the code span", got)
	}
	if got := doc.Find(`#step-2 .line`).Text(); got != command {
		t.Errorf("command line = %q; want %q as written", got, command)
	}
}

// TestUpdatesOfManyTurnsReload: a live refresh after a push that changed
// more turns than an update redraws (updateTurns) is 205, so the page
// reloads instead of receiving every turn; one turn fewer is redrawn.
func TestUpdatesOfManyTurnsReload(t *testing.T) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := manyTurns("many", updateTurns+10, at)
	s.mustPush(x, http.StatusCreated)
	stamp := func() string { return s.stampOf(t, "many") }
	// A push that fails the prompt step of each of the first n turns.
	fail := func(n int) {
		var steps arr
		for _, st := range x["steps"].(arr)[:n] {
			steps = append(steps, withFields(st.(obj), "outcome", "failed"))
		}
		s.mustPush(laterPush(x, nil, steps), http.StatusOK)
	}
	before := stamp()
	fail(updateTurns)
	rec := s.get("/session/updates?id=many&since=" + url.QueryEscape(before))
	if n := mustDoc(t, rec).Find(`template[data-turn]`).Length(); rec.Code != http.StatusOK || n != updateTurns {
		t.Errorf("updates after a push to %d turns = %d, %d turns redrawn; want 200 and all of them", updateTurns, rec.Code, n)
	}
	before = stamp()
	fail(updateTurns + 1) // the first updateTurns again, unchanged, and one more
	if rec := s.get("/session/updates?id=many&since=" + url.QueryEscape(before)); rec.Code != http.StatusOK {
		t.Errorf("updates after a push that changed one turn = %d; want 200", rec.Code)
	}
	x2 := manyTurns("many", updateTurns+10, at)
	for _, st := range x2["steps"].(arr) {
		st.(obj)["payload"].(obj)["text"] = "changed"
	}
	before = stamp()
	s.mustPush(laterPush(x2, nil, x2["steps"].(arr)), http.StatusOK)
	if rec := s.get("/session/updates?id=many&since=" + url.QueryEscape(before)); rec.Code != http.StatusResetContent || rec.Body.Len() != 0 {
		t.Errorf("updates after a push to %d turns = %d, %d bytes; want 205 and nothing", updateTurns+10, rec.Code, rec.Body.Len())
	}
}

// TestUpdatesSinceTheStampAreEmpty: the live refresh of a session page
// whose stamp has not moved is 204 with nothing to redraw; a verdict or a
// push moves the stamp, and the refresh from the old one redraws.
func TestUpdatesSinceTheStampAreEmpty(t *testing.T) {
	s := newTestService(t)
	v := newBatch("live")
	s.mustPush(v, http.StatusCreated)
	stamp := func() string { return s.stampOf(t, "live") }
	updates := func(since string) *httptest.ResponseRecorder {
		return s.get("/session/updates?id=live&since=" + url.QueryEscape(since))
	}

	first := stamp()
	rec := updates(first)
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 || rec.Header().Get("X-Session-Stamp") != first {
		t.Fatalf("updates since the stamp = %d, %d bytes, stamp %q; want 204, none, %q", rec.Code, rec.Body.Len(), rec.Header().Get("X-Session-Stamp"), first)
	}

	req := httptest.NewRequest(http.MethodPut, "/api/sessions/live/verdict", strings.NewReader(`{"state":"approved"}`))
	req.Header.Set("Content-Type", "application/json")
	if rec := s.do(req); rec.Code != http.StatusOK {
		t.Fatalf("PUT verdict = %d %s", rec.Code, rec.Body)
	}
	second := stamp()
	doc := mustDoc(t, updates(first))
	if got := doc.Find(`template[data-region="verdict"]`).Length(); got != 1 {
		t.Errorf("updates after a verdict carry %d verdict regions; want 1", got)
	}
	if rec := updates(second); rec.Code != http.StatusNoContent {
		t.Errorf("updates since the verdict's stamp = %d; want 204", rec.Code)
	}

	steps := v["steps"].(arr)
	s.mustPush(laterPush(v, nil, arr{withFields(steps[0].(obj), "outcome", "failed")}), http.StatusOK)
	if n := mustDoc(t, updates(second)).Find(`template[data-turn]`).Length(); n != 1 {
		t.Errorf("updates after a push redraw %d turns; want 1", n)
	}
}

// TestStepShowsPermissionWhenRecorded: a step's details name its
// permission decision when it was recorded, not when it is n/a (no tool
// call) or unknown (the agent's files do not say).
func TestStepShowsPermissionWhenRecorded(t *testing.T) {
	s := newTestService(t)
	sid := "perm"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	decisions := []string{"n/a", "accepted", "unknown", "rejected", "auto"}
	var steps arr
	for i, d := range decisions {
		steps = append(steps, withFields(stepRec(sid, i+1, 1, at, "command", obj{"command": "true"}), "decision", d))
	}
	x["steps"] = steps
	s.mustPush(x, http.StatusCreated)
	doc := mustDocument(t, s, "/session?id="+sid)
	for i, d := range decisions {
		shown := doc.Find(fmt.Sprintf(`#step-%d dt`, i+1)).FilterFunction(func(_ int, dt *goquery.Selection) bool { return dt.Text() == "Permission" })
		want := d != "n/a" && d != "unknown"
		if got := shown.Length() == 1; got != want || (want && shown.Next().Text() != d) {
			t.Errorf("decision %q: Permission shown %v (%q); want %v", d, got, shown.Next().Text(), want)
		}
	}
}

// TestFailedAndFlaggedLinkToTheirSteps: a list row's "N failed" and "N
// flags", and the session page's Failed and Flags counts, link to the search of that
// session's failed or flagged steps, which finds those steps of the batch
// pushed, and none of another session with the same steps; the export, a
// file, shows the counts without links.
func TestFailedAndFlaggedLinkToTheirSteps(t *testing.T) {
	s := newTestService(t)
	var wantFailed, wantFlagged []string
	for _, sid := range []string{"links-a", "links-b"} {
		b := newBatch(sid)
		for _, st := range b["steps"].(arr) {
			st := st.(obj)
			switch st["seq"] {
			case 2, 3:
				st["outcome"] = "failed"
			case 5:
				st["flags"] = arr{obj{"kind": "secret_in_output", "severity": "warn", "reason": "a key"}}
			}
			if sid == "links-a" && st["outcome"] == "failed" {
				wantFailed = append(wantFailed, fmt.Sprint(st["seq"]))
			}
			if sid == "links-a" && len(st["flags"].(arr)) > 0 {
				wantFlagged = append(wantFlagged, fmt.Sprint(st["seq"]))
			}
		}
		s.mustPush(b, http.StatusCreated)
	}
	hits := func(href string) []string {
		t.Helper()
		doc := mustDocument(t, s, href)
		if ids := doc.Find(`[data-testid="search-group"]`).Map(func(_ int, g *goquery.Selection) string { return g.AttrOr("data-session-id", "") }); len(ids) != 1 || ids[0] != "links-a" {
			t.Errorf("%s finds steps of sessions %v; want links-a's alone", href, ids)
		}
		return doc.Find(`[data-testid="search-hit"]`).Map(func(_ int, h *goquery.Selection) string { return h.AttrOr("data-seq", "") })
	}
	row := mustDocument(t, s, "/").Find(`[data-testid="session-row"]`).FilterFunction(func(_ int, r *goquery.Selection) bool {
		return r.Find(`[data-testid="short-id"]`).Text() == shortID("links-a")
	})
	failed := row.Find(`a[data-testid="failed"]`).AttrOr("href", "")
	if got := hits(failed); fmt.Sprint(got) != fmt.Sprint(wantFailed) {
		t.Errorf("the row's failed link %q finds steps %v; want %v", failed, got, wantFailed)
	}
	flags := row.Find(`a.flags`).AttrOr("href", "")
	if got := hits(flags); fmt.Sprint(got) != fmt.Sprint(wantFlagged) {
		t.Errorf("the row's flags link %q finds steps %v; want %v", flags, got, wantFlagged)
	}
	page := mustDocument(t, s, "/session?id=links-a")
	if card := page.Find(`[data-testid="summary-failed"] a`).AttrOr("href", ""); card != failed {
		t.Errorf("the session page's Failed links to %q; want %q", card, failed)
	}
	if card := page.Find(`[data-testid="summary-flags"] a`); card.AttrOr("href", "") != flags || card.Text() != fmt.Sprint(len(wantFlagged)) {
		t.Errorf("the session page's Flags = %q linking to %q; want %d linking to %q", card.Text(), card.AttrOr("href", ""), len(wantFlagged), flags)
	}
	// The export is a file: its summary has the counts and no link.
	rec := s.get("/api/sessions/links-a/export")
	export, err := goquery.NewDocumentFromReader(rec.Body)
	if rec.Code != http.StatusOK || err != nil {
		t.Fatalf("export = %d, %v", rec.Code, err)
	}
	if got := strings.TrimSpace(export.Find(`[data-testid="summary-failed"]`).Text()); got != fmt.Sprint(len(wantFailed)) || export.Find(`[data-testid="summary"] a[href*="/search"]`).Length() > 0 {
		t.Errorf("the export's Failed = %q, with %d search links; want %d and none", got, export.Find(`[data-testid="summary"] a[href*="/search"]`).Length(), len(wantFailed))
	}
}

// TestListVerdictBadgeSaysWhy: hovering a row's verdict shows who judged
// the session and the first line's worth of their note, not all of it.
func TestListVerdictBadgeSaysWhy(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("judged"), http.StatusCreated)
	note := "the failing test was skipped, not fixed; " + strings.Repeat("see step 2 ", 100)
	body, _ := json.Marshal(obj{"state": "needs_attention", "reviewer": "Ann", "note": note})
	req := httptest.NewRequest(http.MethodPut, "/api/sessions/judged/verdict", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if rec := s.do(req); rec.Code != http.StatusOK {
		t.Fatalf("PUT verdict = %d %s", rec.Code, rec.Body)
	}
	badge := mustDocument(t, s, "/").Find(`[data-testid="verdict-badge"]`)
	title, _ := badge.Attr("title")
	want := "by Ann: " + string([]rune(note)[:160]) + "…"
	if badge.Text() != "needs_attention" || title != want {
		t.Errorf("badge %q, title %q; want needs_attention, %q", badge.Text(), title, want)
	}
}

// The later-turns route shows the turns from position from until to, at
// most the session's last, and the control for those after them: a to
// past the last turn shows no turn before from, which the page has.
func TestLaterTurnsRoute(t *testing.T) {
	s := newTestService(t)
	const total = 70
	s.mustPush(manyTurns("later", total, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	for _, c := range []struct{ from, to int }{{20, 40}, {60, 110}, {69, 70}} {
		doc := mustDocument(t, s, fmt.Sprintf("/session/turns?id=later&from=%d&to=%d", c.from, c.to))
		var got []string
		doc.Find(`[data-testid="turn"]`).Each(func(_ int, e *goquery.Selection) { got = append(got, e.AttrOr("data-number", "")) })
		var want []string
		for n := c.from + 1; n <= min(c.to, total); n++ {
			want = append(want, fmt.Sprint(n))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("from=%d&to=%d: turns %v; want %v", c.from, c.to, got, want)
		}
		later := doc.Find(`[data-testid="later-turns"]`)
		if after := total - min(c.to, total); (later.Length() == 1) != (after > 0) ||
			after > 0 && !strings.Contains(later.Text(), fmt.Sprintf("(%d not shown)", after)) {
			t.Errorf("from=%d&to=%d: later-turns control %q; want one for the %d turns after", c.from, c.to, later.Text(), after)
		}
	}
}
