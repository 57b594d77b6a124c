package handlers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// toolRow is a row of Other tools: a tool, its calls and how many failed.
type toolRow struct {
	tool          string
	calls, failed int
}

// wantTools counts the tools of a batch's steps of type other, most
// called first, then by name.
func wantTools(b obj) []toolRow {
	at := map[string]int{}
	var rows []toolRow
	for _, st := range b["steps"].(arr) {
		st := st.(obj)
		if st["type"] != "other" {
			continue
		}
		name := st["payload"].(obj)["tool_name"].(string)
		i, ok := at[name]
		if !ok {
			i, at[name] = len(rows), len(rows)
			rows = append(rows, toolRow{tool: name})
		}
		rows[i].calls++
		if st["outcome"] == "failed" {
			rows[i].failed++
		}
	}
	slices.SortFunc(rows, func(a, b toolRow) int { return cmp.Or(b.calls-a.calls, strings.Compare(a.tool, b.tool)) })
	return rows
}

// withTools adds to b a step of type other for each call, numbered after
// its last step.
func withTools(b obj, calls ...[2]string) obj {
	steps := b["steps"].(arr)
	last := steps[len(steps)-1].(obj)
	for i, c := range calls {
		st := obj{}
		for k, v := range last {
			st[k] = v
		}
		seq := len(steps) + 1
		st["id"], st["seq"], st["outcome"] = fmt.Sprintf("%s-tool%d", b["session"].(obj)["id"], i), seq, c[1]
		st["payload"] = obj{"tool_name": c[0], "raw": obj{"input": obj{"n": i}}}
		steps = append(steps, st)
	}
	b["steps"] = steps
	return b
}

// shownTools reads the rows of the Other tools section of a page.
func shownTools(t *testing.T, page []byte) []toolRow {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var rows []toolRow
	doc.Find(`[data-testid="tools"] tbody tr`).Each(func(_ int, tr *goquery.Selection) {
		num := func(label string) int {
			n, err := strconv.Atoi(strings.ReplaceAll(tr.Find(`[data-label="`+label+`"]`).Text(), ",", ""))
			if err != nil {
				t.Errorf("Other tools: %s %q is not a number", label, tr.Find(`[data-label="`+label+`"]`).Text())
			}
			return n
		}
		rows = append(rows, toolRow{tool: tr.Find("code").Text(), calls: num("Calls"), failed: num("Failed")})
	})
	return rows
}

// The session page, its HTML report and its Markdown report list the
// tools of the steps of type other, the step counts' "others": each tool
// with its calls and failures, most called first, as the pushed steps
// count them.
func TestOtherTools(t *testing.T) {
	s := newTestService(t)
	b := withTools(newBatch("tools"), [2]string{"TodoWrite", "ok"}, [2]string{"Task", "failed"},
		[2]string{"mcp__github__get_issue", "ok"}, [2]string{"Task", "ok"}, [2]string{"TodoWrite", "ok"}, [2]string{"TodoWrite", "failed"})
	s.mustPush(b, http.StatusCreated)
	want := wantTools(b)
	if len(want) != 4 || want[0].calls != 3 {
		t.Fatalf("the batch's tools %v: the test wants four, one called three times", want)
	}

	page := s.get("/session?id=tools").Body.Bytes()
	if got := shownTools(t, page); !slices.Equal(got, want) {
		t.Errorf("the session page's Other tools = %v; want %v", got, want)
	}
	if !bytes.Contains(page, []byte(`<a href="#tools">Other tools</a>`)) {
		t.Error("the session page's sections do not link to Other tools")
	}
	// Each tool links to a search of the steps that called it: tool:, the
	// name whole.
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	links := doc.Find(`[data-testid="tools"] a[data-testid="tool-steps"]`)
	if links.Length() != len(want) {
		t.Fatalf("Other tools has %d links; want one a tool, %d", links.Length(), len(want))
	}
	links.Each(func(i int, a *goquery.Selection) {
		href := a.AttrOr("href", "")
		var r struct{ Hits []struct{ Seq int64 } }
		if err := json.Unmarshal(s.get("/api"+href).Body.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", href, err)
		}
		if len(r.Hits) != want[i].calls {
			t.Errorf("the link of %s (%s) finds %d steps; want its %d calls", want[i].tool, href, len(r.Hits), want[i].calls)
		}
		// Its count of failed calls links to them, where there are some.
		failed := a.Closest("tr").Find(`a[data-testid="tool-failed-steps"]`)
		if want[i].failed == 0 {
			if failed.Length() != 0 {
				t.Errorf("%s has no failed call; its count links to %q", want[i].tool, failed.AttrOr("href", ""))
			}
			return
		}
		var f struct{ Hits []store.SearchHit }
		json.Unmarshal(s.get("/api"+failed.AttrOr("href", "")).Body.Bytes(), &f)
		if len(f.Hits) != want[i].failed || slices.ContainsFunc(f.Hits, func(h store.SearchHit) bool { return h.Status != "failed" }) {
			t.Errorf("the failed count of %s links to %q, finding %+v; want its %d failed calls", want[i].tool, failed.AttrOr("href", ""), f.Hits, want[i].failed)
		}
	})
	if got := shownTools(t, s.get("/api/sessions/tools/export").Body.Bytes()); !slices.Equal(got, want) {
		t.Errorf("the report's Other tools = %v; want %v", got, want)
	}
	md := s.get("/api/sessions/tools/export?format=md").Body.String()
	for _, r := range want {
		if row := fmt.Sprintf("| `%s` | %d | %d |", r.tool, r.calls, r.failed); !strings.Contains(md, row) {
			t.Errorf("the Markdown report has no row %q", row)
		}
	}
	if !strings.Contains(md, "## Other tools") {
		t.Error("the Markdown report has no Other tools")
	}

	// The summary counts the steps by type, as the list does, its others
	// linked to Other tools; so does the Markdown report's.
	byType := map[string]int{}
	for _, st := range b["steps"].(arr) {
		byType[st.(obj)["type"].(string)]++
	}
	var counts []string
	for _, typ := range store.StepTypes {
		if n := byType[typ]; n > 0 {
			counts = append(counts, views.Plural(n, typ))
		}
	}
	summary := doc.Find(`[data-testid="summary-step-counts"]`)
	if got, want := strings.Join(strings.Fields(summary.Text()), " "), strings.Join(counts, " · "); got != want {
		t.Errorf("the summary's steps by type = %q; want %q", got, want)
	}
	if href := summary.Find("a").AttrOr("href", ""); href != "#tools" {
		t.Errorf("the summary's others link to %q; want #tools", href)
	}
	if want := "(" + strings.Join(counts, ", ") + ")"; !strings.Contains(md, want) {
		t.Errorf("the Markdown report's summary lacks the steps by type %q", want)
	}

	// The list's count of the session's other steps links to them.
	list, err := goquery.NewDocumentFromReader(bytes.NewReader(s.get("/").Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, r := range want {
		calls += r.calls
	}
	link := list.Find(`[data-session-id="tools"] [data-testid="count-tools"]`)
	if got, href := strings.TrimSpace(link.Text()), link.AttrOr("href", ""); got != fmt.Sprintf("%d others", calls) || href != "/session?id=tools#tools" {
		t.Errorf("the list's count of others = %q linking to %q; want %q linking to the session's Other tools", got, href, fmt.Sprintf("%d others", calls))
	}

	// A session without any: the section says so.
	b = newBatch("none")
	b["steps"] = b["steps"].(arr)[:4] // no step of type other
	s.mustPush(b, http.StatusCreated)
	doc, err = goquery.NewDocumentFromReader(bytes.NewReader(s.get("/session?id=none").Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(doc.Find(`[data-testid="tools"] p`).Text()); got != "None." {
		t.Errorf("Other tools of a session without any = %q; want None.", got)
	}
}

// A session of more distinct tools than Other tools shows lists the
// maxReportRows most called and counts the rest; the JSON report lists
// them all.
func TestManyOtherToolsStayBounded(t *testing.T) {
	s := newTestService(t)
	var calls [][2]string
	for i := range maxReportRows + 70 {
		calls = append(calls, [2]string{fmt.Sprintf("mcp__server__tool_%04d", i), "ok"})
	}
	b := withTools(newBatch("many"), calls...)
	s.mustPush(b, http.StatusCreated)
	want := wantTools(b)
	got := shownTools(t, s.get("/session?id=many").Body.Bytes())
	if !slices.Equal(got, want[:maxReportRows]) {
		t.Errorf("Other tools shows %d rows, the first %v; want the %d most called, the first %v", len(got), got[:min(1, len(got))], maxReportRows, want[0])
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(s.get("/session?id=many").Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	more := strings.TrimSpace(doc.Find(`[data-testid="tools-more"]`).Text())
	if w := fmt.Sprintf("… and %s more tools", views.Number(int64(len(want)-maxReportRows))); !strings.HasPrefix(more, w) {
		t.Errorf("Other tools says %q; want it to begin %q", more, w)
	}
	var d struct {
		Report struct {
			Tools []struct{ Tool string }
		}
	}
	if err := json.Unmarshal(s.get("/api/sessions/many").Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Report.Tools) != len(want) {
		t.Errorf("the JSON report lists %d tools; want %d", len(d.Report.Tools), len(want))
	}
}

// Each command of Commands run links to its first run, and its count of
// failed runs to the first of them, on the session's page and in its
// HTML report, where those steps are in the file.
func TestCommandsLinkToFirstRun(t *testing.T) {
	s := newTestService(t)
	b := newBatch("cmds")
	steps := b["steps"].(arr)
	for i, line := range []string{"make", "go test ./...", "make lint", "make", "make", "bd ready"} {
		st := obj{}
		for k, v := range steps[1].(obj) { // the batch's command
			st[k] = v
		}
		st["id"], st["seq"] = fmt.Sprintf("cmds-run%d", i), len(steps)+1
		st["payload"] = obj{"command": line, "exit_code": i % 4}
		if i%4 != 0 {
			st["outcome"] = "failed"
		}
		if line == "bd ready" {
			st["payload"], st["outcome"] = obj{"command": line}, "ok" // no exit code recorded
		}
		steps = append(steps, st)
	}
	b["steps"] = steps
	s.mustPush(b, http.StatusCreated)
	// Each line's first run and first failed run, from the batch.
	first, firstFailed := map[string]string{}, map[string]string{}
	var lines []string
	for _, st := range steps {
		st := st.(obj)
		if st["type"] != "command" {
			continue
		}
		line, at := st["payload"].(obj)["command"].(string), fmt.Sprintf("#step-%v", st["seq"])
		if _, ok := first[line]; !ok {
			first[line] = at
			lines = append(lines, line)
		}
		if _, ok := firstFailed[line]; !ok && st["outcome"] == "failed" {
			firstFailed[line] = at
		}
	}
	if firstFailed["make"] == "" || firstFailed["make"] == first["make"] {
		t.Fatalf("the batch's make fails first at %q, its first run %q: the test wants a later run", firstFailed["make"], first["make"])
	}
	for _, route := range []string{"/session?id=cmds", "/api/sessions/cmds/export"} {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(s.get(route).Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		links := doc.Find(`[data-testid="commands"] a[data-testid="command-step"]`)
		if links.Length() != len(lines) {
			t.Fatalf("%s: Commands run has %d links; want one a distinct command, %d", route, links.Length(), len(lines))
		}
		links.Each(func(i int, a *goquery.Selection) {
			href := a.AttrOr("href", "")
			if a.Text() != lines[i] || href != first[lines[i]] {
				t.Errorf("%s: command %q links to %q; want %q linking to its first run, %s", route, a.Text(), href, lines[i], first[lines[i]])
			}
			if doc.Find(href).Length() != 1 {
				t.Errorf("%s: the link of %q goes to %s, which the page does not hold", route, lines[i], href)
			}
			if codes := a.Closest("tr").Find(`[data-label="Exit codes"]`).Text(); lines[i] == "bd ready" && codes != "not recorded" {
				t.Errorf("%s: %q, run without an exit code, shows exit codes %q; want not recorded", route, lines[i], codes)
			}
			failed := a.Closest("tr").Find(`a[data-testid="command-failed-step"]`)
			if got := failed.AttrOr("href", ""); got != firstFailed[lines[i]] || firstFailed[lines[i]] != "" && doc.Find(got).Length() != 1 {
				t.Errorf("%s: the failed runs of %q link to %q; want its first failed run %q, on the page", route, lines[i], got, firstFailed[lines[i]])
			}
		})
	}
	// The Markdown report says so too, where its cell was empty.
	if md, row := s.get("/api/sessions/cmds/export?format=md").Body.String(), "| `bd ready` | 1 | 0 | not recorded |"; !strings.Contains(md, row) {
		t.Errorf("the Markdown report has no row %q", row)
	}
}

// A command run more than once links its count of runs to a search of
// them (command:, the line whole), and more than one failed run its count
// of failed runs to a search of those; a line the query language cannot
// say (a quote in it) keeps its first runs' links, and the HTML report,
// with no search to link to, has none.
func TestCommandsLinkToTheirRuns(t *testing.T) {
	s := newTestService(t)
	b := newBatch("runs")
	steps := b["steps"].(arr)
	for i, run := range []struct {
		line   string
		failed bool
	}{
		{"make", false}, {"go test  ./...\t-v", true}, {"make", true}, {`git commit -m "x"`, true},
		{"make", true}, {"go test  ./...\t-v", true}, {`git commit -m "x"`, true}, {"make", false},
	} {
		st := obj{}
		for k, v := range steps[1].(obj) { // the batch's command
			st[k] = v
		}
		st["id"], st["seq"] = fmt.Sprintf("runs-run%d", i), len(steps)+1
		st["payload"] = obj{"command": run.line, "exit_code": 0}
		if run.failed {
			st["payload"].(obj)["exit_code"], st["outcome"] = 1, "failed"
		}
		steps = append(steps, st)
	}
	b["steps"] = steps
	s.mustPush(b, http.StatusCreated)
	runs, failed := map[string][]int64{}, map[string][]int64{}
	for _, st := range steps {
		st := st.(obj)
		if st["type"] != "command" {
			continue
		}
		line, seq := st["payload"].(obj)["command"].(string), int64(st["seq"].(int))
		runs[line] = append(runs[line], seq)
		if st["outcome"] == "failed" {
			failed[line] = append(failed[line], seq)
		}
	}
	found := func(href string) []int64 {
		var r struct{ Hits []store.SearchHit }
		if err := json.Unmarshal(s.get("/api"+href).Body.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", href, err)
		}
		var seqs []int64
		for _, h := range r.Hits {
			seqs = append(seqs, h.Seq)
		}
		slices.Sort(seqs)
		return seqs
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(s.get("/session?id=runs").Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rows := doc.Find(`[data-testid="commands"] tbody tr`)
	if rows.Length() != len(runs) {
		t.Fatalf("Commands run has %d rows; want %d", rows.Length(), len(runs))
	}
	searched := 0
	rows.Each(func(_ int, tr *goquery.Selection) {
		line := tr.Find(`[data-testid="command-step"]`).Text()
		sayable := !strings.Contains(line, `"`)
		runsLink, failedLink := tr.Find(`a[data-testid="command-runs"]`), tr.Find(`a[data-testid="command-failed-runs"]`)
		if want := len(runs[line]) > 1 && sayable; (runsLink.Length() == 1) != want {
			t.Errorf("%q, run %d times: a link of its runs %v; want %v", line, len(runs[line]), runsLink.Length() == 1, want)
		} else if want {
			searched++
			if got := found(runsLink.AttrOr("href", "")); !slices.Equal(got, runs[line]) {
				t.Errorf("%q: its runs link to %q, finding steps %v; want %v", line, runsLink.AttrOr("href", ""), got, runs[line])
			}
		}
		if want := len(failed[line]) > 1 && sayable; (failedLink.Length() == 1) != want {
			t.Errorf("%q, failed %d times: a link of its failed runs %v; want %v", line, len(failed[line]), failedLink.Length() == 1, want)
		} else if want {
			if got := found(failedLink.AttrOr("href", "")); !slices.Equal(got, failed[line]) {
				t.Errorf("%q: its failed runs link to %q, finding steps %v; want %v", line, failedLink.AttrOr("href", ""), got, failed[line])
			}
		} else if len(failed[line]) > 0 {
			if got, want := tr.Find(`a[data-testid="command-failed-step"]`).AttrOr("href", ""), fmt.Sprintf("#step-%d", failed[line][0]); got != want {
				t.Errorf("%q: its failed count links to %q; want its first failed run %q", line, got, want)
			}
		}
	})
	if searched < 2 {
		t.Errorf("%d commands link to their runs; the batch has two (make, go test)", searched)
	}
	report := s.get("/api/sessions/runs/export").Body.String()
	if strings.Contains(report, `data-testid="command-runs"`) || strings.Contains(report, `data-testid="command-failed-runs"`) {
		t.Error("the HTML report links to a search of a command's runs")
	}
}
