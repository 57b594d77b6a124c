package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/store"
)

// DemoCmd is `service demo`: the review app on a temporary store filled
// with realistic sessions, read-only.
type DemoCmd struct {
	Port int `help:"Port on 127.0.0.1 (the PORT variable is used when this is absent)." env:"PORT" default:"1234"`
}

// Run fills a temporary store and serves it, read-only, until interrupted;
// the store is removed on exit.
func (c *DemoCmd) Run(e *env) error {
	dir, err := os.MkdirTemp("", "service-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(e.ctx, filepath.Join(dir, "demo.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	batches := demoSessions(time.Now())
	for _, b := range batches {
		if _, err := st.Apply(e.ctx, b); err != nil {
			return fmt.Errorf("demo session %s: %w", b.Session.ID, err)
		}
	}
	if err := writeDemoReviews(e, st, batches); err != nil {
		return err
	}
	return listenAndServe(e, c.Port, func(base string, log *slog.Logger) handlers.Deps {
		fmt.Fprintf(e.stdout, "demo: %d sessions in a temporary, read-only store\n", len(batches))
		fmt.Fprintf(e.stdout, "  review app:  %s/\n", base)
		return handlers.Deps{Store: st, Hub: handlers.NewHub(st, log), Log: log, Demo: true}
	})
}

// demoReview is a reviewer's judgement of a demo session: a verdict and
// notes on the steps that ran the given commands.
type demoReview struct {
	session string
	verdict store.Verdict
	notes   []demoNote
}

type demoNote struct{ command, text string }

// demoReviews show the review features in the demo: a verdict in the
// list, notes on steps, and what note:* finds.
var demoReviews = []demoReview{
	{"demo-cline-91f0", store.Verdict{State: "needs_attention", Reviewer: "Demo reviewer", Note: "A live Stripe key was printed: rotate it before this session is shared."},
		[]demoNote{{"printenv | grep STRIPE", "This printed a live key into the transcript. The export masks it; the store keeps it until the session is deleted."}}},
	{"demo-ratelimit-4c1e", store.Verdict{State: "approved", Reviewer: "Demo reviewer", Note: "The limiter is right after the second fix; the push is left to me."},
		[]demoNote{
			{"go test ./internal/http/ -run TestRateLimit -v", "Refilled before checking, so the 101st request passed; mended two steps later."},
			{"git push origin main", "Declined on purpose: the branch is reviewed first."},
		}},
}

// writeDemoReviews writes demoReviews into the demo's store.
func writeDemoReviews(e *env, st *store.Store, batches []*store.Batch) error {
	for _, r := range demoReviews {
		i := slices.IndexFunc(batches, func(b *store.Batch) bool { return b.Session.ID == r.session })
		if i < 0 {
			return fmt.Errorf("demo review: no session %s", r.session)
		}
		if err := st.SetVerdict(e.ctx, r.session, r.verdict); err != nil {
			return fmt.Errorf("demo review of %s: %w", r.session, err)
		}
		for _, n := range r.notes {
			j := slices.IndexFunc(batches[i].Steps, func(s store.Step) bool {
				return s.Payload.Command != nil && *s.Payload.Command == n.command
			})
			if j < 0 {
				return fmt.Errorf("demo review of %s: no command %q", r.session, n.command)
			}
			in := store.NoteInput{Seq: batches[i].Steps[j].Seq, Author: r.verdict.Reviewer, Text: n.text}
			if _, err := st.AddNote(e.ctx, r.session, in); err != nil {
				return fmt.Errorf("demo review of %s: %w", r.session, err)
			}
		}
	}
	return nil
}
