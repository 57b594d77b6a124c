package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// geminiDocs is a Gemini CLI session: thoughts, a read, an edit, a command
// that fails and is fixed, and a cancelled call. Gemini CLI records no
// version and no cost, only tokens.
func geminiDocs(now time.Time) *store.Batch {
	d := newDemoSession("demo-gemini-5d21", "gemini-cli", "unknown", "/home/dev/src/weather-cli", now.Add(-98*time.Hour), nil)
	d.prompt("", "The README says `weather --days` but the flag is `--forecast-days`. Fix the docs and check the examples still run.")
	d.think("Checking the CLI flags\nThe flag is defined in cmd/root.go; the README examples should use its real name.")
	d.read("cmd/root.go", 1, 80)
	d.edit("README.md", "weather --days 3 Berlin", "weather --forecast-days 3 Berlin")
	d.run("./scripts/check-readme-examples.sh", "running 4 examples\nexample 3: unknown flag: --units-metric\n", 1)
	d.edit("README.md", "--units-metric", "--units metric")
	d.run("./scripts/check-readme-examples.sh", "running 4 examples\nall examples passed\n", 0)
	d.run("git commit -am 'docs: use the real flag names'", "", 0, rejected)
	d.say("The README now uses `--forecast-days` and `--units metric`, and all four examples run. I did not commit: you cancelled it.")
	return d.b
}
