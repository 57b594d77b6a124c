package store

import (
	"errors"
	"fmt"
	"syscall"

	"zombiezen.com/go/sqlite"
)

// Errors of the store, by kind; handlers map each kind to its status.
var (
	// ErrNotFound means no stored session has the id.
	ErrNotFound = errors.New("not found")
	// ErrNotJSON means a batch body is not one valid JSON value.
	ErrNotJSON = errors.New("body is not valid JSON")
	// ErrNotObject means a batch body is valid JSON but not an object.
	ErrNotObject = errors.New("body must be a JSON object")
	// ErrBadCursor means a list cursor is not one the store gave out.
	ErrBadCursor = errors.New("after is not a cursor of this list")
	// ErrBadFilter means a list filter's value is not one of its form.
	ErrBadFilter = errors.New("bad list filter")
)

// Problem is one thing wrong with a batch, at a dotted path with [i]
// indices into the request body, e.g. steps[3].payload.exit_code.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// InvalidError reports every envelope and schema problem of a batch, or
// of a verdict or note body (Subject names which; empty for a batch).
// Problems holds at most MaxProblems; Omitted counts the rest.
type InvalidError struct {
	Subject  string
	Problems []Problem
	Omitted  int
}

func newInvalidError(ps []Problem) *InvalidError {
	listed, omitted := capProblems(ps)
	return &InvalidError{Problems: listed, Omitted: omitted}
}

func newReferenceError(ps []Problem) *ReferenceError {
	listed, omitted := capProblems(ps)
	return &ReferenceError{Problems: listed, Omitted: omitted}
}

// capProblems keeps the first MaxProblems and counts the rest.
func capProblems(ps []Problem) ([]Problem, int) {
	if len(ps) <= MaxProblems {
		return ps, 0
	}
	return ps[:MaxProblems], len(ps) - MaxProblems
}

func (e *InvalidError) Error() string {
	if e.Subject == "" {
		return "invalid batch"
	}
	return "invalid " + e.Subject
}

// ReferenceError reports records that point at nothing in the batch or the
// store, records of another session, and ids repeated within a batch.
type ReferenceError struct {
	Problems []Problem
	Omitted  int
}

func (e *ReferenceError) Error() string { return "batch references unknown or mismatched records" }

// ConflictError reports a step seq already held by another step.
type ConflictError struct {
	Problem Problem
}

func (e *ConflictError) Error() string { return "step seq already taken in this session" }

// DeletedError reports a push to a session that was deleted.
type DeletedError struct {
	SessionID string
}

func (e *DeletedError) Error() string {
	return fmt.Sprintf("session %s was deleted; it is not recorded again", e.SessionID)
}

// TooManyError reports a batch with more than MaxItems records of one kind.
type TooManyError struct {
	Kind  string // segments, actors, turns or steps
	Count int
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("too many %s in one batch: %d > %d; split it into several pushes", e.Kind, e.Count, MaxItems)
}

// DiskFullError reports a write that found no space left on the disk that
// holds the store. The write was rolled back: the store holds what it held.
type DiskFullError struct {
	Err error // SQLite's SQLITE_FULL or the system's ENOSPC
}

func (e *DiskFullError) Error() string {
	return "disk full: no space left on the disk that holds the store; free some and try again"
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// diskFull gives an error of a write that ran out of disk space its kind.
func diskFull(err error) error {
	if err != nil && (sqlite.ErrCode(err).ToPrimary() == sqlite.ResultFull || errors.Is(err, syscall.ENOSPC)) {
		return &DiskFullError{Err: err}
	}
	return err
}
