package adapters

import (
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
