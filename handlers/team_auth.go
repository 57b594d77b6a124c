package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Identity tells who is asking: the team server's source of signed-in
// users, a trusted reverse-proxy header (HeaderIdentity) or OIDC.
type Identity interface {
	// User returns the signed-in user of r; ok is false when r has none.
	User(r *http.Request) (user string, ok bool)
}

// TokenUsers finds whose a team push token is. An unknown or revoked
// token is store.ErrNotFound.
type TokenUsers interface {
	UserForToken(ctx context.Context, token string) (string, error)
}

// Team makes the routes a team server's: every route but static files and
// the sign-in routes needs a user, pushes need a user's token and are
// stored as that user's, and Host must name the team's origin. The local
// service has no Team, and no header names a user there.
type Team struct {
	// Origin is where the team reaches the server (https://review.example.com):
	// a Host naming anything else is refused with 421.
	Origin *url.URL
	// Users signs in the users of the app and the read routes.
	Users Identity
	// Tokens names the user of a push, and of an API request that brings
	// its token instead of a signed-in user (a terminal client).
	Tokens TokenUsers
	// SignIn, when set, is an identity source's own sign-in (OIDC): its
	// /auth/ routes need no user, and a page request without a user is
	// sent to it; without it such a request gets a 401 page.
	SignIn SignIn
}

// SignIn is a sign-in flow of the team server's own, such as OIDC's
// (*OIDC, oidc.go).
type SignIn interface {
	// Handler serves the sign-in routes, all under /auth/ (GET and POST).
	Handler() http.Handler
	// RedirectToLogin answers a page request without a user: off to sign
	// in, and back to the page after.
	RedirectToLogin(w http.ResponseWriter, r *http.Request)
}

// OIDC is both the users' identity source and their sign-in.
var (
	_ Identity = (*OIDC)(nil)
	_ SignIn   = (*OIDC)(nil)
)

// HeaderIdentity is the user a trusted reverse proxy puts in a header
// (oauth2-proxy's X-Forwarded-User), honoured only on a team server and
// only under the name the admin gives. The proxy must set or strip the
// header on every request, so that no client can send its own.
type HeaderIdentity struct {
	Header string
}

// User returns the header's value when it is there once and is a valid
// user name (store.CheckUser).
func (h HeaderIdentity) User(r *http.Request) (string, bool) {
	vs := r.Header.Values(h.Header)
	if h.Header == "" || len(vs) != 1 || store.CheckUser(vs[0]) != nil {
		return "", false
	}
	return vs[0], true
}

// pushAuth says whose push a request is.
type pushAuth interface {
	// pusher returns the owner of the pushed sessions ("" for the local
	// service's one token: store.OwnerLocal); ok is false without a valid
	// token.
	pusher(r *http.Request) (owner string, ok bool, err error)
	// tokenHint tells, in the 401 answer, where a token comes from.
	tokenHint() string
}

// teamPush checks a push's token against the team's users' tokens.
type teamPush struct{ tokens TokenUsers }

func (t teamPush) pusher(r *http.Request) (string, bool, error) {
	tok, ok := bearer(r)
	if !ok {
		return "", false, nil
	}
	user, err := t.tokens.UserForToken(r.Context(), tok)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	return user, err == nil, err
}

func (teamPush) tokenHint() string { return "service team token add" }

// refuseToken answers 401 to a request without a valid token, with the
// spec's www-authenticate header.
func refuseToken(w http.ResponseWriter, hint string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="service"`)
	writeJSON(w, http.StatusUnauthorized, errorBody{Error: "missing or invalid bearer token (see " + hint + ")"})
}

// bearer is the request's bearer token, if it has one.
func bearer(r *http.Request) (string, bool) {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	cred = strings.TrimSpace(cred)
	if !ok || !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return "", false
	}
	return cred, true
}

// signedIn lets through a request with a user: the identity source's, or
// for /api routes the user of the push token it brings. Push, static files
// and the sign-in routes need none (ingest checks its own token). Without a
// user, /api answers 401 in JSON, and a page goes to the sign-in (SignIn)
// or gets a 401 page.
func (t *Team) signedIn(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath() // as the router routes it (escaped_path.go)
		if p == "/api/ingest" || strings.HasPrefix(p, "/static/") || (t.SignIn != nil && strings.HasPrefix(p, "/auth/")) {
			next.ServeHTTP(w, r)
			return
		}
		if user, ok := t.Users.User(r); ok {
			next.ServeHTTP(w, withUser(r, user))
			return
		}
		api := strings.HasPrefix(p, "/api/")
		if _, has := bearer(r); api && has {
			user, ok, err := teamPush{t.Tokens}.pusher(r)
			if err != nil {
				writeError(w, r, log, err)
				return
			}
			if ok {
				next.ServeHTTP(w, withUser(r, user))
				return
			}
		}
		switch {
		case api:
			w.Header().Set("WWW-Authenticate", `Bearer realm="service"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "sign-in required: open the review app, or send a team token (see service team token add)"})
		case t.SignIn != nil:
			t.SignIn.RedirectToLogin(w, r)
		default:
			render(w, r, log, http.StatusUnauthorized, views.SignInRequired())
		}
	})
}

// userKey is the request context's key of the signed-in user.
type userKey struct{}

// withUser is r with its signed-in user, for the routes behind signedIn.
func withUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user))
}

// signedInUser is the team server's user of r, the identity source's or
// the one whose token r brings (signedIn puts it there): the reviewer of
// every verdict and the author of every note r writes. It is "" on the
// local service, which has no users.
func signedInUser(r *http.Request) string {
	user, _ := r.Context().Value(userKey{}).(string)
	return user
}

// originOnly refuses, with 421, a Host that does not name the team's
// origin (its host and port, the origin scheme's default port when either
// has none: behind a proxy that ends TLS, requests come as http with the
// https origin's Host), which stops DNS rebinding as the loopback check
// does locally.
func (t *Team) originOnly(next http.Handler) http.Handler {
	want := hostPort(t.Origin.Host, t.Origin.Scheme)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hostPort(r.Host, t.Origin.Scheme) != want {
			writeText(w, http.StatusMisdirectedRequest, "misdirected request: host "+r.Host+" is not "+t.Origin.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostPort is host with its port (the scheme's default when it has none),
// lower case, for comparing Hosts.
func hostPort(host, scheme string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(h), port)
}
