package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/store"
)

// addNote is POST /api/sessions/:id/notes: a note on the step with the
// body's seq; 201 with the note. On a team server any signed-in user may
// add one, as its author.
func addNote(st Reviewer, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r, maxReviewBody)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		in, err := parseNote(r, body, true)
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

// editNote is PUT /api/sessions/:id/notes/:note: new author and text. On
// a team server only the note's author may edit it (ownNote).
func editNote(st noteStore, hub *Hub, log *slog.Logger) http.Handler {
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
		in, err := parseNote(r, body, false)
		if err == nil {
			err = ownNote(r, st, noteID)
		}
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

// deleteNote is DELETE /api/sessions/:id/notes/:note; on a team server
// only by the note's author (ownNote).
func deleteNote(st noteStore, hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteID, ok := noteParam(r)
		if !ok {
			writeError(w, r, log, store.ErrNotFound)
			return
		}
		err := ownNote(r, st, noteID)
		if err == nil {
			err = st.DeleteNote(r.Context(), sessionID(r), noteID)
		}
		if err != nil {
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

// parseNote decodes a note body. On a team server the signed-in user is
// the author: the body's author may be left out, and one naming someone
// else is overridden rather than refused (as a verdict's reviewer is), so
// clients written for the local service keep working and no name but the
// user's is ever stored.
func parseNote(r *http.Request, body []byte, withSeq bool) (store.NoteInput, error) {
	if user := signedInUser(r); user != "" {
		return store.ParseNoteBy(body, withSeq, user)
	}
	return store.ParseNote(body, withSeq)
}

// errNotYourNote refuses, with 403, a team server's user an edit or delete
// of someone else's note.
var errNotYourNote = &statusError{http.StatusForbidden, "only the note's author may edit or delete it"}

// noteStore writes notes and reads whose a note is.
type noteStore interface {
	Reviewer
	Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error)
}

// ownNote checks, on a team server, that the note is the signed-in user's;
// the local service has one user, whose every note is. It returns
// store.ErrNotFound for a note the session does not have. The check reads
// before the write, which is safe: on a team server only the author edits
// a note, and an edit keeps the author, so the author read cannot change
// before the write; a note deleted in between is not found by the write.
func ownNote(r *http.Request, st noteStore, noteID int64) error {
	user := signedInUser(r)
	if user == "" {
		return nil
	}
	// The session's notes come with it; its steps are not needed.
	d, err := st.Detail(r.Context(), sessionID(r), store.DetailQuery{Turns: 1, NoSteps: true})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(d.Notes, func(n store.Note) bool { return n.ID == noteID })
	switch {
	case i < 0:
		return store.ErrNotFound
	case d.Notes[i].Author != user:
		return errNotYourNote
	}
	return nil
}
