package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/views"
)

// TestToolRenderings: the common tools of real sample records show for
// what they are (a todo list as a checklist, a web fetch as its URL and
// prompt, a grep as its pattern and matches, a Task as its description
// and subagent type), with the recorded input one click away.
func TestToolRenderings(t *testing.T) {
	s := newTestService(t)
	s.mustPush(showcaseSession(t, showcaseID, time.Date(2026, 2, 11, 20, 56, 19, 0, time.UTC)), http.StatusCreated)
	input := func(raw obj) map[string]any {
		var in map[string]any
		if err := json.Unmarshal(raw["input"].(json.RawMessage), &in); err != nil {
			t.Fatal(err)
		}
		return in
	}
	step := func(seq int) *goquery.Selection {
		t.Helper()
		rec := s.get(fmt.Sprintf("/session/step?id=%s&seq=%d", showcaseID, seq))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET step %d = %d", seq, rec.Code)
		}
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Find(`details[data-testid="raw-input"]:not([open]) [data-testid="block-Recorded"]`).Length() != 1 {
			t.Errorf("step %d has no recorded input behind a closed control", seq)
		}
		return doc.Selection
	}
	field := func(sel *goquery.Selection, label string) string {
		return sel.Find(`[data-testid="tool-field-` + label + `"]`).Text()
	}

	todo := input(sampleTool(t, "agentlogs_todos.jsonl", "TodoWrite"))
	var wantTodos, gotTodos []string
	for _, it := range todo["todos"].([]any) {
		m := it.(map[string]any)
		wantTodos = append(wantTodos, m["status"].(string)+" "+m["content"].(string))
	}
	step(2).Find(`[data-testid="tool-todo"] li`).Each(func(_ int, li *goquery.Selection) {
		status, _ := li.Attr("data-status")
		text := strings.TrimSpace(strings.TrimPrefix(strings.Join(strings.Fields(li.Text()), " "), status+":"))
		gotTodos = append(gotTodos, status+" "+text)
	})
	if fmt.Sprint(gotTodos) != fmt.Sprint(wantTodos) {
		t.Errorf("todo checklist = %q; want %q", gotTodos, wantTodos)
	}

	grep := sampleOpencodeTool(t, "agentlogs_all_tools_export.json", "grep")
	gin := grep["input"].(map[string]any)
	g := step(3).Find(`[data-testid="tool-grep"]`)
	for label, want := range map[string]any{"Pattern": gin["pattern"], "In": gin["path"], "Files": gin["include"]} {
		if got := field(g, label); got != want {
			t.Errorf("grep %s = %q; want %q", label, got, want)
		}
	}
	if got := g.Find(`[data-testid="block-Matches"] pre`).Text(); got != grep["result"] {
		t.Errorf("grep matches = %q; want the tool's output %q", got, grep["result"])
	}

	fetch := input(sampleTool(t, "spotter/tool_heavy.jsonl", "WebFetch"))
	f := step(7).Find(`[data-testid="tool-fetch"]`)
	if got := field(f, "URL"); got != fetch["url"] {
		t.Errorf("web fetch URL = %q; want %q", got, fetch["url"])
	}
	if got := field(f, "Prompt"); got != fetch["prompt"] {
		t.Errorf("web fetch prompt = %q; want %q", got, fetch["prompt"])
	}
	if f.Find(`[data-testid="block-Answer"] [data-testid="markdown"] h4`).Length() == 0 {
		t.Error("web fetch answer is not rendered as Markdown")
	}

	task := input(sampleTool(t, "spotter/258c7280_excerpt_lines_1472-1486_task_spawn.jsonl", "Task"))
	k := step(8).Find(`[data-testid="tool-task"]`)
	for label, want := range map[string]any{"Description": task["description"], "Subagent": task["subagent_type"], "Prompt": task["prompt"]} {
		if got := field(k, label); got != want {
			t.Errorf("Task %s = %q; want %q", label, got, want)
		}
	}
	if k.Find(`[data-testid="block-Report"] [data-testid="markdown"]`).Length() == 0 {
		t.Error("Task report is not rendered as Markdown")
	}

	page, err := goquery.NewDocumentFromReader(s.get("/session?id=" + showcaseID).Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[int]string{
		2: fmt.Sprintf("TodoWrite %d todos, 0 done", len(wantTodos)),
		3: fmt.Sprintf("grep %s %s", gin["pattern"], gin["path"]),
		7: fmt.Sprintf("WebFetch %s", fetch["url"]),
		8: fmt.Sprintf("Task %s (%s)", task["description"], task["subagent_type"]),
	}
	for seq, want := range lines {
		if got := page.Find(fmt.Sprintf(`#step-%d .line`, seq)).Text(); got != want {
			t.Errorf("step %d line = %q; want %q", seq, got, want)
		}
	}
}

// TestTodoReadOfOpencode: opencode's todoread answers with its todo list
// as JSON text; the real export's call shows it as a checklist, and its
// timeline line counts it, as a todowrite's does. The expected todos are
// read from the export by the test.
func TestTodoReadOfOpencode(t *testing.T) {
	const export = "../adapters/opencode/testdata/agentlogs_all_tools_export.json"
	s := newTestService(t)
	if _, err := (&adapters.Importer{Store: s.store}).Run(context.Background(), opencode.Agent, []string{export}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Info     struct{ ID string }
		Messages []struct {
			Parts []struct {
				Tool  string
				State struct{ Output string }
			}
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var want []string
	done := 0
	for _, m := range file.Messages {
		for _, p := range m.Parts {
			if p.Tool != "todoread" {
				continue
			}
			var items []struct{ Content, Status string }
			if err := json.Unmarshal([]byte(p.State.Output), &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				want = append(want, it.Status+" "+it.Content)
				if it.Status == "completed" {
					done++
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the export has no todoread with todos")
	}
	page := mustDocument(t, s, "/session?id="+file.Info.ID)
	step := page.Find(`details.step`).FilterFunction(func(_ int, d *goquery.Selection) bool {
		return strings.HasPrefix(strings.TrimSpace(d.Find(".line").First().Text()), "todoread")
	})
	if step.Length() != 1 {
		t.Fatalf("%d todoread steps on the page; want 1", step.Length())
	}
	if line, wantLine := strings.TrimSpace(step.Find(".line").First().Text()), fmt.Sprintf("todoread %s, %d done", views.Plural(len(want), "todo"), done); line != wantLine {
		t.Errorf("timeline line = %q; want %q", line, wantLine)
	}
	seq, _ := step.Attr("data-seq")
	doc := mustDocument(t, s, fmt.Sprintf("/session/step?id=%s&seq=%s", file.Info.ID, seq))
	var got []string
	doc.Find(`[data-testid="tool-todo"] li`).Each(func(_ int, li *goquery.Selection) {
		status, _ := li.Attr("data-status")
		got = append(got, status+" "+strings.TrimSpace(strings.TrimPrefix(strings.Join(strings.Fields(li.Text()), " "), status+":")))
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("todoread checklist = %q; want %q", got, want)
	}
}
