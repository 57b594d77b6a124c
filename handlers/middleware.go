package handlers

import (
	"net/http"

	"github.com/agentreview/service/internal/loopback"
)

// secure sets the headers every response carries, errors and static files
// included. No CORS header is ever sent.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
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
