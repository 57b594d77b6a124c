// Package handlers serves the service over HTTP: the JSON API, the live
// change stream, the review app's pages and its static files.
package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/static"
)

// Store is every store method the routes use.
type Store interface {
	Applier
	Reader
	Deleter
}

// Deps is what the routes are built from.
type Deps struct {
	Store Store
	Hub   *Hub
	Auth  Auth
	Log   *slog.Logger
}

// Routes returns the service's handler: every URL it serves is here.
func Routes(d Deps) http.Handler {
	r := httprouter.New()
	r.HandleOPTIONS = false // no preflight is ever approved
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// httprouter lists OPTIONS too, but OPTIONS is never answered.
		var allow []string
		for _, m := range strings.Split(w.Header().Get("Allow"), ", ") {
			if m != http.MethodOptions {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeText(w, http.StatusMethodNotAllowed, "method not allowed")
	})
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/api/") {
			writeJSON(w, http.StatusNotFound, errorBody{Error: "not found"})
			return
		}
		writeText(w, http.StatusNotFound, "not found")
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		writeError(w, req, d.Log, fmt.Errorf("panic: %v", v))
	}

	// JSON API
	r.Handler(http.MethodPost, "/api/ingest", ingest(d.Store, d.Hub, d.Auth, d.Log))
	r.Handler(http.MethodGet, "/api/sessions", listSessions(d.Store, d.Log))
	r.Handler(http.MethodGet, "/api/sessions/:id", sessionDetail(d.Store, d.Log))
	r.Handler(http.MethodDelete, "/api/sessions/:id", deleteSession(d.Store, d.Hub, d.Log))

	// Live stream
	r.Handler(http.MethodGet, "/api/events", events(d.Hub, d.Log))
	r.Handler(http.MethodHead, "/api/events", events(d.Hub, d.Log))

	// Pages
	r.Handler(http.MethodGet, "/", listPage(d.Store, d.Log))

	// Static files
	r.Handler(http.MethodGet, "/static/*filepath", http.StripPrefix("/static", http.FileServerFS(static.FS)))

	return secure(loopbackOnly(r))
}

// NewServer returns an HTTP server for h with the timeouts that keep slow
// or stalled clients from holding connections. Event streams lift the write
// timeout for themselves.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
