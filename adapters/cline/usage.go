package cline

import "github.com/agentreview/service/adapters"

// addUsage hands the builder the usage of each request (ui_messages.json's
// api_req_started) or, without those, of each reply (the messages'
// metrics), in the order Cline wrote them, so the ids stay the same when
// the files grow.
func (r *reported) addUsage(b *adapters.Builder) {
	for _, rec := range r.recs {
		b.AddUsage(rec)
	}
}

// modelAt is the model task_metadata.json says was in use at the time: the
// latest model_usage entry at or before it, else the first.
func (r *reported) modelAt(at adapters.Time) string {
	model := ""
	for _, m := range r.models {
		if m.model == "" {
			continue
		}
		if model != "" && !at.IsZero() && m.at.At.After(at.At) {
			break
		}
		model = m.model
	}
	return model
}

// modelUse is a model_usage entry: the model in use from a time on.
type modelUse struct {
	at    adapters.Time
	model string
}
