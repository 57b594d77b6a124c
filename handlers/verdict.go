package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/agentreview/service/store"
)

// maxReviewBody is the most bytes a verdict or note body may have: room
// for the longest note with every character escaped.
const maxReviewBody = 128 << 10

// Reviewer is the store's write side for what reviewers write.
type Reviewer interface {
	SetVerdict(ctx context.Context, id string, v store.Verdict) error
	ClearVerdict(ctx context.Context, id string) error
	AddNote(ctx context.Context, id string, in store.NoteInput) (store.Note, error)
	EditNote(ctx context.Context, id string, noteID int64, in store.NoteInput) (store.Note, error)
	DeleteNote(ctx context.Context, id string, noteID int64) error
}

// verdictAnswer is the answer of the verdict routes.
type verdictAnswer struct {
	SessionID string         `json:"session_id"`
	Verdict   *store.Verdict `json:"verdict"` // null once cleared
}

// putVerdict is PUT /api/sessions/:id/verdict: sets the session's verdict.
// Any signed-in user of a team server may set it, as its reviewer.
func putVerdict(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r, maxReviewBody)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		v, err := store.ParseVerdict(body)
		if err == nil {
			if user := signedInUser(r); user != "" {
				// On a team server the signed-in user is the reviewer: a
				// body naming someone else is overridden rather than
				// refused, so clients written for the local service,
				// which send a name of their own (git's user.name), keep
				// working, and no name but the user's is ever stored.
				v.Reviewer = user
			}
			err = st.SetVerdict(r.Context(), sessionID(r), v)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusOK, verdictAnswer{SessionID: sessionID(r), Verdict: &v})
	})
}

// deleteVerdict is DELETE /api/sessions/:id/verdict: clears it.
func deleteVerdict(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := st.ClearVerdict(r.Context(), sessionID(r)); err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusOK, verdictAnswer{SessionID: sessionID(r)})
	})
}
