package main

import (
	"time"

	"github.com/agentreview/service/store"
)

// qwenFix is a Qwen Code session in auto-edit mode: a failing test read,
// fixed and run again. Qwen Code reports tokens per response but no cost,
// so it has no metrics.
func qwenFix(now time.Time) *store.Batch {
	d := newDemoSession("demo-qwen-3c9d", "qwen-code", "0.18.1", "/home/dev/src/csv-tools", now.Add(-75*time.Hour), nil)
	d.prompt("auto-edit", "TestSplitQuoted fails since the last change. Fix the parser, not the test.")
	d.run("go test ./parse/ -run TestSplitQuoted", "--- FAIL: TestSplitQuoted (0.00s)\n    split_test.go:31: got [\"a\" \"b,c\"], want [\"a\" \"b,c\" \"\"]\nFAIL\n", 1)
	d.read("parse/split.go", 1, 60)
	d.think("A trailing comma ends the line with an empty field, but the loop stops before adding it.")
	d.edit("parse/split.go", "\treturn fields\n", "\tif strings.HasSuffix(line, \",\") {\n\t\tfields = append(fields, \"\")\n\t}\n\treturn fields\n")
	d.run("go test ./parse/", "ok  \tcsv-tools/parse\t0.02s\n", 0)
	d.say("A line that ends with a comma now keeps its empty last field; the parse tests pass.")
	d.b.Session.EndedAt = d.tick(15)
	return d.b
}
