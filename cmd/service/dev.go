package main

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/handlers"
)

// DevCmd is `service dev`: the UI development server. It renders the pages
// from a running core's JSON routes and proxies /api there; `just dev`
// runs it under `templ generate --watch`, so view edits show on reload.
type DevCmd struct {
	Port int    `help:"Port of the UI server on 127.0.0.1." env:"UI_PORT" default:"3000"`
	Core string `help:"Address of the core server." env:"SERVICE_CORE_URL" default:"http://127.0.0.1:1234"`
}

// Run serves the UI until interrupted.
func (c *DevCmd) Run(e *env) error {
	core, err := url.Parse(c.Core)
	if err != nil || core.Scheme == "" || core.Host == "" {
		return fmt.Errorf("SERVICE_CORE_URL %q is not an http address", c.Core)
	}
	return listenAndServe(e, c.Port, func(base string, log *slog.Logger) handlers.Deps {
		fmt.Fprintf(e.stdout, "UI development server on %s/, pages from the core at %s\n", base, core)
		return handlers.Deps{Log: log, Core: core, Reviewer: defaultReviewer(e.ctx), Resume: agents.ResumeCommand}
	})
}
