package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/julienschmidt/httprouter"
	"golang.org/x/oauth2"
)

// OIDCConfig is what OIDC sign-in is built from.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its discovery document is read
	// from Issuer/.well-known/openid-configuration.
	Issuer string
	// ClientID and ClientSecret are the service's registration at the
	// provider (a confidential client).
	ClientID     string
	ClientSecret string
	// RedirectURL is the team server's public URL of /auth/callback, as
	// registered at the provider. Cookies are Secure when it is https.
	RedirectURL string
	// UserClaim is the ID token claim that names the user: "email" (the
	// default), "preferred_username" or "sub".
	UserClaim string
	// CookieKey signs the cookies: at least 32 bytes, the same in every
	// server process. Changing it signs everyone out.
	CookieKey []byte
}

// OIDC signs users of the team server in with an OpenID Connect provider
// (authorization code flow with PKCE, state and nonce) and knows them
// afterwards by a session cookie; its User method is the team server's
// identity source. It keeps no state of its own: a sign-in in progress and
// the session afterwards live in cookies signed with HMAC-SHA256, so any
// number of server processes sharing the key accept each other's cookies.
// A session cannot be revoked before it expires except by changing the key.
type OIDC struct {
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	claim    string
	key      []byte
	secure   bool
	client   *http.Client
	log      *slog.Logger
}

// Cookie names (see OIDC.cookieName), lifetimes and limits of OIDC sign-in.
const (
	sessionCookie = "service_session"
	loginCookie   = "service_login"
	// SessionTTL is how long a sign-in lasts before the user signs in
	// again (a working day).
	SessionTTL = 12 * time.Hour
	// loginTTL is how long the provider may take between /auth/login and
	// /auth/callback.
	loginTTL = 10 * time.Minute
	// minCookieKey is the shortest CookieKey accepted: the size of the
	// HMAC-SHA256 output.
	minCookieKey = 32
	// providerTimeout bounds each request to the provider.
	providerTimeout = 15 * time.Second
)

// userClaims are the ID token claims a user may be named by.
var userClaims = []string{"email", "preferred_username", "sub"}

// NewOIDC reads the provider's discovery document at c.Issuer and returns
// the sign-in it configures. log receives why a sign-in was refused.
func NewOIDC(ctx context.Context, c OIDCConfig, log *slog.Logger) (*OIDC, error) {
	if c.Issuer == "" || c.ClientID == "" || c.ClientSecret == "" || c.RedirectURL == "" {
		return nil, errors.New("oidc: the issuer, client ID, client secret and redirect URL are all needed")
	}
	if c.UserClaim == "" {
		c.UserClaim = "email"
	}
	if !slices.Contains(userClaims, c.UserClaim) {
		return nil, fmt.Errorf("oidc: user claim %q is not one of %s", c.UserClaim, strings.Join(userClaims, ", "))
	}
	if len(c.CookieKey) < minCookieKey {
		return nil, fmt.Errorf("oidc: the cookie key has %d bytes; it needs at least %d", len(c.CookieKey), minCookieKey)
	}
	redirect, err := url.Parse(c.RedirectURL)
	if err != nil || (redirect.Scheme != "https" && redirect.Scheme != "http") || redirect.Host == "" {
		return nil, fmt.Errorf("oidc: redirect URL %q is not an absolute http(s) URL", c.RedirectURL)
	}
	client := &http.Client{Timeout: providerTimeout}
	ctx, cancel := context.WithTimeout(ctx, providerTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, client), c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc: discover %s: %w", c.Issuer, err)
	}
	return &OIDC{
		oauth: oauth2.Config{
			ClientID:     c.ClientID,
			ClientSecret: c.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  c.RedirectURL,
			Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: c.ClientID}),
		claim:    c.UserClaim,
		key:      append([]byte(nil), c.CookieKey...),
		secure:   redirect.Scheme == "https",
		client:   client,
		log:      log,
	}, nil
}

// Handler serves the sign-in routes, for the team routes to mount at
// /auth/ (Team.SignIn); they need no user:
//
//	GET  /auth/login     start signing in (?next=/path to return to)
//	GET  /auth/callback  where the provider sends the user back
//	POST /auth/logout    sign out (from the review app only)
func (o *OIDC) Handler() http.Handler {
	r := httprouter.New()
	r.HandleOPTIONS = false
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusNotFound, "not found") })
	r.Handler(http.MethodGet, "/auth/login", http.HandlerFunc(o.login))
	r.Handler(http.MethodGet, "/auth/callback", http.HandlerFunc(o.callback))
	r.Handler(http.MethodPost, "/auth/logout", appOnly(http.HandlerFunc(o.logout)))
	return r
}

// User returns the signed-in user named by r's session cookie, when the
// cookie carries this server's signature and has not expired.
func (o *OIDC) User(r *http.Request) (string, bool) {
	c, err := r.Cookie(o.cookieName(sessionCookie))
	if err != nil {
		return "", false
	}
	s, err := unseal[session](o.key, sessionCookie, c.Value, time.Now())
	if err != nil {
		return "", false
	}
	return s.User, true
}

// RedirectToLogin sends a page request without a user to /auth/login,
// which brings the user back to the page after signing in. A request path
// that is not a plain path on this site comes back to / instead. A
// fragment the page asked for (htmx: a live update after the session
// expired) cannot follow a redirect to the provider, so it gets 401 and
// HX-Redirect, which takes the whole page to sign in and back to it.
func (o *OIDC) RedirectToLogin(w http.ResponseWriter, r *http.Request) {
	next := r.URL.RequestURI()
	fragment := r.Header.Get("HX-Request") == "true"
	if fragment {
		next = "/"
		if u, err := url.Parse(r.Header.Get("HX-Current-URL")); err == nil {
			next = u.RequestURI() // the page's path on this site, never another host
		}
	}
	if checkNext(next) != nil {
		next = "/"
	}
	login := "/auth/login?" + url.Values{"next": {next}}.Encode()
	if fragment {
		w.Header().Set("HX-Redirect", login)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, login, http.StatusSeeOther)
}

// session is what the session cookie holds besides its expiry.
type session struct {
	User string `json:"user"`
}

// pendingLogin is what the login cookie holds while the user is at the
// provider.
type pendingLogin struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	Next     string `json:"next"`
}

// login starts the authorization code flow: fresh state, nonce and PKCE
// verifier in the login cookie, then off to the provider.
func (o *OIDC) login(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if next == "" {
		next = "/"
	}
	if err := checkNext(next); err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	p := pendingLogin{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(), Next: next}
	o.setCookie(w, loginCookie, seal(o.key, loginCookie, time.Now().Add(loginTTL), p), loginTTL)
	http.Redirect(w, r, o.oauth.AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier)), http.StatusFound)
}

// callback finishes the flow: the state must be the one this browser was
// given, the code is exchanged with the PKCE verifier, and the ID token must
// verify (issuer, audience, expiry, signature) and carry the nonce. Then the
// session cookie is set and the user goes where they were going.
func (o *OIDC) callback(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(o.cookieName(loginCookie))
	if err != nil {
		writeText(w, http.StatusBadRequest, "no sign-in in progress in this browser: start again at /auth/login")
		return
	}
	// The login cookie serves one callback, whatever its outcome.
	o.setCookie(w, loginCookie, "", -1)
	p, err := unseal[pendingLogin](o.key, loginCookie, c.Value, time.Now())
	if err != nil {
		writeText(w, http.StatusBadRequest, "the sign-in expired or was altered: start again at /auth/login")
		return
	}
	q := r.URL.Query()
	if !hmac.Equal([]byte(q.Get("state")), []byte(p.State)) {
		writeText(w, http.StatusBadRequest, "the sign-in state does not match this browser's: start again at /auth/login")
		return
	}
	if e := q.Get("error"); e != "" {
		o.log.Warn("oidc: the provider refused the sign-in", "error", e, "description", q.Get("error_description"))
		writeText(w, http.StatusUnauthorized, "the identity provider refused the sign-in: "+e)
		return
	}
	user, err := o.identify(r.Context(), q.Get("code"), p)
	if err != nil {
		o.log.Warn("oidc: sign-in refused", "err", err)
		writeText(w, http.StatusUnauthorized, "sign-in refused: the identity provider's answer did not verify")
		return
	}
	o.setCookie(w, sessionCookie, seal(o.key, sessionCookie, time.Now().Add(SessionTTL), session{User: user}), SessionTTL)
	http.Redirect(w, r, p.Next, http.StatusSeeOther)
}

// identify exchanges code for tokens and returns the user the verified ID
// token names.
func (o *OIDC) identify(ctx context.Context, code string, p pendingLogin) (string, error) {
	if code == "" {
		return "", errors.New("no code in the callback")
	}
	ctx, cancel := context.WithTimeout(ctx, providerTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.client)
	tok, err := o.oauth.Exchange(ctx, code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		return "", fmt.Errorf("exchange the code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return "", errors.New("the token response has no id_token")
	}
	id, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verify the ID token: %w", err)
	}
	if !hmac.Equal([]byte(id.Nonce), []byte(p.Nonce)) {
		return "", errors.New("the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := id.Claims(&claims); err != nil {
		return "", fmt.Errorf("read the ID token's claims: %w", err)
	}
	user, _ := claims[o.claim].(string)
	if user == "" {
		return "", fmt.Errorf("the ID token has no %s claim", o.claim)
	}
	if v := claims["email_verified"]; o.claim == "email" && (v == false || v == "false") {
		return "", fmt.Errorf("the provider has not verified the email %q", user)
	}
	return user, nil
}

// logout ends the session in this browser and goes back to the start. The
// provider's own session is left as it is.
func (o *OIDC) logout(w http.ResponseWriter, r *http.Request) {
	o.setCookie(w, sessionCookie, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// cookieName is the name a sign-in cookie goes by: on https with the
// __Host- prefix, so no other host of the domain can set it in the browser
// (to slip its own sign-in into someone else's).
func (o *OIDC) cookieName(name string) string {
	if o.secure {
		return "__Host-" + name
	}
	return name
}

// setCookie sets (or, with a negative maxAge, clears) one of the sign-in
// cookies: HttpOnly, SameSite=Lax, Path /, Secure when the site is https.
func (o *OIDC) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name: o.cookieName(name), Value: value, Path: "/",
		HttpOnly: true, Secure: o.secure, SameSite: http.SameSiteLaxMode,
	}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge / time.Second)
		c.Expires = time.Now().Add(maxAge)
	}
	http.SetCookie(w, c)
}

// checkNext accepts only a path on this site to return to after signing
// in: "/x", never "//host", "/\host", "https://host" or anything with a
// control character (which browsers drop, so "/\t/host" is "//host").
func checkNext(next string) error {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return errBadNext
	}
	if _, err := url.Parse(next); err != nil { // control characters, bad escapes
		return errBadNext
	}
	return nil
}

var errBadNext = errors.New("next must be a path on this site, such as /session?id=<id>")

// sealed is a signed cookie's payload: a value and when it stops being
// accepted.
type sealed[T any] struct {
	Exp int64 `json:"exp"` // unix seconds
	V   T     `json:"v"`
}

// seal returns v with its expiry as base64url(JSON) "." base64url(MAC),
// the MAC being HMAC-SHA256 with key over the cookie's name and the
// payload, so a cookie of one kind is never taken for another.
func seal[T any](key []byte, name string, exp time.Time, v T) string {
	b, err := json.Marshal(sealed[T]{Exp: exp.Unix(), V: v})
	if err != nil {
		panic(err) // the payloads are structs of strings
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(cookieMAC(key, name, payload))
}

// unseal returns the value of a cookie made by seal with the same key and
// name, refusing it when the MAC differs (compared in constant time) or
// now is past its expiry.
func unseal[T any](key []byte, name, value string, now time.Time) (T, error) {
	var zero T
	payload, mac, ok := strings.Cut(value, ".")
	if !ok {
		return zero, errors.New("cookie not signed")
	}
	// Compared as text, so no other spelling of the MAC passes.
	want := base64.RawURLEncoding.EncodeToString(cookieMAC(key, name, payload))
	if !hmac.Equal([]byte(mac), []byte(want)) {
		return zero, errors.New("cookie signature does not match")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return zero, fmt.Errorf("cookie payload: %w", err)
	}
	var s sealed[T]
	if err := json.Unmarshal(b, &s); err != nil {
		return zero, fmt.Errorf("cookie payload: %w", err)
	}
	if !now.Before(time.Unix(s.Exp, 0)) {
		return zero, errors.New("cookie expired")
	}
	return s.V, nil
}

// cookieMAC is HMAC-SHA256(key, name "\x00" payload).
func cookieMAC(key []byte, name, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// randomToken returns 32 random bytes, base64url encoded.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}
