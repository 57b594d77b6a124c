package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
	return listenAndServe(e, c.Port, func(base string, log *slog.Logger) handlers.Deps {
		fmt.Fprintf(e.stdout, "demo: %d sessions in a temporary, read-only store\n", len(batches))
		fmt.Fprintf(e.stdout, "  review app:  %s/\n", base)
		return handlers.Deps{Store: st, Hub: handlers.NewHub(st, log), Log: log, Demo: true}
	})
}
