package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// Usage is the token usage an agent reported, added up over the session's
// API responses, each counted once (Session.Usage).
type Usage struct {
	APIRequests   int64
	Input         int64
	Output        int64
	CacheRead     int64
	CacheCreation int64
}

// Reported is the usage one API response reported, for AddUsage.
type Reported struct {
	// ID identifies the response within the session (Claude Code's
	// message.id); an adapter whose agent gives none makes one that stays
	// the same when the files are read again.
	ID     string
	At     Time
	Model  string
	Actor  *Actor // nil for the main agent
	Tokens pricing.Tokens
	// Requests is how many API requests it stands for when the agent
	// reports only totals (0 means one).
	Requests int64
	// CostUSD is the cost the agent reported for it, nil when none.
	CostUSD *float64
}

type usageList struct {
	recs []*usageRec
	byID map[string]*usageRec
}

type usageRec struct {
	Reported
	turn *Turn
}

// AddUsage records the usage of one API response in the current turn. A
// response reported again under the same id replaces the earlier counts, so
// each response counts once with its final usage.
func (b *Builder) AddUsage(r Reported) {
	if r.ID == "" {
		return
	}
	r = r.Sane()
	if b.usage.byID == nil {
		b.usage.byID = map[string]*usageRec{}
	}
	if u := b.usage.byID[r.ID]; u != nil {
		u.Reported = r
		return
	}
	u := &usageRec{Reported: r, turn: b.turn}
	b.usage.byID[r.ID] = u
	b.usage.recs = append(b.usage.recs, u)
}

// finishUsage makes the usage records, after the turns and actors are
// placed (a response without a time gets the session's start), and adds them up in Session.Usage.
func (b *Builder) finishUsage(start Time) []store.UsageRecord {
	if len(b.usage.recs) == 0 {
		return nil
	}
	out := make([]store.UsageRecord, 0, len(b.usage.recs))
	sum := &Usage{}
	for _, u := range b.usage.recs {
		at := u.At
		if at.IsZero() {
			at = start
		}
		actor, turn := RootActor, u.turn
		if u.Actor != nil && len(u.Actor.steps) > 0 {
			actor, turn = u.Actor.ID, u.Actor.turn
		}
		if turn == nil {
			turn = b.turnAt(at)
		}
		out = append(out, store.UsageRecord{
			ID: u.ID, At: at.Text, Model: u.Model, ActorID: actor, TurnID: turn.ID,
			Tokens: u.Tokens, Requests: u.Requests, CostUSD: u.CostUSD, Source: store.UsageFromFile,
		})
		sum.APIRequests += max(u.Requests, 1)
		sum.Input += u.Tokens.Input
		sum.Output += u.Tokens.Output
		sum.CacheRead += u.Tokens.CacheRead
		sum.CacheCreation += u.Tokens.CacheCreation
	}
	b.sess.Usage = sum
	return out
}

// Sane keeps what the store takes of what a file says: counts from 0, a
// cost only when it is a number from 0, ids and names of at most 512 bytes
// (a longer id by its hash), so an odd record never costs the session.
func (r Reported) Sane() Reported {
	const most = 1 << 40
	for _, n := range []*int64{&r.Tokens.Input, &r.Tokens.Output, &r.Tokens.CacheRead, &r.Tokens.CacheCreation, &r.Requests} {
		*n = min(max(*n, 0), most)
	}
	r.Tokens.CacheCreation1h = min(max(r.Tokens.CacheCreation1h, 0), r.Tokens.CacheCreation) // a part of it
	if r.CostUSD != nil && !(*r.CostUSD >= 0 && *r.CostUSD < 1e9) {
		r.CostUSD = nil
	}
	if len(r.ID) > 512 {
		h := sha256.Sum256([]byte(r.ID))
		r.ID = "sha256:" + hex.EncodeToString(h[:])
	}
	if len(r.Model) > 512 {
		r.Model = strings.ToValidUTF8(r.Model[:512], "")
	}
	return r
}
