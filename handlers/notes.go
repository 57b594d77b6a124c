package handlers

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/store"
)

// addNote is POST /api/sessions/:id/notes: a note on the step with the
// body's seq; 201 with the note.
func addNote(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r, maxReviewBody)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		in, err := store.ParseNote(body, true)
		var n store.Note
		if err == nil {
			n, err = st.AddNote(r.Context(), sessionID(r), in)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusCreated, n)
	})
}

// editNote is PUT /api/sessions/:id/notes/:note: new author and text.
func editNote(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteID, ok := noteParam(r)
		if !ok {
			writeError(w, r, log, store.ErrNotFound)
			return
		}
		body, err := readBody(r, maxReviewBody)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		in, err := store.ParseNote(body, false)
		var n store.Note
		if err == nil {
			n, err = st.EditNote(r.Context(), sessionID(r), noteID, in)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusOK, n)
	})
}

// deleteNote is DELETE /api/sessions/:id/notes/:note.
func deleteNote(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteID, ok := noteParam(r)
		if !ok {
			writeError(w, r, log, store.ErrNotFound)
			return
		}
		if err := st.DeleteNote(r.Context(), sessionID(r), noteID); err != nil {
			writeError(w, r, log, err)
			return
		}
		hub.Poke()
		writeJSON(w, http.StatusOK, noteDeleted{Deleted: noteID})
	})
}

// noteDeleted is the answer to a deleted note.
type noteDeleted struct {
	Deleted int64 `json:"deleted"`
}

// noteParam is the note id in the path; a malformed one names no note.
func noteParam(r *http.Request) (int64, bool) {
	n, err := strconv.ParseInt(httprouter.ParamsFromContext(r.Context()).ByName("note"), 10, 64)
	return n, err == nil && n > 0
}
