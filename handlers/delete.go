package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Deleter is what the delete route needs of the store: the delete, and on
// a team server the session's owner.
type Deleter interface {
	Delete(ctx context.Context, id string) error
	Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error)
}

// deleteSession is DELETE /api/sessions/:id; the route table lets only
// the review app itself reach it (appOnly). On a team server only the
// session's owner deletes it (signed in, or with their push token: the
// delete a share's owner asks for); an admin deletes any session from a
// terminal (service delete ID --db postgres://...).
func deleteSession(st Deleter, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := sessionID(r)
		if user := signedInUser(r); user != "" {
			d, err := st.Detail(r.Context(), id, store.DetailQuery{NoSteps: true})
			if err != nil {
				writeError(w, r, log, err)
				return
			}
			if d.OwnerID != user {
				writeJSON(w, http.StatusForbidden, errorBody{Error: "only the session's owner may delete it (" + d.OwnerID + "); an admin can, with service delete"})
				return
			}
		}
		if err := st.Delete(r.Context(), id); err != nil {
			writeError(w, r, log, err)
			return
		}
		views.ForgetHighlights()
		hub.Poke()
		writeJSON(w, http.StatusOK, deleted{Deleted: id})
	})
}

// deleted is the answer to a successful delete.
type deleted struct {
	Deleted string `json:"deleted"`
}
