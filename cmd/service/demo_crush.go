package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// crushMigration is a Crush session: a search, edits of one file (a
// multiedit), a command the user denied and one that passed. Crush reports
// a cost per session and no token totals, so its metrics hold the cost
// alone, and records no permission decision but a denial.
func crushMigration(now time.Time) *store.Batch {
	d := newDemoSession("demo-crush-7a1f", "crush", "unknown", "/home/dev/src/inventory", now.Add(-52*time.Hour),
		&store.Metrics{CostUSD: 0.4127})
	d.b.Session.Agent.FormatVersion = "20250812000000"
	d.prompt("", "Rename the column qty to quantity in the items table and everywhere the code reads it.")
	d.tool("grep", map[string]any{"input": map[string]any{"pattern": `\bqty\b`, "path": "/home/dev/src/inventory", "include": "*.go"},
		"result": "Found 3 matches\n/home/dev/src/inventory/store/items.go:\n  Line 41: SELECT id, name, qty FROM items\n  Line 77: UPDATE items SET qty = ? WHERE id = ?\n/home/dev/src/inventory/api/items.go:\n  Line 23: Qty int `json:\"qty\"`"})
	d.read("store/items.go", 30, 90)
	d.write("migrations/0007_rename_qty.sql", "ALTER TABLE items RENAME COLUMN qty TO quantity;\n")
	d.edit("store/items.go", "SELECT id, name, qty FROM items", "SELECT id, name, quantity FROM items")
	d.edit("store/items.go", "UPDATE items SET qty = ? WHERE id = ?", "UPDATE items SET quantity = ? WHERE id = ?")
	denied := "psql inventory -f migrations/0007_rename_qty.sql"
	d.step(store.TypeCommand, "rejected", "not_run", store.Payload{Command: &denied}, func(s *store.Step) {
		s.Error = &store.StepError{Type: "rejected", Message: "Permission denied"}
	})
	d.say("I will not run the migration against your database; the tests use their own.")
	d.run("go test ./...", "ok  \tinventory/api\t0.21s\nok  \tinventory/store\t0.87s\n", 0)
	d.say("The column is renamed in a new migration and in both queries. The API keeps its JSON name `qty`, so clients do not change.")
	for i := range d.b.Steps {
		if s := &d.b.Steps[i]; s.Decision == "accepted" || s.Decision == "auto" {
			s.Decision = "unknown" // Crush records a denial only
		}
	}
	return d.b
}
