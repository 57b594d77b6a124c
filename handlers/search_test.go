package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/agentreview/service/store"
)

func TestSearchAPI(t *testing.T) {
	s := newTestService(t)
	b := newBatch("a")
	b["steps"].([]any)[1].(obj)["payload"].(obj)["stdout"] = "FAIL handlers/auth_test.go: <b>boom</b>"
	s.mustPush(b, http.StatusCreated)
	s.mustPush(newBatch("b"), http.StatusCreated)

	rec := s.get("/api/search?q=" + url.QueryEscape("auth_test.go type:command"))
	var res store.SearchResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/search = %d %s", rec.Code, rec.Body)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("hits = %+v; want one", res.Hits)
	}
	h := res.Hits[0]
	if h.SessionID != "a" || h.Seq != 2 || h.Type != "command" || h.Status != "ok" || len(h.Matches) != 1 {
		t.Errorf("hit = %+v; want session a, seq 2, command, ok, one match", h)
	}
	if m := h.Matches[0]; h.Snippet[m[0]:m[1]] != "auth_test.go" {
		t.Errorf("match %v of %q = %q; want auth_test.go", m, h.Snippet, h.Snippet[m[0]:m[1]])
	}

	var page store.SearchResult
	json.Unmarshal(s.get("/api/search?q=type:command&limit=1").Body.Bytes(), &page)
	if len(page.Hits) != 1 || page.Next == "" {
		t.Fatalf("limit=1 = %+v; want one hit and a cursor", page)
	}
	var rest store.SearchResult
	json.Unmarshal(s.get("/api/search?q=type:command&limit=1&after="+url.QueryEscape(page.Next)).Body.Bytes(), &rest)
	if len(rest.Hits) != 1 || rest.Next != "" || rest.Hits[0].SessionID == page.Hits[0].SessionID {
		t.Errorf("second page = %+v; want the other session's command and no cursor", rest)
	}

	for _, tc := range []struct{ q, error, detail string }{
		{"q=", "invalid search query", "is empty"},
		{"q=" + url.QueryEscape(`"open`), "invalid search query", "never closed"},
		{"q=" + url.QueryEscape("NEAR( AND"), "", ""}, // words, not FTS syntax: 200
		{"q=type:nope", "invalid search query", `"nope" is not a step type`},
		{"q=go%00test", "invalid search query", "has a NUL character"}, // was a 500: SQLite read the expression up to the NUL
		{"q=x&limit=0", `query parameter limit="0" is not valid: give 1 to 200`, ""},
		{"q=x&after=junk", "after is not a cursor of this list", ""},
	} {
		rec := s.get("/api/search?" + tc.q)
		if tc.error == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("GET /api/search?%s = %d %s; want 200", tc.q, rec.Code, rec.Body)
			}
			continue
		}
		e := decodeError(t, rec)
		if rec.Code != http.StatusBadRequest || e.Error != tc.error || (tc.detail != "" && (len(e.Details) == 0 || !strings.Contains(e.Details[0].Message, tc.detail))) {
			t.Errorf("GET /api/search?%s = %d %s; want 400 %q with %q", tc.q, rec.Code, rec.Body, tc.error, tc.detail)
		}
	}
}

func TestSearchPage(t *testing.T) {
	s := newTestService(t)
	a := newBatch("a")
	a["steps"].([]any)[1].(obj)["payload"].(obj)["stdout"] = "<script>alert(1)</script> needle here"
	s.mustPush(a, http.StatusCreated)
	s.mustPush(newBatch("b"), http.StatusCreated)

	doc := mustDocument(t, s, "/search?q=needle")
	groups := doc.Find(`[data-testid="search-group"]`)
	if groups.Length() != 1 || groups.AttrOr("data-session-id", "") != "a" {
		t.Fatalf("groups = %d (%s); want session a only", groups.Length(), groups.AttrOr("data-session-id", ""))
	}
	hit := groups.Find(`[data-testid="search-hit"]`)
	if hit.AttrOr("data-seq", "") != "2" || hit.Find(`[data-testid="search-hit-link"]`).AttrOr("href", "") != "/session?id=a&q=needle#step-2" {
		t.Errorf("hit seq %s links to %s; want step 2 at /session?id=a&q=needle#step-2 (the match to mark)", hit.AttrOr("data-seq", ""), hit.Find("a").AttrOr("href", ""))
	}
	snippet := hit.Find(`[data-testid="search-snippet"]`)
	if snippet.Find("mark").Text() != "needle" || snippet.Find("script").Length() != 0 || !strings.Contains(snippet.Text(), "<script>alert(1)</script>") {
		t.Errorf("snippet %q, mark %q; want needle marked and the script as text", snippet.Text(), snippet.Find("mark").Text())
	}
	if l := hit.Find(`[data-testid="search-hit-label"]`); l.Length() != 0 {
		t.Errorf("a command's hit shows a label %q after its type", l.Text())
	}
	// A hit of another tool's step shows the tool it called, in the page and the JSON.
	other := a["steps"].([]any)[4].(obj)
	url5 := other["payload"].(obj)["raw"].(obj)["url"].(string)
	doc5 := mustDocument(t, s, "/search?q="+url.QueryEscape(`"`+url5+`"`))
	tool := doc5.Find(`[data-testid="search-group"][data-session-id="a"] [data-testid="search-hit"][data-seq="5"] [data-testid="search-hit-label"]`)
	if tool.Text() != other["payload"].(obj)["tool_name"] {
		t.Errorf("the other step's hit shows tool %q; want %q", tool.Text(), other["payload"].(obj)["tool_name"])
	}
	var found store.SearchResult
	json.Unmarshal(s.get("/api/search?q="+url.QueryEscape(`"`+url5+`"`)).Body.Bytes(), &found)
	if len(found.Hits) != 2 || found.Hits[0].Tool != other["payload"].(obj)["tool_name"] {
		t.Errorf("GET /api/search for the other steps = %+v; want two hits with the tool %q", found.Hits, other["payload"].(obj)["tool_name"])
	}
	// A message's hit shows its role beside its type, and its snippet
	// without the role its indexed text begins with; a search for the
	// role itself keeps it in the snippet, marked.
	prompt := a["steps"].([]any)[0].(obj)["payload"].(obj)
	word := strings.Fields(prompt["text"].(string))[0]
	for _, c := range []struct{ q, snippet string }{
		{word, prompt["text"].(string)},
		{word + " " + prompt["role"].(string), prompt["role"].(string) + "\n" + prompt["text"].(string)},
	} {
		doc := mustDocument(t, s, "/search?q="+url.QueryEscape(c.q))
		msg := doc.Find(`[data-testid="search-group"][data-session-id="a"] [data-testid="search-hit"][data-seq="1"]`)
		if got := msg.Find(`[data-testid="search-hit-label"]`).Text(); got != prompt["role"] {
			t.Errorf("%s: message hit role %q; want %q", c.q, got, prompt["role"])
		}
		if got := msg.Find(`[data-testid="search-snippet"]`).Text(); got != c.snippet {
			t.Errorf("%s: message snippet %q; want %q", c.q, got, c.snippet)
		}
	}
	if doc.Find(`[data-testid="search-input"]`).AttrOr("value", "") != "needle" || doc.Find(`[data-testid="search-help"]`).Length() != 1 {
		t.Error("the page lacks the search box with the query or the help")
	}

	// Filters alone; a second page.
	doc = mustDocument(t, s, "/search?q=type:command")
	if n := doc.Find(`[data-testid="search-group"]`).Length(); n != 2 {
		t.Errorf("type:command groups = %d; want 2", n)
	}
	if doc := mustDocument(t, s, "/search"); doc.Find(`[data-testid="search-group"]`).Length() != 0 || doc.Find(`[data-testid="search-form"]`).Length() != 1 {
		t.Error("/search without q: want the form and no results")
	}

	for _, q := range []string{`"open`, "type:nope", "x&after=zz", "go\x00test"} {
		rec := s.get("/search?q=" + strings.ReplaceAll(url.QueryEscape(q), "%26after%3D", "&after="))
		doc, _ := goquery.NewDocumentFromReader(rec.Body)
		if rec.Code != http.StatusBadRequest || doc.Find(`[data-testid="search-problem"]`).Length() != 1 {
			t.Errorf("GET /search?q=%s = %d; want 400 with the problem on the page", q, rec.Code)
		}
	}
}

// TestSearchHitShowsError: a hit of a step that recorded an error shows
// it under the snippet, type and message, escaped, as the store cut them
// (at a word's end, store.HitErrorChars); a step without one shows none.
func TestSearchHitShowsError(t *testing.T) {
	s := newTestService(t)
	a := newBatch("a")
	steps := a["steps"].([]any)
	errs := map[int]obj{
		2: {"type": "exit_code", "message": "Exit code 1 <b>FAIL</b> handlers"},
		3: {"type": "tool_error", "message": strings.Repeat("old_string not found ", 20)},
	}
	for seq, e := range errs {
		steps[seq-1].(obj)["outcome"], steps[seq-1].(obj)["error"] = "failed", e
	}
	s.mustPush(a, http.StatusCreated)
	doc := mustDocument(t, s, "/search?q="+url.QueryEscape("type:command|edit|read"))
	hits := doc.Find(`[data-testid="search-hit"]`)
	if hits.Length() != 3 {
		t.Fatalf("hits = %d; want the command, the edit and the read", hits.Length())
	}
	hits.Each(func(_ int, h *goquery.Selection) {
		seq, _ := strconv.Atoi(h.AttrOr("data-seq", ""))
		shown := h.Find(`[data-testid="search-hit-error"]`)
		e, ok := errs[seq]
		if !ok {
			if shown.Length() != 0 {
				t.Errorf("step %d has no error; its hit shows %q", seq, shown.Text())
			}
			return
		}
		msg := e["message"].(string)
		if utf8.RuneCountInString(msg) > store.HitErrorChars { // the words that fit, then …
			var kept []string
			for _, w := range strings.Fields(msg) {
				if utf8.RuneCountInString(strings.Join(append(kept, w), " ")) > store.HitErrorChars {
					break
				}
				kept = append(kept, w)
			}
			msg = strings.Join(kept, " ") + "…"
		}
		if got := strings.Join(strings.Fields(shown.Text()), " "); got != strings.Join(strings.Fields(e["type"].(string)+" "+msg), " ") ||
			shown.Find(".hit-error-type").Text() != e["type"] || shown.Find("b").Length() != 0 {
			t.Errorf("step %d's hit shows the error %q; want %s %q, escaped", seq, got, e["type"], msg)
		}
	})
}

// withReplies is newBatch(id) with n more assistant replies of text.
func withReplies(id string, n int, text string) obj {
	b := newBatch(id)
	for i := range n {
		b["steps"] = append(b["steps"].([]any), obj{"id": fmt.Sprintf("%s-m%d", id, i), "session_id": id, "segment_index": 0, "turn_id": id + "-t1",
			"actor_id": id + "-root", "seq": 10 + i, "at": "2026-01-02T10:00:02Z", "type": "message", "decision": "n/a", "outcome": "ok",
			"content_status": "inline", "channels": []any{}, "flags": []any{}, "payload": obj{"role": "assistant", "text": text}})
	}
	return b
}

// TestSearchPagePages: 60 hits in two sessions of 30 are a page of 50 (30
// of the first session, 20 of the second) with a link to the last 10,
// each page saying what it holds.
func TestSearchPagePages(t *testing.T) {
	const perSession, pageSize = 30, 50
	s := newTestService(t)
	for _, id := range []string{"a", "b"} {
		s.mustPush(withReplies(id, perSession, "paged word"), http.StatusCreated)
	}
	doc := mustDocument(t, s, "/search?q=paged")
	next, _ := doc.Find(`[data-testid="search-more"]`).Attr("href")
	if n := doc.Find(`[data-testid="search-hit"]`).Length(); n != pageSize || next == "" {
		t.Fatalf("first page = %d hits, next %q; want %d and a link", n, next, pageSize)
	}
	if got, want := doc.Find(`[data-testid="search-count"]`).Text(), fmt.Sprintf("%d hits in 2 sessions on this page, newest first", pageSize); got != want {
		t.Errorf("first page says %q; want %q", got, want)
	}
	doc = mustDocument(t, s, next)
	if n := doc.Find(`[data-testid="search-hit"]`).Length(); n != 2*perSession-pageSize || doc.Find(`[data-testid="search-more"]`).Length() != 0 {
		t.Errorf("second page = %d hits; want the last %d and no link", n, 2*perSession-pageSize)
	}
	if got, want := doc.Find(`[data-testid="search-count"]`).Text(), fmt.Sprintf("%d hits in 1 session, newest first", 2*perSession-pageSize); got != want {
		t.Errorf("second page says %q; want %q", got, want)
	}
}

// A search of one session (session=<id>, the session page's search box)
// finds that session's hits alone, in the API and on the page, whose
// box keeps the session, whose next page does too, and which links to
// the session and to the same search over every session.
func TestSearchOneSession(t *testing.T) {
	s := newTestService(t)
	for _, id := range []string{"a b", "c"} { // an id a query's filter could not spell
		s.mustPush(withReplies(id, 60, "scoped word"), http.StatusCreated)
	}
	var res store.SearchResult
	json.Unmarshal(s.get("/api/search?q=scoped&limit=200&session="+url.QueryEscape("a b")).Body.Bytes(), &res)
	if len(res.Hits) != 60 || slices.ContainsFunc(res.Hits, func(h store.SearchHit) bool { return h.SessionID != "a b" }) {
		t.Errorf("GET /api/search?session=a b = %d hits; want the 60 of session \"a b\" alone", len(res.Hits))
	}

	page := "/search?" + url.Values{"q": {"scoped"}, "session": {"a b"}}.Encode()
	doc := mustDocument(t, s, page)
	if groups := doc.Find(`[data-testid="search-group"]`); groups.Length() != 1 || groups.AttrOr("data-session-id", "") != "a b" {
		t.Fatalf("groups of %s = %d; want session \"a b\" alone", page, groups.Length())
	}
	if v := doc.Find(`[data-testid="search-form"] input[name="session"]`).AttrOr("value", ""); v != "a b" {
		t.Errorf("the search box's session = %q; want \"a b\", so a new query stays in the session", v)
	}
	scope := doc.Find(`[data-testid="search-scope"]`)
	if scope.Find(`a[href="/session?id=a+b"]`).Length() != 1 || scope.Find(`[data-testid="search-everywhere"]`).AttrOr("href", "") != "/search?q=scoped" {
		t.Errorf("the scope line %q links %v; want the session and /search?q=scoped", scope.Text(), scope.Find("a").Map(func(_ int, a *goquery.Selection) string { return a.AttrOr("href", "") }))
	}
	next := doc.Find(`[data-testid="search-more"]`).AttrOr("href", "")
	if n := doc.Find(`[data-testid="search-hit"]`).Length(); n != 50 || !strings.Contains(next, "session=a+b") {
		t.Fatalf("first page = %d hits, next %q; want 50 and a link in the session", n, next)
	}
	doc = mustDocument(t, s, next)
	if n, groups := doc.Find(`[data-testid="search-hit"]`).Length(), doc.Find(`[data-testid="search-group"]`); n != 10 || groups.AttrOr("data-session-id", "") != "a b" {
		t.Errorf("second page = %d hits of %q; want the session's last 10", n, groups.AttrOr("data-session-id", ""))
	}

	// The session page's box searches that session.
	form := mustDocument(t, s, "/session?id="+url.QueryEscape("a b")).Find(`[data-testid="session-search"]`)
	if form.AttrOr("action", "") != "/search" || form.Find(`input[name="session"]`).AttrOr("value", "") != "a b" || form.Find(`input[name="q"]`).Length() != 1 {
		t.Errorf("the session page's search form = %q; want /search with session \"a b\" and q", form.AttrOr("action", ""))
	}
}

// A search that runs out of time (store.SearchBudget): each page here
// stops after its first session, and says so. The API marks the page
// partial with a cursor to go on, the page tells that older sessions were
// not searched and links to them, and following the links finds every
// hit. A search that found nothing in its time is 400 on both, saying so.
func TestSearchOutOfTime(t *testing.T) {
	s := newTestService(t)
	for i, id := range []string{"a", "b", "c"} {
		b := newBatch(id)
		b["session"].(obj)["started_at"] = fmt.Sprintf("2026-01-0%dT10:00:00Z", i+1)
		s.mustPush(b, http.StatusCreated)
	}
	defer func(budget time.Duration) { store.SearchClock, store.SearchBudget = time.Now, budget }(store.SearchBudget)
	store.SearchClock = func() time.Time { return time.Now().Add(2 * store.SearchBudget) }

	var res store.SearchResult
	rec := s.get("/api/search?q=test")
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/search = %d %s", rec.Code, rec.Body)
	}
	if !res.Partial || res.Next == "" || len(res.Hits) == 0 || res.Hits[len(res.Hits)-1].SessionID != "c" || !strings.Contains(rec.Body.String(), `"partial":true`) {
		t.Errorf("GET /api/search = %s; want the newest session's hits, partial and a next", rec.Body)
	}

	var sessions []string
	href := "/search?q=test"
	for range 10 {
		doc := mustDocument(t, s, href)
		doc.Find(`[data-testid="search-group"]`).Each(func(_ int, g *goquery.Selection) {
			sessions = append(sessions, g.AttrOr("data-session-id", ""))
		})
		more := doc.Find(`[data-testid="search-more"]`)
		partial := doc.Find(`[data-testid="search-partial"]`)
		if more.Length() == 0 {
			break
		}
		if !strings.Contains(partial.Text(), "stopped after 5s") || strings.TrimSpace(more.Text()) != "Search older sessions →" {
			t.Errorf("page %s says %q and links %q; want that it stopped after 5s, and a link to older sessions", href, partial.Text(), more.Text())
		}
		href = more.AttrOr("href", "")
	}
	if want := []string{"c", "b", "a"}; !slices.Equal(sessions, want) {
		t.Errorf("pages that stop at each session showed %v; want %v", sessions, want)
	}

	store.SearchClock = time.Now
	store.SearchBudget = time.Nanosecond
	rec = s.get("/api/search?q=test")
	if e := decodeError(t, rec); rec.Code != http.StatusBadRequest || e.Error != "invalid search query" || len(e.Details) == 0 || !strings.Contains(e.Details[0].Message, "took longer than 1ns") {
		t.Errorf("GET /api/search with no time = %d %s; want 400 saying it took too long", rec.Code, rec.Body)
	}
	rec = s.get("/search?q=test")
	doc, _ := goquery.NewDocumentFromReader(rec.Body)
	if p := doc.Find(`[data-testid="search-problem"]`).Text(); rec.Code != http.StatusBadRequest || !strings.Contains(p, "took longer than 1ns") {
		t.Errorf("GET /search with no time = %d, %q; want 400 saying it took too long", rec.Code, p)
	}
}

// TestSearchPageExamples: the search page without a query offers queries
// to start from, each a valid search that finds what it says (a twin
// session's steps are not found when the page searches one session).
func TestSearchPageExamples(t *testing.T) {
	s := newTestService(t)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	for _, sid := range []string{"examples-a", "examples-b"} {
		b := newBatch(sid)
		for _, st := range b["steps"].(arr) {
			st := st.(obj)
			if st["seq"] == 2 {
				st["outcome"] = "failed"
				st["flags"] = arr{obj{"kind": "dangerous_command", "severity": "warn", "reason": "rm"}}
				st["payload"].(obj)["command"] = "rm -rf build"
			}
		}
		s.mustPush(b, http.StatusCreated)
		if code, body := call(t, srv, http.MethodPost, "/api/sessions/"+sid+"/notes", `{"seq":2,"author":"Ann","text":"why rm -rf?"}`, nil); code != http.StatusCreated {
			t.Fatalf("POST note = %d %s; want 201", code, body)
		}
	}
	for _, page := range []string{"/search", "/search?session=examples-a"} {
		links := mustDocument(t, s, page).Find(`[data-testid="search-examples"] a`)
		if links.Length() != len(searchExamples) {
			t.Fatalf("%s offers %d examples; want %d", page, links.Length(), len(searchExamples))
		}
		links.Each(func(i int, a *goquery.Selection) {
			href := a.AttrOr("href", "")
			u, err := url.Parse(href)
			if err != nil || u.Query().Get("q") != searchExamples[i].query || u.Query().Get("session") != mustParseQuery(t, page).Get("session") {
				t.Errorf("example %d links to %q; want the search of %q on %s's scope", i, href, searchExamples[i].query, page)
				return
			}
			doc := mustDocument(t, s, href) // 200: a valid query
			groups := doc.Find(`[data-testid="search-group"]`)
			want := 2
			if strings.Contains(page, "session=") {
				want = 1
			}
			if groups.Length() != want || doc.Find(`[data-testid="search-hit"]`).Length() == 0 {
				t.Errorf("%s finds %d sessions; want %d, each with hits", href, groups.Length(), want)
			}
		})
	}
}

func mustParseQuery(t *testing.T, page string) url.Values {
	t.Helper()
	u, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}
