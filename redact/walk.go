package redact

import (
	"context"
	"os"

	"github.com/agentreview/service/store"
)

// This file is how a session leaves the machine: the export and a share to
// a team server both read it this way, so they mask the same values with
// the same placeholders. The session is read without its steps and masked
// (ReadSession), then its steps a page at a time, turn by turn in the
// order of the session's turns (ReadTurnSteps): placeholders are numbered
// by first appearance, so the order is part of the rule.

// SessionReader is what the walk reads of the store (store.Backend).
type SessionReader interface {
	Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error)
	TurnSteps(ctx context.Context, id, turnID string, after int64, budget int) ([]store.Step, error)
}

// ReadSession reads session id without its steps and masks it
// (MaskSession).
func ReadSession(ctx context.Context, r SessionReader, id string, keep []string) (*Masker, store.SessionDetail, error) {
	d, err := r.Detail(ctx, id, store.DetailQuery{NoSteps: true})
	if err != nil {
		return nil, store.SessionDetail{}, err
	}
	return MaskSession(&d, keep), d, nil
}

// MaskSession masks d, read without its steps, with a new Masker for a
// walk of its steps, which it returns; keep lists the placeholders of
// candidate values left unmasked (Masker.Keep). Home folders are shown as
// ~ for the user running the service.
func MaskSession(d *store.SessionDetail, keep []string) *Masker {
	home, _ := os.UserHomeDir()
	m := NewMasker(home)
	m.Keep(keep)
	Session(m, d)
	return m
}

// ReadTurnSteps reads the steps of a turn of session id after seq after,
// about budget bytes of them (store.Backend.TurnSteps), masked with m.
func ReadTurnSteps(ctx context.Context, m *Masker, r SessionReader, id, turnID string, after int64, budget int) ([]store.Step, error) {
	steps, err := r.TurnSteps(ctx, id, turnID, after, budget)
	if err != nil {
		return nil, err
	}
	for i := range steps {
		Step(m, &steps[i])
	}
	return steps, nil
}
