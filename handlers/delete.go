package handlers

import (
	"context"
	"log/slog"
	"net/http"
)

// Deleter is the store method the delete route needs.
type Deleter interface {
	Delete(ctx context.Context, id string) error
}

// deleteSession is DELETE /api/sessions/:id; the route table lets only
// the review app itself reach it (appOnly).
func deleteSession(st Deleter, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := sessionID(r)
		if err := st.Delete(r.Context(), id); err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusOK, deleted{Deleted: id})
	})
}

// deleted is the answer to a successful delete.
type deleted struct {
	Deleted string `json:"deleted"`
}
