package store

import (
	"context"
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// SessionWrite is one session for ApplyGroup: its batches, in order, and
// the agent files to record as imported once they are written.
type SessionWrite struct {
	Batches []*Batch
	Files   []ImportedFile
}

// SessionResult is what ApplyGroup did with one session: the result of
// each batch, or the error that left the whole session unwritten.
type SessionResult struct {
	Results []ApplyResult
	Err     error
}

// ApplyGroup writes several sessions in one transaction, as Apply writes
// each of their batches: the same validation, checks, errors and change
// stamps (one per batch). A commit per small session cost an import of
// many small files more than their steps (docs/performance.md). Each
// session is all or nothing on its own: a session whose batch fails is
// rolled back to where it started, its files are not recorded, and its
// error is in its result, while the others are written. The error
// returned is for the transaction as a whole (the store busy, the disk
// full); then nothing was written.
func (s *Store) ApplyGroup(ctx context.Context, agentKind string, sessions []SessionWrite) ([]SessionResult, error) {
	out := make([]SessionResult, len(sessions))
	valid := make([]bool, len(sessions))
	for i, w := range sessions {
		valid[i] = true
		for _, b := range w.Batches {
			if err := b.Validate(); err != nil {
				out[i].Err, valid[i] = fmt.Errorf("store: apply batch: %w", Describe(err)), false
				break
			}
		}
	}
	changed := false
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		changed = false
		for i, w := range sessions {
			if !valid[i] {
				continue
			}
			out[i] = SessionResult{}
			res, err := s.applySession(ctx, conn, agentKind, w)
			if err != nil && !isSessionError(err) {
				return err
			}
			out[i] = SessionResult{Results: res, Err: err}
			for _, r := range res {
				changed = changed || r.Changed
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: apply group: %w", Describe(err))
	}
	if changed {
		s.indexLater() // search_index.go
	}
	return out, nil
}

// applySession writes one session's batches and records its files inside
// a savepoint, rolled back when any of them fails.
func (s *Store) applySession(ctx context.Context, conn *sqlite.Conn, agentKind string, w SessionWrite) (res []ApplyResult, err error) {
	defer sqlitex.Save(conn)(&err)
	for _, b := range w.Batches {
		r, err := s.applyBatch(ctx, conn, b)
		if err != nil {
			return nil, fmt.Errorf("store: apply batch: %w", Describe(err))
		}
		res = append(res, r)
	}
	return res, recordImportedFiles(conn, agentKind, w.Files)
}

// isSessionError tells an error of one session's records (rolled back to
// its savepoint, the group goes on) from one of the transaction (busy,
// disk full, I/O), which ends the group.
func isSessionError(err error) bool {
	var (
		del  *DeletedError
		ref  *ReferenceError
		conf *ConflictError
		inv  *InvalidError
		many *TooManyError
	)
	if errors.As(err, &del) || errors.As(err, &ref) || errors.As(err, &conf) || errors.As(err, &inv) || errors.As(err, &many) {
		return true
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultConstraint, sqlite.ResultTooBig, sqlite.ResultMismatch, sqlite.ResultRange:
		return true
	}
	return false
}
