// Package handlers serves the service over HTTP: the JSON API, the live
// change stream, the review app's pages and its static files.
package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/static"
	"github.com/agentreview/service/views"
)

// Store is every store method the routes use.
type Store interface {
	Applier
	Reader
	Deleter
	Reviewer
	ImageReader
}

// Deps is what the routes are built from.
type Deps struct {
	Store Store
	Hub   *Hub
	Auth  Auth
	Log   *slog.Logger
	// Demo serves a read-only store: ingest and delete are refused and the
	// app shows no delete button.
	Demo bool
	// Core, when set, makes this the UI development server: pages are
	// rendered from the core's JSON routes and /api is proxied there.
	Core *url.URL
	// Reviewer is the name the app fills in for verdicts and notes until
	// the reviewer types another (git's user.name, else the OS user).
	Reviewer string
	// Resume, when set, is the command line that reopens a session in its
	// agent (agent kind, session id, workspace root), "" for none: the
	// session page offers it to copy.
	Resume func(kind, id, dir string) string
	// Team, when set, makes this a team server: users sign in, pushes are
	// their owners' (team_auth.go), and Host names the team's origin.
	Team *Team
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
		if req.Method == http.MethodGet || req.Method == http.MethodHead {
			// A mistyped or stale address in the browser: a page with the
			// way back, as for a session that is gone.
			render(w, req, d.Log, http.StatusNotFound, views.Missing("There is no page at this address."))
			return
		}
		writeText(w, http.StatusNotFound, "not found")
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		if v == http.ErrAbortHandler {
			panic(v) // a proxied stream whose client left: net/http ends it quietly
		}
		writeError(w, req, d.Log, fmt.Errorf("panic: %v", v))
	}

	write := func(h http.Handler) http.Handler { return h }
	if d.Demo {
		write = readOnly
	}
	var push pushAuth = d.Auth
	if d.Team != nil {
		push = teamPush{d.Team.Tokens}
	}
	exports := newExportGate()
	var pages PageSource = storeSource{d.Store, exports}
	if d.Core != nil {
		// UI development server: the core answers every /api route.
		pages = CoreClient{Base: d.Core, HTTP: &http.Client{Timeout: 30 * time.Second}}
		proxy := coreProxy(d.Core)
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
			r.Handler(m, "/api/*path", proxy)
		}
	} else {
		// JSON API
		r.Handler(http.MethodPost, "/api/ingest", write(ingest(d.Store, d.Hub, push, d.Log)))
		r.Handler(http.MethodGet, "/api/sessions", listSessions(d.Store, d.Log))
		r.Handler(http.MethodGet, "/api/sessions/:id", sessionDetail(d.Store, d.Log))
		r.Handler(http.MethodDelete, "/api/sessions/:id", write(appOnly(deleteSession(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodPut, "/api/sessions/:id/verdict", write(appOnly(putVerdict(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodDelete, "/api/sessions/:id/verdict", write(appOnly(deleteVerdict(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodPost, "/api/sessions/:id/notes", write(appOnly(addNote(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodPut, "/api/sessions/:id/notes/:note", write(appOnly(editNote(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodDelete, "/api/sessions/:id/notes/:note", write(appOnly(deleteNote(d.Store, d.Hub, d.Log))))
		r.Handler(http.MethodGet, "/api/sessions/:id/changes", fileChanges(d.Store, d.Log))
		r.Handler(http.MethodGet, "/api/sessions/:id/steps/:seq/images/:n", stepImage(d.Store, d.Log))
		r.Handler(http.MethodGet, "/api/sessions/:id/export", exportSession(d.Store, exports, d.Log))
		r.Handler(http.MethodGet, "/api/sessions/:id/export/review", exportReview(d.Store, exports, d.Log))
		r.Handler(http.MethodGet, "/api/search", searchAPI(d.Store, d.Log))
		r.Handler(http.MethodGet, "/api/usage", usageAPI(d.Store, d.Log))

		// Live stream
		r.Handler(http.MethodGet, "/api/events", events(d.Hub, d.Log))
		r.Handler(http.MethodHead, "/api/events", events(d.Hub, d.Log))
	}

	// Pages and the fragments they refetch
	r.Handler(http.MethodGet, "/", listPage(pages, d.Demo, d.Team != nil, d.Log, false))
	r.Handler(http.MethodGet, "/rows", listPage(pages, d.Demo, d.Team != nil, d.Log, true))
	r.Handler(http.MethodGet, "/total-estimate", totalEstimate(pages, d.Log))
	r.Handler(http.MethodGet, "/session", sessionPage(pages, d.Demo, d.Team != nil, d.Reviewer, d.Resume, d.Log))
	r.Handler(http.MethodGet, "/session/turns", turnsFragment(pages, d.Demo, d.Log))
	r.Handler(http.MethodGet, "/session/steps", earlierStepsFragment(pages, d.Demo, d.Log))
	r.Handler(http.MethodGet, "/session/updates", updatesFragment(pages, d.Demo, d.Log))
	r.Handler(http.MethodGet, "/session/step", stepFragment(pages, d.Log))
	r.Handler(http.MethodGet, "/session/next", nextUnreviewedPage(pages, d.Log))
	r.Handler(http.MethodGet, "/session/problem", nextProblem(pages, d.Log))
	r.Handler(http.MethodGet, "/session/changes", changesFragment(pages, d.Log))
	r.Handler(http.MethodGet, "/session/change", changeFragment(pages, d.Log))
	r.Handler(http.MethodGet, "/session/export-panel", exportPanelFragment(pages, d.Log))
	r.Handler(http.MethodGet, "/search", searchPage(pages, d.Demo, d.Log))
	r.Handler(http.MethodGet, "/usage", usagePage(pages, d.Demo, d.Log))

	// Static files
	r.Handler(http.MethodGet, "/static/*filepath", http.StripPrefix("/static", http.FileServerFS(static.FS)))

	if d.Team == nil {
		return compress(secure(loopbackOnly(headAsGet(r))))
	}
	// Team server: the identity source's sign-in routes, and a user on
	// every other route.
	if d.Team.SignIn != nil {
		auth := d.Team.SignIn.Handler()
		r.Handler(http.MethodGet, "/auth/*path", auth)
		r.Handler(http.MethodPost, "/auth/*path", auth)
	}
	return compress(secure(d.Team.originOnly(d.Team.signedIn(d.Log, headAsGet(r)))))
}

// headAsGet answers HEAD like GET on routes without a HEAD route of their
// own; the server sends no body for HEAD.
func headAsGet(r *httprouter.Router) http.Handler {
	routed := onEscapedPath(r)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodHead {
			if h, _, _ := r.Lookup(http.MethodHead, req.URL.EscapedPath()); h == nil {
				req = req.Clone(req.Context())
				req.Method = http.MethodGet
			}
		}
		routed.ServeHTTP(w, req)
	})
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

// readOnly refuses a write route, for the demo.
func readOnly(http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "the demo is read-only"})
	})
}
