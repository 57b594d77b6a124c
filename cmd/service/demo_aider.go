package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// aiderTypo is an Aider run: an edit whose SEARCH block did not match and
// the retry that did, then Aider's automatic commit. Aider logs no time
// but the run's start and reports cost per request only, so the session
// has no metrics.
func aiderTypo(now time.Time) *store.Batch {
	d := newDemoSession("demo-aider-9e0b", "aider", "0.86.1", "/home/dev/src/site-gen", now.Add(-100*time.Hour), nil)
	d.prompt("", "The 404 page says 'Page not fonud'. Fix it.")
	d.say("The typo is in templates/404.html.")
	d.edit("templates/404.html", "<h1>Page not fonud</h1>", "<h1>Page not found</h1>", failed("SearchReplaceNoExactMatch", "SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in templates/404.html"))
	d.edit("templates/404.html", "  <h1>Page not fonud</h1>", "  <h1>Page not found</h1>")
	d.tool("git commit", map[string]any{"commit": "3f9c2d1", "message": "fix: Correct typo on the 404 page"})
	for i := range d.b.Steps {
		if s := &d.b.Steps[i]; s.Decision == "accepted" {
			s.Decision = "auto" // Aider applies edits without asking
		}
	}
	d.b.Session.EndedAt = d.tick(5)
	return d.b
}
