package handlers

import (
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"
)

// onEscapedPath routes on the path as sent, still percent-encoded, so a
// session id holding "/", "%", "?", "#", a space or any other byte stays one
// path segment; sessionID decodes it. Handlers get the request unchanged.
func onEscapedPath(r *httprouter.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.EscapedPath()
		if h, ps, _ := r.Lookup(req.Method, path); h != nil {
			if r.PanicHandler != nil {
				defer func() {
					if v := recover(); v != nil {
						r.PanicHandler(w, req, v)
					}
				}()
			}
			h(w, req, ps)
			return
		}
		// No route: the router answers 404, 405 or a redirect, judged on the
		// same escaped path. It runs no handler, and edits the copy only.
		u := *req.URL
		u.Path, u.RawPath = path, ""
		miss := req.WithContext(req.Context())
		miss.URL = &u
		r.ServeHTTP(w, miss)
	})
}

// sessionID is the route's :id, decoded once.
func sessionID(r *http.Request) string {
	raw := httprouter.ParamsFromContext(r.Context()).ByName("id")
	id, err := url.PathUnescape(raw)
	if err != nil {
		return raw // unreachable: EscapedPath is always a valid encoding
	}
	return id
}
