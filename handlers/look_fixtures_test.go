package handlers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Real transcripts the tool renderings are built from.
const (
	claudeSamples = "../adapters/claudecode/testdata"
	otherSamples  = "testdata"
)

// sampleTool is the recorded value of the first call of tool name in a
// Claude Code transcript, as the adapter stores it: {"input", "result"},
// the result being the line's toolUseResult.
func sampleTool(t testing.TB, file, name string) obj {
	t.Helper()
	f, err := os.Open(filepath.Join(claudeSamples, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var id string
	var input json.RawMessage
	for sc.Scan() {
		var rec struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
		}
		if json.Unmarshal(rec.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch {
			case id == "" && b.Type == "tool_use" && b.Name == name:
				id, input = b.ID, b.Input
			case id != "" && b.Type == "tool_result" && b.ToolUseID == id:
				return obj{"input": input, "result": rec.ToolUseResult}
			}
		}
	}
	t.Fatalf("no %s call with a result in %s", name, file)
	return nil
}

// sampleOpencodeTool is the recorded value of the first call of tool name
// in an opencode export: {"input", "result"}, the result its output.
func sampleOpencodeTool(t testing.TB, file, name string) obj {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(otherSamples, file))
	if err != nil {
		t.Fatal(err)
	}
	var found obj
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["tool"] == name && found == nil {
				if st, ok := v["state"].(map[string]any); ok {
					found = obj{"input": st["input"], "result": st["output"]}
					return
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if found == nil {
		t.Fatalf("no %s call in %s", name, file)
	}
	return found
}

// markdownReply is an assistant message with the Markdown agents write,
// agent-supplied HTML, a remote image and a link.
const markdownReply = "## Fixed\n\nThe parser now **returns** its error; see `parse.go` and [the issue](https://example.com/issues/1).\n\n" +
	"- kept the `x := 1` line\n- returned `err`\n\n```go\nfunc parse() error {\n\treturn err // was nil\n}\n```\n\n" +
	"<script>window.agentRan = true</script>\n\n<img src=\"https://example.com/x.png\" onerror=\"window.agentRan = true\">\n\n" +
	"![a chart](https://example.com/chart.png)\n"

// showcaseSession is a session with every kind of step a reviewer reads:
// Markdown messages, a highlighted diff, and the common tools, built from
// real sample records.
func showcaseSession(t testing.TB, sid string, started time.Time) obj {
	b := sessionBatch(sid, "claude-code", "2.0.14", started, "/home/dev/parser-kit", metricsOf(3.42, 41, 1284310, 20417))
	b["session"].(obj)["workspace"].(obj)["repo"] = "github.com/dev/parser-kit"
	t1, t2 := started.Add(2*time.Second), started.Add(6*time.Minute)
	b["turns"] = arr{turnRec(sid, 1, t1, "default"), turnRec(sid, 2, t2, "acceptEdits")}
	at := func(base time.Time, s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	b["steps"] = arr{
		stepRec(sid, 1, 1, t1, "message", userPrompt("The parser swallows errors in `parse()`. Fix it, and add a test for the **empty input** case.")),
		stepRec(sid, 2, 1, at(t1, 4), "other", obj{"tool_name": "TodoWrite", "raw": sampleTool(t, "agentlogs_todos.jsonl", "TodoWrite")}),
		stepRec(sid, 3, 1, at(t1, 9), "other", obj{"tool_name": "grep", "raw": sampleOpencodeTool(t, "agentlogs_all_tools_export.json", "grep")}),
		withFields(stepRec(sid, 4, 1, at(t1, 15), "read", obj{"path": "/home/dev/parser-kit/parse.go", "range": arr{1, 80}}), "decision", "auto"),
		stepRec(sid, 5, 1, at(t1, 31), "edit", obj{
			"path": "/home/dev/parser-kit/parse.go", "is_full_write": false,
			"old_string": "func parse(in string) error {\n\tif in == \"\" {\n\t\treturn nil\n\t}\n\t// keep going\n\treturn nil\n}\n",
			"new_string": "func parse(in string) error {\n\tif in == \"\" {\n\t\treturn ErrEmpty\n\t}\n\t// keep going\n\treturn err\n}\n",
		}),
		withFields(stepRec(sid, 6, 1, at(t1, 48), "command", obj{
			"command": "go test ./...", "cwd": "/home/dev/parser-kit", "exit_code": 1, "stderr": "",
			// in colour, as a test runner prints it for a terminal
			"stdout": "--- \x1b[1;31mFAIL\x1b[0m: TestEmpty (0.00s)\n    parse_test.go:12: got \x1b[2m<nil>\x1b[22m; want \x1b[32mErrEmpty\x1b[39m\n\x1b[41;1m FAIL \x1b[0m",
		}), "outcome", "failed", "error", obj{"type": "exit_status", "message": "exit status 1"},
			"flags", arr{obj{"kind": "failed", "severity": "warn", "reason": "the tests failed"}}),
		stepRec(sid, 7, 1, at(t1, 70), "other", obj{"tool_name": "WebFetch", "raw": sampleTool(t, "spotter/tool_heavy.jsonl", "WebFetch")}),
		stepRec(sid, 8, 1, at(t1, 95), "other", obj{"tool_name": "Task", "raw": sampleTool(t, "spotter/258c7280_excerpt_lines_1472-1486_task_spawn.jsonl", "Task")}),
		stepRec(sid, 9, 1, at(t1, 160), "message", obj{"role": "assistant", "text": markdownReply}),
		stepRec(sid, 10, 2, t2, "message", userPrompt("Run the tests again.")),
		stepRec(sid, 11, 2, at(t2, 3), "command", obj{"command": "go test ./...", "exit_code": 0, "stdout": "ok  \tgithub.com/dev/parser-kit\t0.012s\nconfig: api_key = \"zq8Kf3LmN0pR7sT2vW5xY9aB\""}),
		stepRec(sid, 12, 2, at(t2, 9), "message", obj{"role": "assistant", "text": "All tests pass. The change is in `parse.go`:\n\n1. `parse(\"\")` returns `ErrEmpty`\n2. other errors are returned, not dropped"}),
	}
	return b
}

// manySessions pushes n small sessions of several agents, one a minute
// back from now, with prompts of the lengths people write.
func manySessions(s *testService, n int, now time.Time) {
	prompts := []string{
		"Fix the flaky test in the store package",
		"Add a dark theme to the review app and make the list fit on a phone without scrolling sideways",
		"Why does the importer skip the second segment?",
		"Rename Batch to Records everywhere",
		"Write the README section on exports",
		"Explain the change stream",
	}
	agents := [][2]string{{"claude-code", "2.0.14"}, {"codex", "0.46.0"}, {"cline", "3.32.1"}, {"gemini-cli", "0.9.0"}}
	for i := range n {
		sid := fmt.Sprintf("s%03d-%s", i, strings.Repeat("x", 8))
		a := agents[i%len(agents)]
		started := now.Add(-time.Duration(i*37+5) * time.Minute)
		var m obj
		if i%3 != 2 {
			m = metricsOf(float64(i%7)*0.37+0.05, 3+i, 12000*i+310, 900*i)
		}
		b := sessionBatch(sid, a[0], a[1], started, fmt.Sprintf("/home/dev/project-%c", 'a'+i%5), m)
		b["turns"] = arr{turnRec(sid, 1, started, "")}
		steps := arr{stepRec(sid, 1, 1, started, "message", userPrompt(prompts[i%len(prompts)]))}
		for j := range i % 4 {
			steps = append(steps, stepRec(sid, 2+j, 1, started.Add(time.Duration(j+1)*time.Second), "command", obj{"command": "go test ./...", "exit_code": 0}))
		}
		if i%5 == 1 {
			steps = append(steps, withFields(stepRec(sid, 10, 1, started.Add(time.Minute), "command", obj{"command": "make", "exit_code": 2}),
				"outcome", "failed", "error", obj{"type": "exit_status", "message": "exit status 2"},
				"flags", arr{obj{"kind": "failed", "severity": "warn", "reason": "make failed"}}))
		}
		b["steps"] = steps
		s.mustPush(b, 201)
	}
}
