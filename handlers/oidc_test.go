package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/coreos/go-oidc/v3/oidc/oidctest"
	"github.com/julienschmidt/httprouter"
)

// testProvider is an OpenID Connect provider on a loopback port: discovery,
// a JWKS with a fresh RSA key, /authorize that approves at once and
// /token that checks the client, the redirect URI and the PKCE verifier and
// returns an ID token carrying the nonce it was given.
type testProvider struct {
	t            *testing.T
	srv          *httptest.Server
	key          *rsa.PrivateKey
	clientID     string
	clientSecret string
	// claims are the user's claims in every ID token.
	claims map[string]any

	mu     sync.Mutex
	grants map[string]grant
	// edit changes an ID token's claims before signing; signer, when set,
	// signs instead of key (under key's ID).
	edit   func(claims map[string]any)
	signer *rsa.PrivateKey
}

// grant is what /authorize was asked for a code.
type grant struct {
	redirectURI, challenge, nonce string
}

const testKeyID = "test-key"

func newTestProvider(t *testing.T) *testProvider {
	t.Helper()
	p := &testProvider{
		t:            t,
		key:          mustRSAKey(t),
		clientID:     "review-app",
		clientSecret: randomToken(),
		claims: map[string]any{
			"sub": "248289761001", "email": "ada@example.com", "email_verified": true,
			"preferred_username": "ada",
		},
		grants: map[string]grant{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func mustRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa.GenerateKey = %v", err)
	}
	return k
}

func (p *testProvider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.srv.URL,
		"authorization_endpoint":                p.srv.URL + "/authorize",
		"token_endpoint":                        p.srv.URL + "/token",
		"jwks_uri":                              p.srv.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *testProvider) keys(w http.ResponseWriter, _ *http.Request) {
	b64 := base64.RawURLEncoding.EncodeToString
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": testKeyID,
		"n": b64(p.key.N.Bytes()), "e": b64(big.NewInt(int64(p.key.E)).Bytes()),
	}}})
}

// authorize approves at once: it refuses a request without the client's
// ID, a code challenge (S256), a nonce or a state, as a strict provider
// would, and otherwise sends the browser back with a fresh code.
func (p *testProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name, want := range map[string]string{"response_type": "code", "client_id": p.clientID, "code_challenge_method": "S256"} {
		if q.Get(name) != want {
			http.Error(w, name+" is not "+want, http.StatusBadRequest)
			return
		}
	}
	for _, name := range []string{"redirect_uri", "code_challenge", "nonce", "state"} {
		if q.Get(name) == "" {
			http.Error(w, name+" missing", http.StatusBadRequest)
			return
		}
	}
	if !strings.Contains(" "+q.Get("scope")+" ", " openid ") {
		http.Error(w, "scope lacks openid", http.StatusBadRequest)
		return
	}
	code := randomToken()
	p.mu.Lock()
	p.grants[code] = grant{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), nonce: q.Get("nonce")}
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token redeems a code once, for the client that holds the secret, with
// the verifier whose S256 is the code's challenge.
func (p *testProvider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != p.clientID || secret != p.clientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	g, ok := p.grants[r.PostFormValue("code")]
	delete(p.grants, r.PostFormValue("code"))
	edit, signer := p.edit, p.signer
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	if !ok || r.PostFormValue("grant_type") != "authorization_code" || r.PostFormValue("redirect_uri") != g.redirectURI ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	now := time.Now()
	claims := map[string]any{"iss": p.srv.URL, "aud": p.clientID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "nonce": g.nonce}
	for k, v := range p.claims {
		claims[k] = v
	}
	if edit != nil {
		edit(claims)
	}
	if signer == nil {
		signer = p.key
	}
	b, _ := json.Marshal(claims)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": randomToken(), "token_type": "Bearer", "expires_in": 3600,
		"id_token": oidctest.SignIDToken(signer, testKeyID, oidc.RS256, string(b)),
	})
}

// setEdit makes the provider's next ID tokens go through edit.
func (p *testProvider) setEdit(edit func(map[string]any), signer *rsa.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.edit, p.signer = edit, signer
}

// oidcApp is a real server running the sign-in routes and a page, /whoami,
// that answers with the signed-in user or sends the browser to sign in.
type oidcApp struct {
	o   *OIDC
	srv *httptest.Server
	key []byte
	log *syncBuffer // why sign-ins were refused
}

// syncBuffer is a log the server writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newOIDCApp(t *testing.T, p *testProvider, claim string) *oidcApp {
	t.Helper()
	a := &oidcApp{key: []byte(randomToken()), log: &syncBuffer{}}
	var h http.Handler
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(a.srv.Close)
	o, err := NewOIDC(context.Background(), OIDCConfig{
		Issuer: p.srv.URL, ClientID: p.clientID, ClientSecret: p.clientSecret,
		RedirectURL: a.srv.URL + "/auth/callback", UserClaim: claim, CookieKey: a.key,
	}, slog.New(slog.NewTextHandler(a.log, nil)))
	if err != nil {
		t.Fatalf("NewOIDC = %v", err)
	}
	a.o = o
	// Mounted as the team routes mount it.
	r := httprouter.New()
	r.Handler(http.MethodGet, "/auth/*path", a.o.Handler())
	r.Handler(http.MethodPost, "/auth/*path", a.o.Handler())
	r.HandlerFunc(http.MethodGet, "/whoami", func(w http.ResponseWriter, r *http.Request) {
		if user, ok := a.o.User(r); ok {
			writeText(w, http.StatusOK, user)
			return
		}
		a.o.RedirectToLogin(w, r)
	})
	h = r
	return a
}

func mustNewOIDC(t *testing.T, c OIDCConfig) *OIDC {
	t.Helper()
	o, err := NewOIDC(context.Background(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("NewOIDC = %v", err)
	}
	return o
}

// jarClient is an http.Client with a cookie jar that follows redirects up
// to, not into, the app's callback, so a test can look at (and alter) the
// callback URL the provider sent it to.
func jarClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/auth/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// mustGet sends GET url with c, following redirects as c does.
func mustGet(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s = %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read body = %v", u, err)
	}
	return res, string(b)
}

// startSignIn goes to path on the app without a session, is sent through
// /auth/login to the provider and back towards the app, and returns the
// callback URL it stopped at.
func (a *oidcApp) startSignIn(t *testing.T, c *http.Client, path string) *url.URL {
	t.Helper()
	res, body := mustGet(t, c, a.srv.URL+path)
	if res.StatusCode != http.StatusFound {
		t.Fatalf("GET %s = %d %q; want the provider's 302 to the callback", path, res.StatusCode, body)
	}
	u, err := res.Location()
	if err != nil || u.Path != "/auth/callback" {
		t.Fatalf("GET %s ended at %v (%v); want the callback", path, u, err)
	}
	return u
}

// callback sends the browser to the callback URL u without following the
// app's answer.
func (a *oidcApp) callback(t *testing.T, c *http.Client, u *url.URL) (*http.Response, string) {
	t.Helper()
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return mustGet(t, &noFollow, u.String())
}

// signIn runs the whole flow from path and returns the app's answer to
// the callback.
func (a *oidcApp) signIn(t *testing.T, c *http.Client, path string) (*http.Response, string) {
	t.Helper()
	return a.callback(t, c, a.startSignIn(t, c, path))
}

// whoami returns the user the app knows c as, or "" when it sends c to
// sign in.
func (a *oidcApp) whoami(t *testing.T, c *http.Client) string {
	t.Helper()
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, body := mustGet(t, &noFollow, a.srv.URL+"/whoami")
	switch res.StatusCode {
	case http.StatusOK:
		return strings.TrimSuffix(body, "\n")
	case http.StatusSeeOther:
		want := "/auth/login?" + url.Values{"next": {"/whoami"}}.Encode()
		if loc := res.Header.Get("Location"); loc != want {
			t.Fatalf("GET /whoami redirects to %q; want %q", loc, want)
		}
		return ""
	}
	t.Fatalf("GET /whoami = %d %q", res.StatusCode, body)
	return ""
}

// responseCookie returns the cookie name that res sets.
func responseCookie(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestOIDCSignIn(t *testing.T) {
	for _, claim := range userClaims {
		t.Run(claim, func(t *testing.T) {
			p := newTestProvider(t)
			a := newOIDCApp(t, p, claim)
			c := jarClient(t)
			if got := a.whoami(t, c); got != "" {
				t.Fatalf("before signing in, the app knows the browser as %q", got)
			}
			cb := a.startSignIn(t, c, "/whoami")
			res, body := a.callback(t, c, cb)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/whoami" {
				t.Fatalf("callback = %d %q, Location %q; want 303 back to /whoami", res.StatusCode, body, res.Header.Get("Location"))
			}
			s := responseCookie(res, sessionCookie)
			if s == nil || !s.HttpOnly || s.Secure || s.SameSite != http.SameSiteLaxMode || s.Path != "/" || s.MaxAge != int(SessionTTL/time.Second) {
				t.Fatalf("session cookie = %+v; want HttpOnly, SameSite=Lax, not Secure on http, Path /, Max-Age %v", s, SessionTTL)
			}
			if l := responseCookie(res, loginCookie); l == nil || l.MaxAge != -1 {
				t.Errorf("callback leaves the login cookie: %+v", l)
			}
			if got, want := a.whoami(t, c), p.claims[claim].(string); got != want {
				t.Errorf("after signing in, user = %q; want the %s claim %q", got, claim, want)
			}
			// The callback works once: the login cookie and the code are spent.
			other := jarClient(t)
			if res, body := a.callback(t, other, cb); res.StatusCode != http.StatusBadRequest {
				t.Errorf("the callback URL in another browser = %d %q; want 400", res.StatusCode, body)
			}
			if res, body := a.callback(t, c, cb); res.StatusCode != http.StatusBadRequest {
				t.Errorf("the callback URL again = %d %q; want 400", res.StatusCode, body)
			}
		})
	}
}

func TestOIDCLoginCookie(t *testing.T) {
	p := newTestProvider(t)
	for _, tc := range []struct {
		redirect string
		secure   bool
		prefix   string
	}{{"http://127.0.0.1:9/auth/callback", false, ""}, {"https://review.example.com/auth/callback", true, "__Host-"}} {
		key := []byte(randomToken())
		o := mustNewOIDC(t, OIDCConfig{Issuer: p.srv.URL, ClientID: p.clientID, ClientSecret: p.clientSecret, RedirectURL: tc.redirect, CookieKey: key})
		rec := httptest.NewRecorder()
		o.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login?next=/usage", nil))
		res := rec.Result()
		loc, err := res.Location()
		if res.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), p.srv.URL+"/authorize?") {
			t.Fatalf("%s: GET /auth/login = %d to %v; want 302 to the provider", tc.redirect, res.StatusCode, loc)
		}
		if got := loc.Query().Get("redirect_uri"); got != tc.redirect {
			t.Errorf("redirect_uri = %q; want %q", got, tc.redirect)
		}
		c := responseCookie(res, tc.prefix+loginCookie)
		if c == nil || !c.HttpOnly || c.Secure != tc.secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != int(loginTTL/time.Second) {
			t.Errorf("%s: login cookie %s = %+v; want HttpOnly, Secure %v, SameSite=Lax, Path /, Max-Age %v", tc.redirect, tc.prefix+loginCookie, c, tc.secure, loginTTL)
		}
		// The session is read from the cookie of that name only.
		value := testSessionCookie(key, sessionCookie, "ada@example.com", time.Now().Add(time.Hour))
		for _, name := range []string{sessionCookie, "__Host-" + sessionCookie} {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.AddCookie(&http.Cookie{Name: name, Value: value})
			if _, ok := o.User(req); ok != (name == tc.prefix+sessionCookie) {
				t.Errorf("%s: User(cookie %s) = %v; want %v", tc.redirect, name, ok, !ok)
			}
		}
	}
}

func TestOIDCCallbackRefusals(t *testing.T) {
	expired := func(c map[string]any) {
		c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
		c["exp"] = time.Now().Add(-time.Hour).Unix()
	}
	for _, tc := range []struct {
		name   string
		edit   func(map[string]any)
		signer bool                // sign with a key the JWKS does not publish
		alter  func(u *url.URL)    // the callback URL
		cookie func(string) string // the login cookie's value
		want   int
		why    string // in the answer or the log
	}{
		{name: "wrong state", alter: func(u *url.URL) { setQuery(u, "state", randomToken()) }, want: http.StatusBadRequest, why: "state does not match"},
		{name: "no state", alter: func(u *url.URL) { setQuery(u, "state", "") }, want: http.StatusBadRequest, why: "state does not match"},
		{name: "tampered login cookie", cookie: flipLastChar, want: http.StatusBadRequest, why: "expired or was altered"},
		{name: "no login cookie", cookie: func(string) string { return "" }, want: http.StatusBadRequest, why: "no sign-in in progress"},
		{name: "provider error", alter: func(u *url.URL) { setQuery(u, "code", ""); setQuery(u, "error", "access_denied") }, want: http.StatusUnauthorized, why: "access_denied"},
		{name: "wrong code", alter: func(u *url.URL) { setQuery(u, "code", randomToken()) }, want: http.StatusUnauthorized, why: "invalid_grant"},
		{name: "wrong nonce", edit: func(c map[string]any) { c["nonce"] = randomToken() }, want: http.StatusUnauthorized, why: "nonce"},
		{name: "no nonce", edit: func(c map[string]any) { delete(c, "nonce") }, want: http.StatusUnauthorized, why: "nonce"},
		{name: "expired token", edit: expired, want: http.StatusUnauthorized, why: "token is expired"},
		{name: "bad signature", signer: true, want: http.StatusUnauthorized, why: "verify signature"},
		{name: "other audience", edit: func(c map[string]any) { c["aud"] = "another-app" }, want: http.StatusUnauthorized, why: "audience"},
		{name: "other issuer", edit: func(c map[string]any) { c["iss"] = "https://issuer.example" }, want: http.StatusUnauthorized, why: "different provider"},
		{name: "unverified email", edit: func(c map[string]any) { c["email_verified"] = false }, want: http.StatusUnauthorized, why: "not verified"},
		{name: "no email", edit: func(c map[string]any) { delete(c, "email") }, want: http.StatusUnauthorized, why: "no email claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProvider(t)
			a := newOIDCApp(t, p, "")
			var signer *rsa.PrivateKey
			if tc.signer {
				signer = mustRSAKey(t)
			}
			p.setEdit(tc.edit, signer)
			c := jarClient(t)
			cb := a.startSignIn(t, c, "/whoami")
			if tc.alter != nil {
				tc.alter(cb)
			}
			if tc.cookie != nil {
				base, _ := url.Parse(a.srv.URL + "/")
				var value string
				for _, k := range c.Jar.Cookies(base) {
					if k.Name == loginCookie {
						value = k.Value
					}
				}
				if value == "" {
					t.Fatal("no login cookie in the browser after /auth/login")
				}
				k := &http.Cookie{Name: loginCookie, Value: tc.cookie(value), Path: "/"}
				if k.Value == "" {
					k.MaxAge = -1 // the jar drops it
				}
				c.Jar.SetCookies(base, []*http.Cookie{k})
			}
			res, body := a.callback(t, c, cb)
			if res.StatusCode != tc.want {
				t.Fatalf("callback = %d %q; want %d", res.StatusCode, body, tc.want)
			}
			if !strings.Contains(body+a.log.String(), tc.why) {
				t.Errorf("callback = %q, log %q; want the reason %q", body, a.log.String(), tc.why)
			}
			if s := responseCookie(res, sessionCookie); s != nil {
				t.Errorf("a refused callback sets the session cookie %+v", s)
			}
			if got := a.whoami(t, c); got != "" {
				t.Errorf("after a refused callback, the app knows the browser as %q", got)
			}
		})
	}
}

func setQuery(u *url.URL, name, value string) {
	q := u.Query()
	if value == "" {
		q.Del(name)
	} else {
		q.Set(name, value)
	}
	u.RawQuery = q.Encode()
}

// flipLastChar changes a cookie's last character (in its MAC).
func flipLastChar(s string) string {
	last := s[len(s)-1]
	if last == 'A' {
		return s[:len(s)-1] + "B"
	}
	return s[:len(s)-1] + "A"
}

// testSessionCookie builds a session cookie the way the spec of the format
// says (base64url(JSON{exp, v}) "." base64url(HMAC-SHA256(key, name NUL
// payload))), independently of seal.
func testSessionCookie(key []byte, name, user string, exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"exp":` + big.NewInt(exp.Unix()).String() + `,"v":{"user":` + jsonString(user) + `}}`))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(name + "\x00" + payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestOIDCSessionCookieChecked(t *testing.T) {
	p := newTestProvider(t)
	a := newOIDCApp(t, p, "")
	c := jarClient(t)
	if res, body := a.signIn(t, c, "/whoami"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in = %d %q", res.StatusCode, body)
	}
	user := p.claims["email"].(string)
	real := responseCookieFromJar(t, c, a.srv.URL)
	payload, mac, _ := strings.Cut(real, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"exp":4102444800,"v":{"user":"mallory@example.com"}}`))
	later, earlier := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name, value, want string
	}{
		{"the cookie the callback set", real, user},
		{"made with the key", testSessionCookie(a.key, sessionCookie, "grace@example.com", later), "grace@example.com"},
		{"expired", testSessionCookie(a.key, sessionCookie, user, earlier), ""},
		{"other key", testSessionCookie([]byte(randomToken()), sessionCookie, user, later), ""},
		{"a login cookie's MAC", testSessionCookie(a.key, loginCookie, user, later), ""},
		{"payload replaced", forged + "." + mac, ""},
		{"MAC altered", flipLastChar(real), ""},
		{"MAC cut", payload + "." + mac[:len(mac)/2], ""},
		{"no MAC", payload, ""},
		{"empty", "", ""},
		{"huge", strings.Repeat("A", 5000) + "." + mac, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: tc.value})
			got, ok := a.o.User(r)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("User(cookie %s) = %q, %v; want %q", tc.name, got, ok, tc.want)
			}
			// Through the real server too: a browser holding only this cookie.
			b := jarClient(t)
			u, _ := url.Parse(a.srv.URL)
			b.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: tc.value, Path: "/"}})
			if got := a.whoami(t, b); got != tc.want {
				t.Errorf("GET /whoami with cookie %s = %q; want %q", tc.name, got, tc.want)
			}
		})
	}
}

// responseCookieFromJar returns the session cookie c holds for base.
func responseCookieFromJar(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	u, _ := url.Parse(base + "/")
	for _, k := range c.Jar.Cookies(u) {
		if k.Name == sessionCookie {
			return k.Value
		}
	}
	t.Fatal("no session cookie in the browser")
	return ""
}

func TestOIDCNextStaysOnSite(t *testing.T) {
	p := newTestProvider(t)
	a := newOIDCApp(t, p, "")
	for _, next := range []string{
		"https://evil.example/", "//evil.example/", "///evil.example/", "/\\evil.example/", "\\\\evil.example/",
		"http:/evil.example", "javascript:alert(1)", "evil.example", " /x", "/x\r\nLocation: https://evil.example",
		"/\t/evil.example", "/\n/evil.example", "/\x7f", "/%zz",
	} {
		c := jarClient(t)
		noFollow := *c
		noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, body := mustGet(t, &noFollow, a.srv.URL+"/auth/login?"+url.Values{"next": {next}}.Encode())
		if res.StatusCode != http.StatusBadRequest || responseCookie(res, loginCookie) != nil {
			t.Errorf("GET /auth/login?next=%q = %d %q, Location %q; want 400 and no sign-in started", next, res.StatusCode, body, res.Header.Get("Location"))
		}
	}
	// A path with a query comes back exactly.
	for _, next := range []string{"/session?id=s-1&turn=2", "/search?q=%2F%2Fevil", "/"} {
		c := jarClient(t)
		res, body := a.signIn(t, c, "/auth/login?"+url.Values{"next": {next}}.Encode())
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != next {
			t.Errorf("sign in with next=%q = %d %q to %q; want 303 to it", next, res.StatusCode, body, res.Header.Get("Location"))
		}
	}
	// A page whose own path is not a plain path sends the user to / after.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.URL = &url.URL{Path: "//evil.example/x"}
	rec := httptest.NewRecorder()
	a.o.RedirectToLogin(rec, r)
	if got, want := rec.Header().Get("Location"), "/auth/login?next=%2F"; got != want {
		t.Errorf("RedirectToLogin(//evil.example/x) to %q; want %q", got, want)
	}
}

// A fragment request after the session expired (htmx) gets 401 with
// HX-Redirect to sign in and back to the page it came from, never to
// another site; a page request still gets the 303.
func TestOIDCFragmentRedirect(t *testing.T) {
	p := newTestProvider(t)
	a := newOIDCApp(t, p, "")
	for current, want := range map[string]string{
		a.srv.URL + "/session?id=s-1&turns=all": "/session?id=s-1&turns=all",
		"https://evil.example//evil.example/x":  "/",
		"":                                      "/",
	} {
		r := httptest.NewRequest(http.MethodGet, "/session/updates?id=s-1&since=5", nil)
		r.Header.Set("HX-Request", "true")
		r.Header.Set("HX-Current-URL", current)
		rec := httptest.NewRecorder()
		a.o.RedirectToLogin(rec, r)
		wantTo := "/auth/login?" + url.Values{"next": {want}}.Encode()
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("HX-Redirect") != wantTo || rec.Header().Get("Location") != "" {
			t.Errorf("fragment from %q = %d, HX-Redirect %q, Location %q; want 401 and HX-Redirect %q",
				current, rec.Code, rec.Header().Get("HX-Redirect"), rec.Header().Get("Location"), wantTo)
		}
	}
}

func TestOIDCLogout(t *testing.T) {
	p := newTestProvider(t)
	a := newOIDCApp(t, p, "")
	c := jarClient(t)
	a.signIn(t, c, "/whoami")
	user := p.claims["email"].(string)
	logout := func(site string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/auth/logout", nil)
		req.Header.Set("Sec-Fetch-Site", site)
		noFollow := *c
		noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatalf("POST /auth/logout = %v", err)
		}
		res.Body.Close()
		return res
	}
	for path, want := range map[string]int{"/auth/logout": http.StatusMethodNotAllowed, "/auth/elsewhere": http.StatusNotFound} {
		if res, body := mustGet(t, c, a.srv.URL+path); res.StatusCode != want {
			t.Errorf("GET %s = %d %q; want %d", path, res.StatusCode, body, want)
		}
	}
	if res := logout("cross-site"); res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST /auth/logout = %d; want 403", res.StatusCode)
	}
	if got := a.whoami(t, c); got != user {
		t.Fatalf("after a refused logout, user = %q; want %q", got, user)
	}
	if res := logout("same-origin"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Errorf("POST /auth/logout = %d to %q; want 303 to /", res.StatusCode, res.Header.Get("Location"))
	}
	if got := a.whoami(t, c); got != "" {
		t.Errorf("after logout, user = %q; want none", got)
	}
}

func TestNewOIDCRefusesBadConfig(t *testing.T) {
	p := newTestProvider(t)
	elsewhere := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(elsewhere.Close)
	good := OIDCConfig{Issuer: p.srv.URL, ClientID: p.clientID, ClientSecret: p.clientSecret, RedirectURL: "https://review.example.com/auth/callback", CookieKey: []byte(randomToken())}
	for _, tc := range []struct {
		name string
		edit func(*OIDCConfig)
		want string
	}{
		{"short key", func(c *OIDCConfig) { c.CookieKey = c.CookieKey[:31] }, "at least 32"},
		{"unknown claim", func(c *OIDCConfig) { c.UserClaim = "name" }, `"name"`},
		{"no secret", func(c *OIDCConfig) { c.ClientSecret = "" }, "client secret"},
		{"relative redirect", func(c *OIDCConfig) { c.RedirectURL = "/auth/callback" }, "redirect URL"},
		{"no discovery", func(c *OIDCConfig) { c.Issuer = elsewhere.URL }, elsewhere.URL},
		{"issuer mismatch", func(c *OIDCConfig) { c.Issuer = p.srv.URL + "/" }, "issuer"},
	} {
		c := good
		tc.edit(&c)
		_, err := NewOIDC(context.Background(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewOIDC(%s) = %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
}
