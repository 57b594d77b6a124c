package handlers

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"

	"github.com/agentreview/service/internal/loopback"
)

// contentSecurityPolicy lets a page load scripts, styles, workers and
// connections from the service only: no inline script or style, no eval,
// no framing, no <base>, forms posting only to the service.
const contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// secure sets the headers every response carries, errors and static files
// included. No CORS header is ever sent.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		next.ServeHTTP(w, r)
	})
}

// compress encodes responses (pages, JSON, static files) with gzip or zstd
// when the client accepts it. The event stream is never encoded, so each
// event reaches the client when it is flushed. The service sends no
// already-compressed type (images, archives), so the stream is the only
// exception.
var compress = mustWrapper(gzhttp.NewWrapper(gzhttp.ExceptContentTypes([]string{"text/event-stream"})))

func mustWrapper(wrap func(http.Handler) http.HandlerFunc, err error) func(http.Handler) http.HandlerFunc {
	if err != nil {
		panic(err) // the options above are fixed: a bad one fails every test
	}
	return wrap
}

// loopbackOnly refuses a Host that is not a loopback name with 421, which
// stops DNS rebinding: a page of another site that resolves its name to
// 127.0.0.1 still sends its own name as Host.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.IsHost(r.Host) {
			writeText(w, http.StatusMisdirectedRequest, "misdirected request: host "+r.Host+" is not a loopback name")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// appOnly lets only the review app itself change what is stored: a browser
// request from another site is refused with 403 (Go's cross-origin
// protection: Sec-Fetch-Site, then Origin against Host); terminal clients,
// which send neither header, pass. Every route that deletes or writes from
// the app (not ingest, which has its token) goes through it.
func appOnly(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			writeJSON(w, http.StatusForbidden, errorBody{Error: "cross-site request refused: make changes from the review app"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
