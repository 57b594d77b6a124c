package handlers

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// call makes a request to a real server with a JSON body (if any) and the
// given headers, and returns the status and body.
func call(t *testing.T, srv *httptest.Server, method, path, body string, header map[string]string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// reviewService serves session s1 (steps 1..n) with a verdict and a note,
// and session gone, deleted; it returns the server and the note's id.
func reviewService(t *testing.T) (*testService, *httptest.Server, string) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	s.mustPush(newBatch("gone"), http.StatusCreated)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	if code, body := call(t, srv, http.MethodPut, "/api/sessions/s1/verdict", `{"state":"approved","reviewer":"Ann"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT verdict = %d %s; want 200", code, body)
	}
	code, body := call(t, srv, http.MethodPost, "/api/sessions/s1/notes", `{"seq":1,"author":"Ann","text":"look here"}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST note = %d %s; want 201", code, body)
	}
	var n store.Note
	if err := json.Unmarshal([]byte(body), &n); err != nil || n.ID == 0 {
		t.Fatalf("POST note answer %s: %v", body, err)
	}
	if code, body := call(t, srv, http.MethodDelete, "/api/sessions/gone", "", nil); code != http.StatusOK {
		t.Fatalf("DELETE gone = %d %s", code, body)
	}
	return s, srv, jsonNumber(n.ID)
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// reviewWrites are the routes that write what reviewers write, with a
// valid body, on session id and note note.
func reviewWrites(id, note string) []struct{ method, path, body string } {
	return []struct{ method, path, body string }{
		{http.MethodPut, "/api/sessions/" + id + "/verdict", `{"state":"needs_attention","note":"n","reviewer":"Bob"}`},
		{http.MethodDelete, "/api/sessions/" + id + "/verdict", ""},
		{http.MethodPost, "/api/sessions/" + id + "/notes", `{"seq":2,"author":"Bob","text":"and here"}`},
		{http.MethodPut, "/api/sessions/" + id + "/notes/" + note, `{"author":"Bob","text":"edited"}`},
		{http.MethodDelete, "/api/sessions/" + id + "/notes/" + note, ""},
	}
}

func TestReviewRoutesRefuseOtherSites(t *testing.T) {
	s, srv, note := reviewService(t)
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "http://evil.example"},
	} {
		for _, w := range reviewWrites("s1", note) {
			t.Run(w.method+" "+w.path, func(t *testing.T) {
				before := s.snapshot()
				code, body := call(t, srv, w.method, w.path, w.body, h)
				if code != http.StatusForbidden || !strings.Contains(body, "cross-site request refused") {
					t.Errorf("%s %s with %v = %d %s; want 403 cross-site request refused", w.method, w.path, h, code, body)
				}
				if s.snapshot() != before {
					t.Error("a refused write changed the store")
				}
			})
		}
	}
	// The app's own requests pass.
	for _, w := range reviewWrites("s1", note) {
		if code, body := call(t, srv, w.method, w.path, w.body, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}); code/100 != 2 {
			t.Errorf("%s %s from the app = %d %s; want success", w.method, w.path, code, body)
		}
	}
}

func TestReviewRoutesUnknownIs404(t *testing.T) {
	s, srv, note := reviewService(t)
	for _, id := range []string{"gone", "never-stored"} {
		for _, w := range reviewWrites(id, note) {
			t.Run(w.method+" "+w.path, func(t *testing.T) {
				before := s.snapshot()
				if code, body := call(t, srv, w.method, w.path, w.body, nil); code != http.StatusNotFound || body != `{"error":"not found"}`+"\n" {
					t.Errorf("%s %s = %d %s; want 404 not found", w.method, w.path, code, body)
				}
				if s.snapshot() != before {
					t.Error("a 404 changed the store")
				}
			})
		}
	}
	for _, bad := range []string{"999999", "x", "0"} {
		for _, w := range reviewWrites("s1", bad)[3:] {
			if code, _ := call(t, srv, w.method, w.path, w.body, nil); code != http.StatusNotFound {
				t.Errorf("%s %s = %d; want 404", w.method, w.path, code)
			}
		}
	}
}

func TestReviewRoutesBadBodies(t *testing.T) {
	s, srv, note := reviewService(t)
	long := strings.Repeat("x", store.MaxNoteChars+1)
	cases := []struct {
		name, method, path, body string
		status                   int
		err, detail              string // the error, and the path of its first detail
	}{
		{"verdict not JSON", http.MethodPut, "/api/sessions/s1/verdict", `{`, 400, "body is not valid JSON", ""},
		{"verdict not an object", http.MethodPut, "/api/sessions/s1/verdict", `"approved"`, 400, "body must be a JSON object", ""},
		{"verdict without state", http.MethodPut, "/api/sessions/s1/verdict", `{"reviewer":"Ann"}`, 400, "invalid verdict", "state"},
		{"verdict unknown field", http.MethodPut, "/api/sessions/s1/verdict", `{"state":"ok","by":"Ann"}`, 400, "invalid verdict", "by"},
		{"verdict null note", http.MethodPut, "/api/sessions/s1/verdict", `{"state":"ok","note":null}`, 400, "invalid verdict", "note"},
		{"verdict long note", http.MethodPut, "/api/sessions/s1/verdict", `{"state":"ok","note":"` + long + `"}`, 400, "invalid verdict", "note"},
		{"note without seq", http.MethodPost, "/api/sessions/s1/notes", `{"author":"Ann","text":"x"}`, 400, "invalid note", "seq"},
		{"note on no step", http.MethodPost, "/api/sessions/s1/notes", `{"seq":42,"author":"Ann","text":"x"}`, 400, "invalid note", "seq"},
		{"note seq not an integer", http.MethodPost, "/api/sessions/s1/notes", `{"seq":"1","author":"Ann","text":"x"}`, 400, "invalid note", "seq"},
		{"note too long", http.MethodPost, "/api/sessions/s1/notes", `{"seq":1,"author":"Ann","text":"` + long + `"}`, 400, "invalid note", "text"},
		{"edit with seq", http.MethodPut, "/api/sessions/s1/notes/" + note, `{"seq":1,"author":"Ann","text":"x"}`, 400, "invalid note", "seq"},
		{"edit empty text", http.MethodPut, "/api/sessions/s1/notes/" + note, `{"author":"Ann","text":""}`, 400, "invalid note", "text"},
		{"body past the limit", http.MethodPost, "/api/sessions/s1/notes", `{"seq":1,"author":"Ann","text":"` + strings.Repeat("x", maxReviewBody) + `"}`, 413, "body larger than 131072 bytes", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.snapshot()
			code, body := call(t, srv, c.method, c.path, c.body, nil)
			var e errorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || code != c.status || e.Error != c.err {
				t.Fatalf("%s %s = %d %s; want %d %q", c.method, c.path, code, body, c.status, c.err)
			}
			if c.detail != "" && (len(e.Details) == 0 || e.Details[0].Path != c.detail || e.Details[0].Message == "") {
				t.Errorf("details = %+v; want a problem at %s", e.Details, c.detail)
			}
			if s.snapshot() != before {
				t.Error("a refused body changed the store")
			}
		})
	}
	t.Run("not JSON content", func(t *testing.T) {
		code, _ := call(t, srv, http.MethodPut, "/api/sessions/s1/verdict", `{"state":"ok"}`, map[string]string{"Content-Type": "text/plain"})
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("PUT verdict as text/plain = %d; want 415", code)
		}
	})
}

func TestReviewRoutesWrite(t *testing.T) {
	_, srv, note := reviewService(t)
	var d store.SessionDetail
	get := func() {
		t.Helper()
		code, body := call(t, srv, http.MethodGet, "/api/sessions/s1", "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET = %d", code)
		}
		d = store.SessionDetail{}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
	}
	get()
	if d.Verdict == nil || *d.Verdict != (store.Verdict{State: "approved", Reviewer: "Ann"}) || len(d.Notes) != 1 || d.Notes[0].Text != "look here" || d.Notes[0].Seq != 1 {
		t.Fatalf("GET after PUT verdict and POST note = verdict %+v, notes %+v", d.Verdict, d.Notes)
	}
	code, body := call(t, srv, http.MethodGet, "/api/sessions?verdict=approved&agent=testagent", "", nil)
	var l store.SessionList
	if err := json.Unmarshal([]byte(body), &l); code != http.StatusOK || err != nil || len(l.Sessions) != 1 || l.Sessions[0].ID != "s1" {
		t.Errorf("GET /api/sessions?verdict=approved = %d %s; want s1", code, body)
	}
	if code, body := call(t, srv, http.MethodPut, "/api/sessions/s1/notes/"+note, `{"author":"Bob","text":"edited"}`, nil); code != http.StatusOK || !strings.Contains(body, `"text":"edited"`) {
		t.Errorf("PUT note = %d %s; want 200 with the note", code, body)
	}
	if code, body := call(t, srv, http.MethodDelete, "/api/sessions/s1/verdict", "", nil); code != http.StatusOK || body != `{"session_id":"s1","verdict":null}`+"\n" {
		t.Errorf("DELETE verdict = %d %s", code, body)
	}
	if code, body := call(t, srv, http.MethodDelete, "/api/sessions/s1/notes/"+note, "", nil); code != http.StatusOK || body != `{"deleted":`+note+"}\n" {
		t.Errorf("DELETE note = %d %s", code, body)
	}
	get()
	if d.Verdict != nil || len(d.Notes) != 0 {
		t.Errorf("GET after the deletes = verdict %+v, notes %+v; want none", d.Verdict, d.Notes)
	}
}

func TestFileChangesRoute(t *testing.T) {
	_, srv, _ := reviewService(t)
	code, body := call(t, srv, http.MethodGet, "/api/sessions/s1/changes", "", nil)
	var a changesAnswer
	if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil || a.SessionID != "s1" || len(a.Files) != 1 {
		t.Fatalf("GET changes = %d %s; want the one file s1 edited", code, body)
	}
	if f := a.Files[0]; f.Path != "/tmp/ws/main.go" || f.Known || len(f.Edits) != 1 || f.Edits[0].Seq != 3 || f.Edits[0].New == nil {
		t.Errorf("GET changes = %+v; want main.go's one edit, step 3", f)
	}
	for _, id := range []string{"gone", "never-stored"} {
		if code, _ := call(t, srv, http.MethodGet, "/api/sessions/"+id+"/changes", "", nil); code != http.StatusNotFound {
			t.Errorf("GET changes of %s = %d; want 404", id, code)
		}
	}
}

func TestChangeViews(t *testing.T) {
	text := func(s string) *string { return &s }
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	files := []store.FileChange{
		{Path: "/w/known.txt", Known: true, Before: before, After: strings.Replace(before, "e\n", "E\n", 1), Created: true,
			Edits: []store.FileEdit{{Seq: 2, FullWrite: true}, {Seq: 3}}},
		{Path: "/w/edited.txt", Failed: true, Edits: []store.FileEdit{
			{Seq: 4, Old: text("x\ny"), New: text("x\nz\nw")},
			{Seq: 5, Failed: true, Old: text("q"), New: text("r")},
			{Seq: 6, Cut: true},
		}},
	}
	v := changesView("s", "/w", files, 0, firstChanges).Files
	known := v[0]
	if known.Path != files[0].Path || known.Name != "known.txt" {
		t.Errorf("known file path %q shown as %q; want %q shown in its workspace as known.txt", known.Path, known.Name, files[0].Path)
	}
	var diff []string
	for _, l := range known.Net {
		diff = append(diff, l.Text)
	}
	if got, want := strings.Join(diff, "|"), "…| b| c| d|-e|+E| f| g| h|…"; got != want || known.Added != 1 || known.Removed != 1 || known.Status != "created" {
		t.Errorf("known file: diff %s, +%d −%d, %s; want %s, +1 −1, created", got, known.Added, known.Removed, known.Status, want)
	}
	edited := v[1]
	if edited.NetShown || edited.Added != 2 || edited.Removed != 1 || !edited.Failed || len(edited.Edits) != 3 ||
		len(edited.Edits[0].Diff) != 4 || len(edited.Edits[1].Diff) != 2 || !edited.Edits[2].Cut || edited.Edits[1].Href != "#step-5" {
		t.Errorf("edited file = %+v; want each edit's diff, the failed one not counted", edited)
	}

	many := store.FileChange{Path: "/w/many.txt"}
	for i := range changeEdits + 50 {
		many.Edits = append(many.Edits, store.FileEdit{Seq: int64(i + 1), Old: text("a"), New: text("b")})
	}
	if v := changesView("s", "", []store.FileChange{many}, 0, firstChanges).Files[0]; len(v.Edits) != changeEdits || v.MoreEdits != 50 {
		t.Errorf("a file of %d edits lists %d, %d more; want %d, 50 more", len(many.Edits), len(v.Edits), v.MoreEdits, changeEdits)
	}
}

// The demo shows verdicts and notes but offers no form, and refuses the
// routes that write them.
func TestReviewInTheDemo(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	if err := s.store.SetVerdict(t.Context(), "s1", store.Verdict{State: "approved"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.AddNote(t.Context(), "s1", store.NoteInput{Seq: 1, Author: "Ann", Text: "fine"}); err != nil {
		t.Fatal(err)
	}
	demo := httptest.NewServer(Routes(Deps{Store: s.store, Hub: s.hub, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Demo: true, Reviewer: "Ann"}))
	t.Cleanup(demo.Close)
	code, page := call(t, demo, http.MethodGet, "/session?id=s1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /session = %d", code)
	}
	for _, want := range []string{`data-testid="verdict-state"`, `data-testid="step-note"`, `data-testid="note-item"`} {
		if !strings.Contains(page, want) {
			t.Errorf("demo page has no %s", want)
		}
	}
	for _, not := range []string{`data-testid="verdict-form"`, `data-testid="note-add"`, `data-testid="note-edit"`, `data-testid="note-dialog"`} {
		if strings.Contains(page, not) {
			t.Errorf("demo page offers %s", not)
		}
	}
	for _, w := range reviewWrites("s1", "1") {
		if code, body := call(t, demo, w.method, w.path, w.body, nil); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("demo %s %s = %d %s; want 403 read-only", w.method, w.path, code, body)
		}
	}
}

// A session's page links to the next session not reviewed, as the list of
// those has them (newest first): the next older one, else from the newest,
// never itself or a session with a verdict, and none when no other waits.
// The link asks again when followed, so a session judged since the page
// was drawn is not gone to.
func TestNextUnreviewedLink(t *testing.T) {
	s := newTestService(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	// n1 is the newest, n4 the oldest.
	for i, id := range []string{"n4", "n3", "n2", "n1"} {
		x := reviewFixture(id, start.Add(time.Duration(i)*time.Hour))
		x["steps"].(arr)[0] = stepRec(id, 1, 1, start, "message", userPrompt("the task of "+id))
		s.mustPush(x, http.StatusCreated)
	}
	verdict := func(id string) {
		t.Helper()
		if err := s.store.SetVerdict(t.Context(), id, store.Verdict{State: "approved"}); err != nil {
			t.Fatal(err)
		}
	}
	// follow is where the link's address leads now.
	follow := func(href string) string {
		t.Helper()
		rec := s.get(href)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("GET %s = %d %s; want 303", href, rec.Code, rec.Body)
		}
		return rec.Header().Get("Location")
	}
	// next is the session the page of id links to, by its title, and the
	// link's address.
	next := func(id string) (to, href string) {
		t.Helper()
		link := mustDocument(t, s, "/session?id="+id).Find(`[data-testid="next-unreviewed"] a`)
		if link.Length() == 0 {
			return "", ""
		}
		href, _ = link.Attr("href")
		to = strings.TrimPrefix(follow(href), "/session?id=")
		if want := "the task of " + to; link.Text() != want {
			t.Errorf("%s: the link to %s reads %q; want its title %q", id, to, link.Text(), want)
		}
		return to, href
	}
	verdict("n3")
	for id, want := range map[string]string{"n1": "n2", "n2": "n4", "n3": "n4", "n4": "n1"} {
		if got, _ := next(id); got != want {
			t.Errorf("next after %s = %q; want %q", id, got, want)
		}
	}
	// n4's page, drawn before n1 is judged, leads to n2 after.
	_, href := next("n4")
	verdict("n1")
	if got := follow(href); got != "/session?id=n2" {
		t.Errorf("the link drawn before n1 was judged leads to %s; want /session?id=n2", got)
	}
	verdict("n2")
	if got, _ := next("n4"); got != "" {
		t.Errorf("next after n4, the only one left = %q; want no link", got)
	}
	if got := follow(href); got != "/?unreviewed=1" {
		t.Errorf("the link drawn before the others were judged leads to %s; want the list of sessions not reviewed", got)
	}
	if got, _ := next("n1"); got != "n4" {
		t.Errorf("next after n1, reviewed = %q; want n4", got)
	}
	if rec := s.get("/session/next?id=gone"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /session/next of an unknown session = %d; want 404", rec.Code)
	}
}

// TestListRowCountsNotes: a session's row in the list says how many notes
// its steps have, linked to the session page's notes, and the list's JSON
// summary counts them too; a session without notes shows none, and the
// "with notes" filter (noted=1) leaves it out, on the page and in the API.
func TestListRowCountsNotes(t *testing.T) {
	s, srv, _ := reviewService(t) // one note on s1
	s.mustPush(newBatch("plain"), http.StatusCreated)
	if code, body := call(t, srv, http.MethodPost, "/api/sessions/s1/notes", `{"seq":2,"author":"Bob","text":"and here"}`, nil); code != http.StatusCreated {
		t.Fatalf("POST note = %d %s; want 201", code, body)
	}
	const want = 2
	doc := mustDocument(t, s, "/")
	row := doc.Find(`[data-testid="session-row"][data-session-id="s1"] [data-testid="notes-count"]`)
	if row.Text() != strconv.Itoa(want)+" notes" || row.AttrOr("href", "") != "/session?id=s1#notes" {
		t.Errorf("s1's row: notes %q linking to %q; want %q to /session?id=s1#notes", row.Text(), row.AttrOr("href", ""), strconv.Itoa(want)+" notes")
	}
	if n := doc.Find(`[data-testid="session-row"][data-session-id="plain"] [data-testid="notes-count"]`).Length(); n != 0 {
		t.Errorf("a session without notes shows %d notes counts; want none", n)
	}
	var l store.SessionList
	if err := json.Unmarshal(s.get("/api/sessions").Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Sessions {
		if o.ID == "s1" && o.Summary.Notes != want || o.ID != "s1" && o.Summary.Notes != 0 {
			t.Errorf("GET /api/sessions: %s's summary.notes = %d", o.ID, o.Summary.Notes)
		}
	}
	if len(l.Sessions) != 2 {
		t.Fatalf("GET /api/sessions = %d sessions; want s1 and plain", len(l.Sessions))
	}
	doc = mustDocument(t, s, "/?noted=1")
	rows := doc.Find(`[data-testid="session-row"]`).Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-session-id", "") })
	if len(rows) != 1 || rows[0] != "s1" || doc.Find(`[data-testid="filter-noted"]`).AttrOr("checked", "no") == "no" {
		t.Errorf("/?noted=1 rows %q; want s1 alone, the box checked", rows)
	}
	var noted store.SessionList
	if err := json.Unmarshal(s.get("/api/sessions?noted=1").Body.Bytes(), &noted); err != nil || len(noted.Sessions) != 1 || noted.Sessions[0].ID != "s1" {
		t.Errorf("GET /api/sessions?noted=1 = %+v, %v; want s1 alone", noted.Sessions, err)
	}
}

// A search's hit shows its step's notes under its snippet, escaped, each
// cut to noteChars, the first store.MaxHitNotes with a link to the rest;
// note:* finds every step with a note, and a session's notes link to it.
func TestSearchHitShowsNotes(t *testing.T) {
	s, srv, _ := reviewService(t) // "look here" by Ann on s1's step 1
	long := strings.Repeat("word ", noteChars)
	written := map[int][]string{1: {"look here"}, 2: {"<b>not bold</b>", long, "third", "fourth", "fifth"}}
	for _, text := range written[2] {
		body, _ := json.Marshal(map[string]any{"seq": 2, "author": "Bob", "text": text})
		if code, out := call(t, srv, http.MethodPost, "/api/sessions/s1/notes", string(body), nil); code != http.StatusCreated {
			t.Fatalf("POST note = %d %s; want 201", code, out)
		}
	}
	// The session's notes link to every session's, the search of note:*.
	everywhere := mustDocument(t, s, "/session?id=s1").Find(`[data-testid="notes"] [data-testid="notes-everywhere"]`).AttrOr("href", "")
	if want := "/search?q=" + url.QueryEscape("note:*"); everywhere != want {
		t.Fatalf("the session's notes link to %q; want %q", everywhere, want)
	}
	doc := mustDocument(t, s, everywhere)
	hits := doc.Find(`[data-testid="search-hit"]`)
	if hits.Length() != len(written) {
		t.Fatalf("note:* = %d hits; want the %d steps with notes", hits.Length(), len(written))
	}
	hits.Each(func(_ int, h *goquery.Selection) {
		seq, _ := strconv.Atoi(h.AttrOr("data-seq", ""))
		all := written[seq]
		var want []string
		for _, text := range all[:min(len(all), store.MaxHitNotes)] {
			if r := []rune(text); len(r) > noteChars {
				text = string(r[:noteChars]) + "…"
			}
			want = append(want, text)
		}
		notes := h.Find(`[data-testid="search-hit-notes"] li`)
		var got []string
		notes.Each(func(_ int, n *goquery.Selection) {
			if !n.HasClass("muted") {
				got = append(got, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(n.Text()), n.Find(".hit-note-author").Text())))
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("step %d's notes = %q; want %q", seq, got, want)
		}
		if h.Find(`[data-testid="search-hit-notes"] b`).Length() > 0 {
			t.Errorf("step %d: a note's HTML was rendered, not escaped", seq)
		}
		more := notes.Filter(".muted")
		if rest := len(all) - len(want); rest > 0 {
			link := h.Find(`[data-testid="search-hit-link"]`).AttrOr("href", "")
			if more.Text() != views.Plural(rest, "more note") || more.Find("a").AttrOr("href", "") != link {
				t.Errorf("step %d: %q linking to %q; want %q linking to the step, %q", seq, more.Text(), more.Find("a").AttrOr("href", ""), views.Plural(rest, "more note"), link)
			}
		} else if more.Length() != 0 {
			t.Errorf("step %d shows %q; want no more notes", seq, more.Text())
		}
	})
	// note: marks what it matched in the notes, as a snippet its words.
	doc = mustDocument(t, s, "/search?q="+url.QueryEscape("note:BOLD"))
	if marks := doc.Find(`[data-testid="search-hit-notes"] mark`); marks.Length() != 1 || marks.Text() != "bold" {
		t.Errorf("note:BOLD marks %d runs, %q; want the note's \"bold\"", marks.Length(), marks.Text())
	}
}
