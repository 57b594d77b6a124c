package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// copilotResearch is a GitHub Copilot CLI session in autopilot mode: a
// read-only investigation with views, a search and a failed command.
// Copilot reports tokens and premium requests but no cost, so it has no
// metrics.
func copilotResearch(now time.Time) *store.Batch {
	d := newDemoSession("demo-copilot-5e3a", "copilot-cli", "1.0.34", "/home/dev/src/log-shipper", now.Add(-30*time.Hour), nil)
	d.b.Session.Workspace.Repo = "example/log-shipper"
	d.prompt("autopilot", "Find out why the shipper drops lines when the file is rotated. Do not change any code.")
	d.think("Rotation is handled in the tailer; I should read it and check how it reopens the file.")
	d.tool("report_intent", map[string]any{"input": map[string]any{"intent": "Investigating log rotation"}, "output": map[string]any{"content": "Intent logged"}})
	d.read("internal/tail/tailer.go", 1, 180)
	d.run("go test ./internal/tail/ -run TestRotate", "--- FAIL: TestRotate (0.41s)\n    tailer_test.go:58: got 97 lines, want 100\nFAIL\n", 1)
	d.tool("web_search", map[string]any{"input": map[string]any{"query": "inotify IN_MOVE_SELF reopen file lost lines"}})
	d.say("The tailer reopens the file on IN_MOVE_SELF before it has read to the end of the old one, so the lines written just before rotation are lost. Reading the old file to EOF before reopening fixes it.")
	d.b.Session.EndedAt = d.tick(40)
	return d.b
}
