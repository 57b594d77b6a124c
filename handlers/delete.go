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

// deleteSession is DELETE /api/sessions/:id. Only the review app itself
// may delete: a browser request from another site is refused with 403
// (Sec-Fetch-Site, then Origin against Host); terminal clients, which send
// neither header, pass.
func deleteSession(st Deleter, hub *Hub, log *slog.Logger) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			writeJSON(w, http.StatusForbidden, errorBody{Error: "cross-site delete refused: delete from the review app"})
			return
		}
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
