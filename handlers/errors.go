package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentreview/service/store"
)

// statusError is a request problem found by a handler itself, before the
// store is asked: a bad header or body.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Error   string          `json:"error"`
	Details []store.Problem `json:"details,omitempty"`
	Omitted int             `json:"omitted,omitempty"`
}

// writeError is the one place that turns an error into the spec's status
// and body. Errors without a kind are logged and answered with a generic 500.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var (
		invalid   *store.InvalidError
		reference *store.ReferenceError
		conflict  *store.ConflictError
		deleted   *store.DeletedError
		tooMany   *store.TooManyError
		diskFull  *store.DiskFullError
		se        *statusError
	)
	switch {
	case errors.As(err, &se):
		writeJSON(w, se.status, errorBody{Error: se.msg})
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not found"})
	case errors.Is(err, store.ErrNotImage):
		writeJSON(w, http.StatusNotFound, errorBody{Error: err.Error()}) // no image to serve there
	case errors.Is(err, store.ErrNotJSON), errors.Is(err, store.ErrNotObject), errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrBadFilter):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
	case errors.As(err, &invalid):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: invalid.Error(), Details: invalid.Problems, Omitted: invalid.Omitted})
	case errors.As(err, &reference):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: reference.Error(), Details: reference.Problems, Omitted: reference.Omitted})
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusConflict, errorBody{Error: conflict.Error(), Details: []store.Problem{conflict.Problem}})
	case errors.As(err, &deleted):
		writeJSON(w, http.StatusGone, errorBody{Error: deleted.Error()})
	case errors.As(err, &tooMany):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: tooMany.Error()})
	case errors.As(err, &diskFull):
		// 507 Insufficient Storage (RFC 4918): the spec fixes no status for it.
		log.Error("disk full", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSON(w, http.StatusInsufficientStorage, errorBody{Error: diskFull.Error()})
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		// The store stayed locked by other writers past its wait limit.
		log.Warn("store busy", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the store is busy; try again"})
	default:
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal error"})
	}
}

// writeJSON encodes v first, so an encoding failure never sends half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeText answers in plain text, for the statuses the spec marks so.
func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}
