package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/store"
)

// Reader is the store's read side.
type Reader interface {
	List(ctx context.Context, agent string) (store.SessionList, error)
	Detail(ctx context.Context, id string) (store.SessionDetail, error)
}

// listSessions is GET /api/sessions[?agent=<kind>].
func listSessions(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, err := st.List(r.Context(), r.URL.Query().Get("agent"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
	})
}

// sessionDetail is GET /api/sessions/:id.
func sessionDetail(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := st.Detail(r.Context(), httprouter.ParamsFromContext(r.Context()).ByName("id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
}
