package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
	"github.com/agentreview/service/store/postgres/pgtest"
)

const teamOrigin = "https://review.example.com"

// teamServer is the real router in team mode on a real port, over a
// PostgreSQL database of the test's own: sessions and push tokens.
type teamServer struct {
	t     testing.TB
	srv   *httptest.Server
	store *postgres.Store
	hub   *Hub
}

func newTeamServer(t testing.TB, team Team) *teamServer {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatalf("postgres.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewHub(st, log)
	if team.Origin == nil {
		team.Origin, _ = url.Parse(teamOrigin)
	}
	if team.Users == nil {
		team.Users = HeaderIdentity{Header: "X-Forwarded-User"}
	}
	team.Tokens = st
	srv := httptest.NewServer(Routes(Deps{Store: st, Hub: hub, Log: log, Team: &team}))
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close)
	return &teamServer{t: t, srv: srv, store: st, hub: hub}
}

func (s *teamServer) mustToken(user string) string {
	s.t.Helper()
	tok, err := s.store.AddToken(context.Background(), user)
	if err != nil {
		s.t.Fatalf("AddToken(%s) = %v", user, err)
	}
	return tok
}

// do sends a request to the server with the team's Host and the headers
// given as name, value pairs.
func (s *teamServer) do(method, path string, body []byte, header ...string) (*http.Response, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a stream answered 200 ends too
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Host = "review.example.com"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Add(header[i], header[i+1])
		}
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (s *teamServer) push(tok string, b obj, want int) {
	s.t.Helper()
	if res, body := s.do(http.MethodPost, "/api/ingest", mustJSON(s.t, b), "Authorization", "Bearer "+tok); res.StatusCode != want {
		s.t.Fatalf("push %s = %d %s; want %d", b["session"].(obj)["id"], res.StatusCode, body, want)
	}
}

// TestTeamPushOwner: a push is stored as the user whose token it brings,
// whatever header it sends, and the list filters by owner in JSON and on
// the page.
func TestTeamPushOwner(t *testing.T) {
	s := newTeamServer(t, Team{})
	owners := map[string]string{"a1": "alice@example.com", "a2": "alice@example.com", "b1": "bob"}
	tokens := map[string]string{}
	for _, user := range []string{"alice@example.com", "bob"} {
		tokens[user] = s.mustToken(user)
	}
	for id, user := range owners {
		// The header names someone else: a push is its token's.
		b := newBatch(id)
		res, body := s.do(http.MethodPost, "/api/ingest", mustJSON(t, b), "Authorization", "Bearer "+tokens[user], "X-Forwarded-User", "mallory")
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("push %s = %d %s; want 201", id, res.StatusCode, body)
		}
	}
	for id, user := range owners {
		d, err := s.store.Detail(context.Background(), id, store.DetailQuery{})
		if err != nil || d.OwnerID != user {
			t.Errorf("stored owner of %s = %q, %v; want %q", id, d.OwnerID, err, user)
		}
	}
	// A later push of alice's session with bob's token leaves it alice's.
	s.push(tokens["bob"], stepsOnly("a1", newBatch("a1")["steps"].(arr)[0]), http.StatusOK)
	if d, _ := s.store.Detail(context.Background(), "a1", store.DetailQuery{}); d.OwnerID != owners["a1"] {
		t.Errorf("owner of a1 after bob's push = %q; want %q", d.OwnerID, owners["a1"])
	}

	for _, owner := range []string{"alice@example.com", "bob", "nobody", ""} {
		var want []string
		for id, user := range owners {
			if owner == "" || user == owner {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		res, body := s.do(http.MethodGet, "/api/sessions?owner="+url.QueryEscape(owner), nil, "X-Forwarded-User", "carol")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/sessions?owner=%s = %d %s", owner, res.StatusCode, body)
		}
		var l store.SessionList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range l.Sessions {
			got = append(got, o.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("GET /api/sessions?owner=%s = %v; want %v", owner, got, want)
		}

		res, body = s.do(http.MethodGet, "/?owner="+url.QueryEscape(owner), nil, "X-Forwarded-User", "carol")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /?owner=%s = %d", owner, res.StatusCode)
		}
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := doc.Find(`[data-testid="filter-owner"]`).Attr("value"); v != owner {
			t.Errorf("page owner filter = %q; want %q", v, owner)
		}
		for id := range owners {
			shown := doc.Find(`a[href="/session?id=`+id+`"]`).Length() > 0
			if shown != slices.Contains(want, id) {
				t.Errorf("page ?owner=%s shows %s = %v; want %v", owner, id, shown, !shown)
			}
		}
	}
}

// TestTeamPushRefused: a push without a team token is 401 with the
// spec's header and message shape, and stores nothing.
func TestTeamPushRefused(t *testing.T) {
	s := newTeamServer(t, Team{})
	good := s.mustToken("alice")
	revoked := s.mustToken("gone")
	if _, err := s.store.RevokeTokens(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	for name, header := range map[string][]string{
		"no token":       nil,
		"user header":    {"X-Forwarded-User", "alice"},
		"wrong token":    {"Authorization", "Bearer " + strings.ToUpper(good)},
		"revoked token":  {"Authorization", "Bearer " + revoked},
		"basic":          {"Authorization", "Basic " + good},
		"empty bearer":   {"Authorization", "Bearer "},
		"local token":    {"Authorization", "Bearer " + testToken},
		"token as query": {"X-Token", good},
	} {
		t.Run(name, func(t *testing.T) {
			res, body := s.do(http.MethodPost, "/api/ingest", mustJSON(t, newBatch("s1")), header...)
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("push = %d %s; want 401", res.StatusCode, body)
			}
			if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="service"` {
				t.Errorf("www-authenticate = %q", got)
			}
			var e errorBody
			json.Unmarshal([]byte(body), &e)
			if !strings.HasPrefix(e.Error, "missing or invalid bearer token (see ") {
				t.Errorf("error = %q; want the spec's message", e.Error)
			}
		})
	}
	if l, err := s.store.List(context.Background(), store.ListQuery{}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("sessions after refused pushes = %d, %v; want none", len(l.Sessions), err)
	}
}

// TestTeamReadsNeedUser: every route but push, static files and sign-in
// needs a user from the header the admin named (or, for /api, a team
// token); without one /api is 401 JSON and a page a 401 page.
func TestTeamReadsNeedUser(t *testing.T) {
	s := newTeamServer(t, Team{})
	tok := s.mustToken("alice")
	s.push(tok, newBatch("s1"), http.StatusCreated)
	routes := []string{"/api/sessions", "/api/sessions/s1", "/api/sessions/s1/export", "/api/search?q=test", "/api/usage", "/api/events", "/", "/session?id=s1", "/search?q=test", "/usage", "/rows"}
	for _, path := range routes {
		for name, header := range map[string][]string{
			"no user":      nil,
			"other header": {"X-Remote-User", "alice"},
			"two users":    {"X-Forwarded-User", "alice", "X-Forwarded-User", "bob"},
			"empty user":   {"X-Forwarded-User", ""},
			"long user":    {"X-Forwarded-User", strings.Repeat("a", store.MaxNameChars+1)},
			"wrong token":  {"Authorization", "Bearer nope"},
		} {
			res, body := s.do(http.MethodGet, path, nil, header...)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s (%s) = %d; want 401", path, name, res.StatusCode)
				continue
			}
			if strings.HasPrefix(path, "/api/") {
				var e errorBody
				if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.HasPrefix(e.Error, "sign-in required") {
					t.Errorf("GET %s (%s) body = %q; want a JSON sign-in error", path, name, body)
				}
			} else if !strings.Contains(body, `data-testid="sign-in-required"`) || strings.Contains(body, "Fix the failing test") {
				t.Errorf("GET %s (%s) body = %q; want the 401 page and no session", path, name, body)
			}
		}
		if strings.Contains(path, "/events") {
			continue // a stream: its open is tested below
		}
		if res, body := s.do(http.MethodGet, path, nil, "X-Forwarded-User", "bob"); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s as bob = %d %s; want 200", path, res.StatusCode, body)
		}
		// A terminal client may name its user with its token on /api,
		// not on pages.
		want := http.StatusUnauthorized
		if strings.HasPrefix(path, "/api/") {
			want = http.StatusOK
		}
		if res, _ := s.do(http.MethodGet, path, nil, "Authorization", "Bearer "+tok); res.StatusCode != want {
			t.Errorf("GET %s with a token = %d; want %d", path, res.StatusCode, want)
		}
	}
	// A path dressed as a static file or a push reaches no session.
	for _, path := range []string{"/static/%2e%2e/api/sessions", "/static/../api/sessions", "/%61pi/sessions", "/api/ingest/../sessions", "/api/%69ngest"} {
		if res, body := s.do(http.MethodGet, path, nil); res.StatusCode == http.StatusOK || strings.Contains(body, "s1") {
			t.Errorf("GET %s without a user = %d %q; want no session", path, res.StatusCode, body)
		}
	}
	if res, _ := s.do(http.MethodGet, "/static/app.css", nil); res.StatusCode != http.StatusOK {
		t.Errorf("GET /static/app.css without a user = %d; want 200", res.StatusCode)
	}
	if res, _ := s.do(http.MethodHead, "/api/events", nil, "X-Forwarded-User", "bob"); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD /api/events as bob = %d; want 200", res.StatusCode)
	}
}

// TestTeamEmptyList: a team server without sessions says how they come
// (shared by each member), not the local service's import and capture.
func TestTeamEmptyList(t *testing.T) {
	s := newTeamServer(t, Team{})
	res, body := s.do(http.MethodGet, "/", nil, "X-Forwarded-User", "bob")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d %v", res.StatusCode, err)
	}
	got := strings.TrimSpace(doc.Find(`[data-testid="empty"]`).Text())
	if !strings.HasPrefix(got, "No sessions yet.") || !strings.Contains(got, "service share") || strings.Contains(got, "service import") {
		t.Errorf("an empty team server says %q; want how members share sessions", got)
	}
}

// TestTeamSignIn: with a sign-in of its own (OIDC's), a page without a
// user goes there, /api stays 401, and the sign-in's /auth/ routes need no
// user.
func TestTeamSignIn(t *testing.T) {
	s := newTeamServer(t, Team{SignIn: redirectSignIn{}})
	s.srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, _ := s.do(http.MethodGet, "/session?id=s1", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/auth/login?next=%2Fsession%3Fid%3Ds1" {
		t.Errorf("GET /session without a user = %d to %q; want 303 to the sign-in", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := s.do(http.MethodGet, "/api/sessions", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/sessions without a user = %d; want 401", res.StatusCode)
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if res, body := s.do(m, "/auth/callback", nil); res.StatusCode != http.StatusOK || body != m+" /auth/callback" {
			t.Errorf("%s /auth/callback without a user = %d %q; want the sign-in's route", m, res.StatusCode, body)
		}
	}
	if res, _ := s.do(http.MethodGet, "/auth/other", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /auth/other = %d; want 404 (only the sign-in's routes)", res.StatusCode)
	}
}

// redirectSignIn is a sign-in flow with OIDC's shape whose callback
// answers with its method and path.
type redirectSignIn struct{}

func (redirectSignIn) Handler() http.Handler {
	r := httprouter.New()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Method+" "+r.URL.Path) })
	r.Handler(http.MethodGet, "/auth/callback", h)
	r.Handler(http.MethodPost, "/auth/callback", h)
	return r
}

func (redirectSignIn) RedirectToLogin(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/auth/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// TestTeamHostAndCrossSite: Host must name the team's origin (421
// otherwise, loopback names included), every answer carries the CSP and
// the other headers, and a cross-site delete is 403 as locally.
func TestTeamHostAndCrossSite(t *testing.T) {
	s := newTeamServer(t, Team{})
	tok := s.mustToken("alice")
	for host, want := range map[string]int{
		"review.example.com": http.StatusOK, "REVIEW.example.com:443": http.StatusOK,
		"review.example.com:80": http.StatusMisdirectedRequest, "127.0.0.1": http.StatusMisdirectedRequest,
		"localhost:443": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest,
		"review.example.com.evil.example": http.StatusMisdirectedRequest,
	} {
		res, body := s.do(http.MethodGet, "/", nil, "Host", host, "X-Forwarded-User", "alice")
		if res.StatusCode != want {
			t.Errorf("GET / with Host %s = %d; want %d", host, res.StatusCode, want)
		}
		if want == http.StatusMisdirectedRequest && !strings.HasPrefix(body, "misdirected request: ") {
			t.Errorf("GET / with Host %s body = %q; want plain misdirected request", host, body)
		}
		if res.Header.Get("Content-Security-Policy") != contentSecurityPolicy || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET / with Host %s headers = %v; want the security headers", host, res.Header)
		}
	}
	// A push to another Host is refused before its token is looked at.
	res, _ := s.do(http.MethodPost, "/api/ingest", mustJSON(t, newBatch("s1")), "Host", "evil.example", "Authorization", "Bearer "+tok)
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("push with Host evil.example = %d; want 421", res.StatusCode)
	}
	s.push(tok, newBatch("s1"), http.StatusCreated)
	res, _ = s.do(http.MethodDelete, "/api/sessions/s1", nil, "X-Forwarded-User", "alice", "Sec-Fetch-Site", "cross-site")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site DELETE = %d; want 403", res.StatusCode)
	}
	res, _ = s.do(http.MethodDelete, "/api/sessions/s1", nil, "X-Forwarded-User", "alice", "Origin", "https://evil.example")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("DELETE from Origin evil.example = %d; want 403", res.StatusCode)
	}
	if _, err := s.store.Detail(context.Background(), "s1", store.DetailQuery{}); err != nil {
		t.Fatalf("session after refused deletes: %v; want it kept", err)
	}
	res, _ = s.do(http.MethodDelete, "/api/sessions/s1", nil, "X-Forwarded-User", "alice", "Origin", teamOrigin)
	if res.StatusCode != http.StatusOK {
		t.Errorf("DELETE from the app = %d; want 200", res.StatusCode)
	}
	// A terminal client deletes with its token (service share asks to).
	s.push(tok, newBatch("s2"), http.StatusCreated)
	if res, body := s.do(http.MethodDelete, "/api/sessions/s2", nil, "Authorization", "Bearer "+tok); res.StatusCode != http.StatusOK {
		t.Errorf("DELETE with a token = %d %s; want 200", res.StatusCode, body)
	}
}

// TestLocalIgnoresUserHeader: the local service honours no user header:
// a push is the local owner's whatever header it sends, reads need no
// user, and the list page offers no owner filter.
func TestLocalIgnoresUserHeader(t *testing.T) {
	s := newTestService(t)
	if rec := s.push(mustJSON(t, newBatch("s1")), "X-Forwarded-User", "mallory"); rec.Code != http.StatusCreated {
		t.Fatalf("push = %d %s", rec.Code, rec.Body)
	}
	if d, _ := s.store.Detail(context.Background(), "s1", store.DetailQuery{}); d.OwnerID != store.OwnerLocal {
		t.Errorf("owner = %q; want %q", d.OwnerID, store.OwnerLocal)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/ingest", bytes.NewReader(mustJSON(t, newBatch("s2"))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-User", "alice")
	if rec := s.do(req); rec.Code != http.StatusUnauthorized {
		t.Errorf("push with a user header and no token = %d; want 401", rec.Code)
	}
	if rec := s.get("/api/sessions?owner=local"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":"s1"`) {
		t.Errorf("GET /api/sessions?owner=local = %d %s", rec.Code, rec.Body)
	}
	rec := s.get("/")
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `data-testid="filter-owner"`) {
		t.Errorf("GET / = %d, owner filter shown = %v; want 200 without it", rec.Code, strings.Contains(rec.Body.String(), "filter-owner"))
	}
	req = httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "review.example.com"
	req.Header.Set("X-Forwarded-User", "alice")
	if rec := s.do(req); rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("GET / with Host review.example.com = %d; want 421", rec.Code)
	}
}

// TestNotifiedHubDoesNotPoll: a notified hub checks the store only when
// poked, so a write by another process reaches a stream with the
// notification, not by polling.
func TestNotifiedHubDoesNotPoll(t *testing.T) {
	st := mustOpenStore(t, filepath.Join(t.TempDir(), "store.db"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewNotifiedHub(st, log)
	srv := httptest.NewServer(Routes(Deps{Store: st, Hub: hub, Log: log, Auth: Auth{Token: testToken}}))
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close)
	c := openStream(t, srv, "")
	c.mustReady()
	other := mustOpenStore(t, st.Path()) // another process's handle: nothing pokes the hub
	b, err := store.ParseBatch(mustJSON(t, newBatch("elsewhere")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := c.changes(3 * PollInterval); len(got) != 0 {
		t.Fatalf("changes without a notification = %+v; want none (no polling)", got)
	}
	hub.Poke()
	if got := c.changes(2 * time.Second); len(got) != 1 || got[0].SessionID != "elsewhere" {
		t.Errorf("changes after the notification = %+v; want one for elsewhere", got)
	}
}
