package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// TestBrowser drives the review app in headless Chromium against a real
// server, one subtest per feature of the app (spec section 1). The subtests
// share one browser, each in a tab of its own.
func TestBrowser(t *testing.T) {
	b := startBrowser(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *browser)
	}{
		{"List", browserList},
		{"ListLive", browserListLive},
		{"ListEstimate", browserListEstimate},
		{"SessionView", browserSessionView},
		{"OpenStep", browserOpenStep},
		{"StepLink", browserStepLink},
		{"SessionNav", browserSessionNav},
		{"ExpandCollapse", browserExpandCollapse},
		{"OpenStepSurvivesUpdate", browserOpenStepSurvivesUpdate},
		{"LongOutput", browserLongOutput},
		{"LongRaw", browserLongRaw},
		{"FirstDeliveryHead", browserFirstDeliveryHead},
		{"EarlierTurns", browserEarlierTurns},
		{"LongTurn", browserLongTurn},
		{"LongTurnLink", browserLongTurnLink},
		{"SessionLive", browserSessionLive},
		{"LiveManyTurns", browserLiveManyTurns},
		{"LiveKeepsLastTurns", browserLiveKeepsLastTurns},
		{"LivePill", browserLivePill},
		{"ManyTabs", browserManyTabs},
		{"StreamsFull", browserStreamsFull},
		{"Delete", browserDelete},
		{"DeleteOddID", browserDeleteOddID},
		{"Export", browserExport},
		{"ExportCSP", browserExportCSP},
		{"Demo", browserDemo},
		{"ScriptIsText", browserScriptIsText},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
	}
}

// listRow is what a row of the session list shows.
type listRow struct {
	ID         string `json:"id"`
	Badge      string `json:"badge"`
	Version    string `json:"version"`
	Title      string `json:"title"`
	ShortID    string `json:"shortID"`
	Workspace  string `json:"workspace"`
	Started    string `json:"started"`
	StartedISO string `json:"startedISO"`
	Ago        string `json:"ago"`
	Counts     string `json:"counts"`
	Cost       string `json:"cost"`
	Flags      string `json:"flags"`
	Href       string `json:"href"`
}

func (p *tab) listRows() []listRow {
	p.T.Helper()
	return evalJS[[]listRow](p, `Array.from(document.querySelectorAll('[data-testid="session-row"]'), r => {
		const q = id => { const e = r.querySelector('[data-testid="' + id + '"]'); return e ? e.textContent.replace(/\s+/g, ' ').trim() : '' };
		return { id: r.dataset.sessionId, badge: q('agent-badge'), version: q('agent-version'), title: q('title'),
			shortID: q('short-id'), workspace: q('workspace'), started: q('started'),
			startedISO: r.querySelector('[data-testid="started"]').getAttribute('datetime'), ago: q('started-ago'),
			counts: q('counts'), cost: q('cost'), flags: q('flags'),
			href: r.querySelector('[data-testid="title"]').getAttribute('href') };
	})`)
}

// listFixture is three sessions of two agents: the newest has no cost
// recorded, a failed and a reference-only command and a flag.
func listFixture(now time.Time) (older, middle, newer obj) {
	older = sessionBatch("aaaa1111-older", "testagent", "1.0.0", now.Add(-50*time.Hour), "/home/dev/alpha-repo", metricsOf(0.5, 2, 10, 5))
	at := now.Add(-50 * time.Hour)
	older["turns"] = arr{turnRec("aaaa1111-older", 1, at, "")}
	older["steps"] = arr{
		stepRec("aaaa1111-older", 1, 1, at, "message", userPrompt("Fix the failing test\nin the parser")),
		stepRec("aaaa1111-older", 2, 1, at, "command", obj{"command": "go test ./...", "stdout": "ok", "exit_code": 0}),
		stepRec("aaaa1111-older", 3, 1, at, "edit", obj{"path": "/home/dev/alpha-repo/main.go", "old_string": "a", "new_string": "b", "is_full_write": false}),
	}

	middle = sessionBatch("cccc3333-middle", "testagent", "1.1.0", now.Add(-20*time.Hour), "/home/dev/gamma", metricsOf(1.25, 4, 20, 8))
	at = now.Add(-20 * time.Hour)
	middle["turns"] = arr{turnRec("cccc3333-middle", 1, at, "")}
	middle["steps"] = arr{stepRec("cccc3333-middle", 1, 1, at, "message", userPrompt("Rename the package"))}

	newer = sessionBatch("bbbb2222-newer", "cline", "3.1.0", now.Add(-3*time.Hour), "/srv/beta", nil)
	at = now.Add(-3 * time.Hour)
	newer["turns"] = arr{turnRec("bbbb2222-newer", 1, at, "act")}
	newer["steps"] = arr{
		stepRec("bbbb2222-newer", 1, 1, at, "message", userPrompt("Add a README")),
		withFields(stepRec("bbbb2222-newer", 2, 1, at, "command", obj{"command": "make docs", "stderr": "no rule", "exit_code": 2}),
			"outcome", "failed", "error", obj{"type": "exit_status", "message": "exit status 2"},
			"flags", arr{obj{"kind": "failed", "severity": "warn", "reason": "make failed"}}),
		withFields(stepRec("bbbb2222-newer", 3, 1, at, "command", obj{"output_ref": "/tmp/capture/3.txt"}),
			"content_status", "reference_only"),
	}
	return older, middle, newer
}

// browserList: rows newest first with everything a row shows, the agent
// chips and the total.
func browserList(t *testing.T, b *browser) {
	s := newTestService(t)
	now := time.Now().UTC()
	older, middle, newer := listFixture(now)
	for _, x := range []obj{older, middle, newer} {
		s.mustPush(x, http.StatusCreated)
	}
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/")

	rows := p.listRows()
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if want := "bbbb2222-newer cccc3333-middle aaaa1111-older"; strings.Join(ids, " ") != want {
		t.Fatalf("rows = %v; want newest first: %s", ids, want)
	}
	startedNewer, startedOlder := now.Add(-3*time.Hour), now.Add(-50*time.Hour)
	want := []listRow{{
		ID: "bbbb2222-newer", Badge: "cline", Version: "3.1.0", Title: "Add a README", ShortID: "bbbb2222",
		Workspace: "beta", Started: startedNewer.Format("2006-01-02 15:04"), StartedISO: isoUTC(startedNewer), Ago: "3 h ago",
		Cost: "not recorded", Href: "/session?id=bbbb2222-newer",
	}, {
		ID: "aaaa1111-older", Badge: "testagent", Version: "1.0.0", Title: "Fix the failing test", ShortID: "aaaa1111",
		Workspace: "alpha-repo", Started: startedOlder.Format("2006-01-02 15:04"), StartedISO: isoUTC(startedOlder), Ago: "2 days ago",
		Cost: "$0.50", Href: "/session?id=aaaa1111-older",
	}}
	byID := map[string]listRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, w := range want {
		got := byID[w.ID]
		w.Counts, w.Flags = got.Counts, got.Flags // checked below
		if got != w {
			t.Errorf("row %s =\n%+v; want\n%+v", w.ID, got, w)
		}
	}
	for _, c := range []struct {
		row  listRow
		want []string
	}{
		{rows[0], []string{"2 command", "1 message", "1 failed", "1 reference-only"}},
		{rows[2], []string{"1 command", "1 edit", "1 message"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.row.Counts, w) {
				t.Errorf("row %s counts = %q; want %q in it", c.row.ID, c.row.Counts, w)
			}
		}
	}
	if strings.Contains(rows[2].Counts, "failed") || strings.Contains(rows[2].Counts, "reference-only") {
		t.Errorf("row %s counts = %q; want no failed or reference-only count", rows[2].ID, rows[2].Counts)
	}
	if !strings.HasPrefix(rows[0].Flags, "1 ") || rows[2].Flags != "" {
		t.Errorf("flag counts = %q and %q; want 1 and none", rows[0].Flags, rows[2].Flags)
	}
	if total := p.Text(`[data-testid="total"]`); !strings.Contains(total, "3 sessions") || !strings.Contains(total, "$1.75") {
		t.Errorf("total = %q; want 3 sessions and the combined cost $1.75", total)
	}

	chips := p.Texts(`[data-testid="agent-chip"]`)
	if len(chips) != 2 || chips[0] != "cline 1" || chips[1] != "testagent 2" {
		t.Errorf("agent chips = %q; want cline 1 and testagent 2", chips)
	}
	p.ClickUntil(`[data-testid="agent-chip"][href="/?agent=testagent"]`, "the chip filters the list",
		`location.search === '?agent=testagent' && document.querySelectorAll('[data-testid="session-row"]').length === 2`)
	if active := p.Text(`[data-testid="agent-chips"] .chip.active`); active != "testagent 2" {
		t.Errorf("active chip = %q; want testagent 2", active)
	}
	for _, r := range p.listRows() {
		if r.Badge != "testagent" {
			t.Errorf("/?agent=testagent shows a %s row", r.Badge)
		}
	}
	if total := p.Text(`[data-testid="total"]`); !strings.Contains(total, "2 sessions") || !strings.Contains(total, "$1.75") {
		t.Errorf("filtered total = %q; want 2 sessions, $1.75", total)
	}
}

// browserListLive: a new session and a change to a listed one appear
// without a reload.
func browserListLive(t *testing.T, b *browser) {
	s := newTestService(t)
	now := time.Now().UTC()
	older, _, _ := listFixture(now)
	s.mustPush(older, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/")
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	evalJS[bool](p, `window.sameDocument = true`)

	fresh := sessionBatch("dddd4444-fresh", "cline", "3.2.0", now.Add(-time.Minute), "/srv/delta", nil)
	s.mustPush(fresh, http.StatusCreated)
	at := now.Add(-49 * time.Hour)
	s.mustPush(laterPush(older, nil, arr{stepRec("aaaa1111-older", 4, 1, at, "read", obj{"path": "/home/dev/alpha-repo/x.go"})}), http.StatusOK)

	p.WaitFor("the new session and the changed one show", `document.querySelectorAll('[data-testid="session-row"]').length === 2
		&& document.querySelector('[data-testid="session-row"]').dataset.sessionId === 'dddd4444-fresh'
		&& document.querySelector('[data-session-id="aaaa1111-older"] [data-testid="counts"]').textContent.includes('1 read')`)
	if !evalJS[bool](p, `window.sameDocument === true`) {
		t.Error("the list reloaded; want it updated in place")
	}
	if total := p.Text(`[data-testid="total"]`); !strings.Contains(total, "2 sessions") {
		t.Errorf("total after the push = %q; want 2 sessions", total)
	}
}

// browserListEstimate: the list's total shows its estimate once it has
// loaded, and a live refresh keeps it shown until the new one replaces it.
func browserListEstimate(t *testing.T, b *browser) {
	s := newTestService(t)
	sessions := unrecordedSessions()
	mustApplyUnrecorded(t, s, "ea", "claude-code", sessions["ea"])
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/")
	want := estimateOf(t, sessions, "ea")
	p.WaitFor("the total's estimate", `(document.querySelector('[data-testid="total-estimate"]') || {}).textContent?.includes(`+browsertest.JSString(want)+`)
		&& document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	evalJS[bool](p, `window.lost = false;
		new MutationObserver(function () {
			if (!document.querySelector('[data-testid="total"]').textContent.includes('estimated')) window.lost = true;
		}).observe(document.getElementById('rows'), {childList: true, subtree: true, characterData: true}); true`)

	mustApplyUnrecorded(t, s, "eb", "codex", sessions["eb"])
	want = estimateOf(t, sessions, "ea", "eb")
	p.WaitFor("the new session and the new estimate", `document.querySelectorAll('[data-testid="session-row"]').length === 2
		&& document.querySelector('[data-testid="total-estimate"] .estimate').textContent === `+browsertest.JSString(want))
	if evalJS[bool](p, `window.lost`) {
		t.Error("the total's estimate went from the page while the list was redrawn; want the last one kept until the new one loads")
	}
}

// richSession has every kind of step in two turns and two segments.
func richSession() obj {
	sid := "rich-session-0001"
	started := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	b := sessionBatch(sid, "claude-code", "2.0.1", started, "/home/dev/project-x", metricsOf(1.5, 7, 1200, 340))
	b["session"].(obj)["workspace"].(obj)["repo"] = "github.com/dev/project-x"
	b["segments"] = append(b["segments"].(arr), obj{"index": 1, "start_reason": "resume", "started_at": isoUTC(started.Add(time.Hour)), "source_files": arr{}})
	t1, t2 := started.Add(time.Second), started.Add(2*time.Minute)
	b["turns"] = arr{turnRec(sid, 1, t1, "plan"), turnRec(sid, 2, t2, "act")}
	b["steps"] = arr{
		stepRec(sid, 1, 1, t1, "message", userPrompt("Fix the failing test\nin the parser package")),
		withFields(stepRec(sid, 2, 1, t1.Add(time.Second), "command", obj{
			"command": "go test ./...", "cwd": "/home/dev/project-x", "exit_code": 1, "stdout": "FAIL parser", "stderr": "panic: boom",
		}), "outcome", "failed", "error", obj{"type": "exit_status", "message": "exit status 1"},
			"flags", arr{obj{"kind": "failed", "severity": "warn", "reason": "the tests failed"}}),
		stepRec(sid, 3, 1, t1.Add(2*time.Second), "edit", obj{
			"path": "/home/dev/project-x/parser.go", "old_string": "x := 1\nreturn nil\n", "new_string": "x := 1\nreturn err\n", "is_full_write": false,
		}),
		withFields(stepRec(sid, 4, 1, t1.Add(3*time.Second), "read", obj{"path": "/home/dev/project-x/parser.go", "range": arr{10, 42}}), "decision", "auto"),
		stepRec(sid, 5, 2, t2, "message", userPrompt("Now run it again")),
		stepRec(sid, 6, 2, t2.Add(time.Second), "command", obj{"command": "go test ./...", "exit_code": 0, "stdout": "ok parser"}),
		withFields(stepRec(sid, 7, 2, t2.Add(2*time.Second), "command", obj{"output_ref": "/tmp/capture/out-7.txt"}), "content_status", "reference_only"),
		stepRec(sid, 8, 2, t2.Add(3*time.Second), "message", obj{"role": "assistant", "text": "All tests pass now.\nThe parser returns its error."}),
		stepRec(sid, 9, 2, t2.Add(4*time.Second), "other", obj{"tool_name": "WebFetch", "raw": obj{"url": "https://example.com", "prompt": "summarise"}}),
	}
	return b
}

// browserSessionView: the summary, files touched, commands run and the
// timeline with each step's line.
func browserSessionView(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=rich-session-0001")

	if title := p.Text(`[data-testid="session-title"]`); title != "Fix the failing test" {
		t.Errorf("title = %q; want the first line of the first prompt", title)
	}
	host, _ := os.Hostname()
	summary := p.Fields(`[data-testid="summary"]`)
	for label, want := range map[string]string{
		"Cost": "$1.50", "API requests": "7", "Tokens in / out": "1,200 / 340", "Steps": "9", "Turns": "2",
		"Failed": "1", "Reference-only": "1", "Workspace": "/home/dev/project-x (github.com/dev/project-x)",
		"Owner": "local on " + host,
	} {
		if summary[label] != want {
			t.Errorf("summary %s = %q; want %q", label, summary[label], want)
		}
	}
	// Times in the viewer's zone (the test browser's is UTC), the duration
	// to the last step, and the last activity of an open session.
	if got, want := summary["Time"], "2026-01-02 10:00 – open · 2 min 4 s · 2 segments · last activity "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " days ago") {
		t.Errorf("summary Time = %q; want %q and some days ago", got, want)
	}
	if got := p.Text(`[data-testid="summary-cost"]`); got != "$1.50" {
		t.Errorf("summary-cost = %q; want $1.50", got)
	}

	files := p.Rows(`[data-testid="files"] tr`)
	// A file in the workspace is named by its path in it, the whole path
	// one hover away.
	if want := []string{"File | Created | Edited | Read | Failed", "parser.go | 0 | 1 | 1 | 0"}; strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("files touched = %q; want %q", files, want)
	}
	if title := evalJS[string](p, `document.querySelector('[data-testid="files"] td.path code').title`); title != "/home/dev/project-x/parser.go" {
		t.Errorf("files touched: the file's title = %q; want its whole path", title)
	}
	cmds := p.Rows(`[data-testid="commands"] tr`)
	if want := []string{"Command | Runs | Failed | Exit codes", "go test ./... | 2 | 1 | 0, 1", "(command not recorded) output not inline | 1 | 0 | not recorded"}; strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands run = %q; want %q", cmds, want)
	}
	if n := p.Count(`[data-testid="commands"] [data-testid="not-inline"]`); n != 1 {
		t.Errorf("%d output not inline tags; want 1 (the reference-only command)", n)
	}

	type turnInfo struct {
		Number string   `json:"number"`
		Head   string   `json:"head"`
		Prompt string   `json:"prompt"`
		Mode   string   `json:"mode"`
		Steps  []string `json:"steps"`
	}
	turns := evalJS[[]turnInfo](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => {
		const q = s => { const e = t.querySelector(s); return e ? e.textContent.replace(/\s+/g, ' ').trim() : '' };
		return { number: t.dataset.number, head: q('h3'), prompt: q('[data-testid="turn-prompt"]'), mode: q('[data-testid="turn-mode"]'),
			steps: Array.from(t.querySelectorAll('[data-testid="step"] > summary'), s =>
				[s.querySelector('.seq'), s.querySelector('.type'), s.querySelector('.line'), s.querySelector('.status')]
					.map(e => e.textContent.trim()).join(' | ')) };
	})`)
	want := []turnInfo{{
		Number: "1", Head: "Turn 1 plan 1 failed · 1 flag 10:00:01 · 3 s", Prompt: "Fix the failing test in the parser package", Mode: "plan",
		Steps: []string{
			"#1 | message | user: Fix the failing test … | ok",
			"#2 | command | go test ./... | failed: exit_status",
			"#3 | edit | edit parser.go | ok",
			"#4 | read | read parser.go:10-42 | ok",
		},
	}, {
		Number: "2", Head: "Turn 2 act 10:02:00 · 4 s", Prompt: "Now run it again", Mode: "act",
		Steps: []string{
			"#5 | message | user: Now run it again | ok",
			"#6 | command | go test ./... | ok",
			"#7 | command | command not recorded | reference-only",
			"#8 | message | assistant: All tests pass now. … | ok",
			`#9 | other | WebFetch https://example.com | ok`,
		},
	}}
	gotJSON, _ := json.MarshalIndent(turns, "", "  ")
	wantJSON, _ := json.MarshalIndent(want, "", "  ")
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("timeline =\n%s\nwant\n%s", gotJSON, wantJSON)
	}
}

// browserOpenStep: opening a step by click and by keyboard shows what was
// recorded for each step type.
func browserOpenStep(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=rich-session-0001")

	if n := p.Count(`details.step[open]`); n != 0 {
		t.Fatalf("%d steps open on arrival; want none", n)
	}
	for _, c := range []struct {
		seq      int
		keyboard bool
		fields   map[string]string
		blocks   map[string]string
	}{
		{2, false, map[string]string{
			"Time": "10:00:02", "Permission": "accepted", "Command": "go test ./...", "Working directory": "/home/dev/project-x",
			"Exit code": "1", "Error": "exit_status: exit status 1", "Flag": "failed (warn): the tests failed",
		}, map[string]string{"stdout": "FAIL parser", "stderr": "panic: boom"}},
		{3, true, map[string]string{"Time": "10:00:03", "Permission": "accepted", "File": "/home/dev/project-x/parser.go"}, nil},
		{4, false, map[string]string{"Time": "10:00:04", "Permission": "auto", "File": "/home/dev/project-x/parser.go", "Range": "lines 10–42"}, nil},
		{8, true, map[string]string{"Time": "10:02:03", "Role": "assistant"}, map[string]string{"Text": "All tests pass now.\nThe parser returns its error."}},
		{9, false, map[string]string{"Time": "10:02:04", "Permission": "accepted", "Tool": "WebFetch", "URL": "https://example.com", "Prompt": "summarise"},
			map[string]string{"Recorded": "{\n  \"prompt\": \"summarise\",\n  \"url\": \"https://example.com\"\n}"}},
		{7, true, map[string]string{"Time": "10:02:02", "Permission": "accepted", "Output kept at": "/tmp/capture/out-7.txt"}, nil},
	} {
		step := fmt.Sprintf("#step-%d", c.seq)
		how := "click"
		if c.keyboard {
			how = "Enter"
			p.PressEnter(step + " > summary")
		} else {
			p.Click(step + " > summary")
		}
		p.WaitFor(fmt.Sprintf("step %d opens by %s", c.seq, how), `document.querySelector('`+step+`').open
			&& document.querySelector('`+step+` [data-testid="step-detail"]').checkVisibility()`)
		got := p.Fields(step + ` [data-testid="step-detail"]`)
		if fmt.Sprint(got) != fmt.Sprint(c.fields) {
			t.Errorf("step %d (opened by %s) shows %v; want %v", c.seq, how, got, c.fields)
		}
		for label, want := range c.blocks {
			got := evalJS[string](p, `document.querySelector('`+step+` [data-testid="block-`+label+`"] :is(pre, .md p)').textContent`)
			if got != want {
				t.Errorf("step %d %s = %q; want %q", c.seq, label, got, want)
			}
		}
	}

	// The edit's diff: removed lines red, added lines green.
	type line struct {
		Kind, Text, Color string
	}
	lines := evalJS[[]line](p, `Array.from(document.querySelectorAll('#step-3 pre.diff .dl'), l => ({
		Kind: l.classList.contains('del') ? 'del' : l.classList.contains('add') ? 'add' : 'ctx',
		Text: l.textContent, Color: getComputedStyle(l).backgroundColor }))`)
	var del, add []line
	for _, l := range lines {
		switch l.Kind {
		case "del":
			del = append(del, l)
		case "add":
			add = append(add, l)
		}
	}
	if len(del) != 1 || !strings.Contains(del[0].Text, "return nil") || len(add) != 1 || !strings.Contains(add[0].Text, "return err") {
		t.Fatalf("diff lines = %+v; want return nil removed and return err added", lines)
	}
	if !reddish(del[0].Color) || !greenish(add[0].Color) {
		t.Errorf("removed line background %s, added %s; want red and green", del[0].Color, add[0].Color)
	}
	for _, l := range lines {
		if l.Kind == "ctx" && strings.Contains(l.Text, "return") {
			t.Errorf("diff line %q is context; want it removed or added", l.Text)
		}
	}

	// Enter closes a step again, as a click does.
	p.PressEnter("#step-8 > summary")
	p.WaitFor("Enter closes step 8", `!document.querySelector('#step-8').open`)
}

// reddish and greenish read a computed rgb() color.
func reddish(c string) bool {
	var r, g, b int
	fmt.Sscanf(c, "rgb(%d, %d, %d)", &r, &g, &b)
	return r > g && r > b
}

func greenish(c string) bool {
	var r, g, b int
	fmt.Sscanf(c, "rgb(%d, %d, %d)", &r, &g, &b)
	return g > r && g > b
}

// inView is true when the element's top is inside the viewport (give or
// take the pixel that fractional layout may leave).
func inView(sel string) string {
	return `(function(){ const r = document.querySelector('` + sel + `').getBoundingClientRect();
		return r.top > -2 && r.top < window.innerHeight })()`
}

// browserStepLink: #step-<seq> opens that step and scrolls to it, also for
// a step of a turn older than those shown.
func browserStepLink(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(manyTurns("long-session", 90, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))

	p.Open("/session?id=long-session#step-75")
	p.WaitFor("step 75 is open and scrolled to", `document.querySelector('#step-75').open && window.scrollY > 0 && `+inView("#step-75"))
	if n := p.Count(`[data-testid="turn"]`); n != 30 {
		t.Errorf("%d turns shown for a link to a shown step; want 30", n)
	}
	if n := p.Count(`details.step[open]`); n != 1 {
		t.Errorf("%d steps open; want only the linked one", n)
	}
	p.WaitFor("the linked step has the focus, for the keyboard", `document.activeElement === document.querySelector('#step-75 > summary')`)
	// [ and k from the first turn shown (61) use the earlier-turns control
	// and move to the turn, the step, before it.
	for i, key := range []string{"[", "k"} {
		p.Open(fmt.Sprintf("/session?id=long-session&try=%d#step-61", i)) // a page of its own each
		p.WaitFor("step 61 is linked", `document.querySelector('.kb-current') !== null && document.querySelector('.kb-current').id === 'step-61'`)
		p.key(key)
		p.WaitFor(key+" loads the earlier turns and moves to turn 60", `document.querySelector('.kb-current').id === 'step-60'
			&& document.querySelectorAll('[data-testid="turn"]').length === 80`)
	}
	p.Open("/session?id=long-session#step-75")

	// Step 5 is in turn 5, older than the 30 shown: the page reloads with
	// the turns around it (turn 5 and the 20 after it, those before it).
	// The hash changes after the evaluation returns, as the reload it
	// starts would lose the evaluation's answer.
	evalJS[bool](p, `setTimeout(() => { location.hash = '#step-5' }), true`)
	p.WaitFor("the page reloads around step 5 and opens it", `new URLSearchParams(location.search).get('step') === '5'
		&& location.hash === '#step-5' && document.querySelector('#step-5') !== null && document.querySelector('#step-5').open`)
	p.WaitFor("step 5 is scrolled to", inView("#step-5"))
	p.WaitFor("step 5 has the focus", `document.activeElement === document.querySelector('#step-5 > summary')`)
	const total, pos = 90, 4 // turns, and step 5's turn's position
	end := min(total, pos+1+store.AroundTurns)
	first := max(0, end-recentTurns)
	numbers := func() []string {
		return evalJS[[]string](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.dataset.number)`)
	}
	if got, want := numbers(), turnNumbers(first+1, end); !slices.Equal(got, want) {
		t.Errorf("turns %v shown after a link to an older step; want %v", got, want)
	}
	if n := p.Count(`[data-testid="earlier-turns"]`); (n == 1) != (first > 0) {
		t.Errorf("%d earlier-turns controls with the turns from %d shown", n, first+1)
	}
	if got, want := p.Text(`[data-testid="later-turns"]`), fmt.Sprintf("Show 50 later turns (%d not shown)", total-end); got != want {
		t.Errorf("later-turns control %q; want %q", got, want)
	}
	// A turn pushed meanwhile waits for the control: the page does not
	// show it after a gap.
	before := evalJS[string](p, `document.getElementById('session').dataset.stamp`)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC).Add(91 * time.Second)
	s.mustPush(laterPush(manyTurns("long-session", 1, at), arr{turnRec("long-session", 91, at, "")},
		arr{stepRec("long-session", 91, 91, at, "message", userPrompt("prompt 91"))}), http.StatusOK)
	p.WaitFor("the page takes the push", `document.getElementById('session').dataset.stamp !== `+browsertest.JSString(before))
	if got, want := numbers(), turnNumbers(first+1, end); !slices.Equal(got, want) {
		t.Errorf("turns %v shown after a push of turn 91; want still %v", got, want)
	}
	// ] from the last turn shown uses the control and moves to the turn
	// after it.
	evalJS[bool](p, fmt.Sprintf(`setTimeout(() => { location.hash = '#step-%d' }), true`, end))
	p.WaitFor("the last turn's step is linked", fmt.Sprintf(`document.querySelector('.kb-current') !== null && document.querySelector('.kb-current').id === 'step-%d'`, end))
	p.key("]")
	p.WaitFor("] loads the later turns and moves to the next", fmt.Sprintf(`document.querySelector('.kb-current').id === 'step-%d'
		&& document.querySelectorAll('[data-testid="turn"]').length === %d`, end+1, end-first+50))
	// j from the last step shown does the same, and moves to the step after.
	evalJS[bool](p, fmt.Sprintf(`setTimeout(() => { location.hash = '#step-%d' }), true`, end+50))
	p.WaitFor("the last turn's step is linked", fmt.Sprintf(`document.querySelector('.kb-current').id === 'step-%d'`, end+50))
	p.key("j")
	p.WaitFor("j loads the rest, turn 91 too, and moves to the next step", fmt.Sprintf(`document.querySelector('.kb-current').id === 'step-%d'
		&& document.querySelectorAll('[data-testid="turn"]').length === 91`, end+51))
	if got, want := numbers(), turnNumbers(first+1, total+1); !slices.Equal(got, want) || p.Count(`[data-testid="later-turns"]`) != 0 {
		t.Errorf("turns %v shown, %d later-turns controls; want %v and none", got, p.Count(`[data-testid="later-turns"]`), want)
	}
}

// browserLiveManyTurns: a push that changes more turns than a live update
// redraws reloads the page, which shows the last turns, changed, as a
// first view does, and not every turn; not while a note is being written.
func browserLiveManyTurns(t *testing.T, b *browser) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	const n = updateTurns + 10
	x := manyTurns("many", n, at)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=many")
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	// While a note is being written, the page waits: the reload would
	// lose it. The answers the page gets are counted.
	evalJS[bool](p, `(window.notReloaded = true, window.resets = 0,
		window.fetch = (f => (...a) => f(...a).then(r => { if (r.status === 205) window.resets++; return r }))(window.fetch), true)`)
	p.key("j")
	p.key("a")
	p.WaitFor("a opens the note dialog", `document.getElementById('note-dialog').open`)
	for _, st := range x["steps"].(arr) {
		st.(obj)["outcome"] = "failed"
	}
	s.mustPush(laterPush(x, nil, x["steps"].(arr)), http.StatusOK)
	p.WaitFor("the page hears of the change twice", `window.resets >= 2`)
	if !evalJS[bool](p, `window.notReloaded === true && document.getElementById('note-dialog').open`) {
		t.Fatal("the page reloaded under an open note dialog")
	}
	p.key("\x1b")
	p.WaitFor("the page reloads once the dialog is closed", `window.notReloaded === undefined && document.readyState === 'complete'`)
	if got, want := evalJS[[]string](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.dataset.number)`), turnNumbers(n-recentTurns+1, n); !slices.Equal(got, want) {
		t.Errorf("turns %v shown after the reload; want the last %d, %v", got, recentTurns, want)
	}
	if got := p.Count(`details.step[data-problem]`); got != recentTurns {
		t.Errorf("%d failed steps shown after the reload; want the %d of the turns shown", got, recentTurns)
	}
}

// browserLiveKeepsLastTurns: a page following a growing session drops its
// oldest turns once the turns it appended pass twice a first view's,
// keeping the last 30 and the earlier-turns control for the rest, which
// brings them back in order; a page of every turn keeps them all.
func browserLiveKeepsLastTurns(t *testing.T, b *browser) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := manyTurns("grow", recentTurns+1, at)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=grow")
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	numbers := func() []string {
		return evalJS[[]string](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.dataset.number)`)
	}
	// grow pushes the turns from through to, and waits for the page to
	// show the last, read at its end, as a reader following it is.
	grow := func(from, to int) {
		t.Helper()
		var turns, steps arr
		for n := from; n <= to; n++ {
			turns = append(turns, turnRec("grow", n, at.Add(time.Duration(n)*time.Second), ""))
			steps = append(steps, stepRec("grow", n, n, at.Add(time.Duration(n)*time.Second), "message", userPrompt(fmt.Sprintf("prompt %d", n))))
		}
		s.mustPush(laterPush(x, turns, steps), http.StatusOK)
		p.WaitFor(fmt.Sprintf("turn %d shows", to), fmt.Sprintf(`document.querySelector('[data-testid="turn"][data-number="%d"]') !== null`, to))
		evalJS[bool](p, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	}
	evalJS[bool](p, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	grow(recentTurns+2, 2*recentTurns-10) // 50 shown: all kept
	if got, want := numbers(), turnNumbers(2, 2*recentTurns-10); !slices.Equal(got, want) {
		t.Fatalf("turns %v shown; want %v", got, want)
	}
	last := 2*recentTurns + 6
	grow(2*recentTurns-9, last) // 66 shown: the last 30 kept
	if got, want := numbers(), turnNumbers(last-recentTurns+1, last); !slices.Equal(got, want) {
		t.Errorf("turns %v shown after the page grew past %d; want the last %d, %v", got, 2*recentTurns, recentTurns, want)
	}
	if got, want := p.Text(`[data-testid="earlier-turns"]`), fmt.Sprintf("Show %d earlier turns (%d not shown)", min(earlierTurns, last-recentTurns), last-recentTurns); got != want {
		t.Errorf("earlier-turns control %q; want %q", got, want)
	}
	p.Click(`[data-testid="earlier-turns"]`)
	p.WaitFor("the control brings back the turns dropped", fmt.Sprintf(`document.querySelectorAll('[data-testid="turn"]').length === %d`, last))
	if got, want := numbers(), turnNumbers(1, last); !slices.Equal(got, want) {
		t.Errorf("turns %v after the earlier-turns control; want %v", got, want)
	}
	// A page of every turn keeps them all as the session grows.
	p.Open("/session?id=grow&turns=all")
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	grow(last+1, last+5)
	if got, want := numbers(), turnNumbers(1, last+5); !slices.Equal(got, want) {
		t.Errorf("turns %v on the page of every turn after it grew; want %v", got, want)
	}
}

// turnNumbers are the numbers from through to, as the page writes them.
func turnNumbers(from, to int) []string {
	var out []string
	for n := from; n <= to; n++ {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

// browserSessionNav: the links under a session's title name the page's
// sections as their headings do, and each, taken by keyboard, scrolls its
// section to the top.
func browserSessionNav(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(manyTurns("long-session", 40, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=long-session")
	links := evalJS[[][2]string](p, `Array.from(document.querySelectorAll('[data-testid="session-nav"] a'), a => [a.getAttribute('href'), a.textContent])`)
	if len(links) != 7 {
		t.Fatalf("section links %v; want 7", links)
	}
	for _, l := range links {
		href, name := l[0], l[1]
		if got := p.Text(href + " > h2"); got != name {
			t.Errorf("link %q goes to %s, headed %q", name, href, got)
			continue
		}
		evalJS[bool](p, `window.scrollTo(0, 0), true`)
		p.PressEnter(`[data-testid="session-nav"] a[href="` + href + `"]`)
		p.WaitFor(name+" is scrolled to the top", `location.hash === `+browsertest.JSString(href)+`
			&& Math.abs(document.querySelector(`+browsertest.JSString(href)+`).getBoundingClientRect().top) < 40`)
	}
}

// browserExpandCollapse: Expand all opens every step, Collapse all closes
// them.
func browserExpandCollapse(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=rich-session-0001")

	p.Click(`[data-testid="expand-all"]`)
	p.WaitFor("Expand all opens the 9 steps", `document.querySelectorAll('details.step[open]').length === 9`)
	p.Click(`[data-testid="collapse-all"]`)
	p.WaitFor("Collapse all closes every step", `document.querySelectorAll('details.step[open]').length === 0`)
	p.Click("#step-6 > summary")
	p.Click(`[data-testid="expand-all"]`)
	p.WaitFor("Expand all opens the rest", `document.querySelectorAll('details.step[open]').length === 9`)
}

// browserOpenStepSurvivesUpdate: a change to another step of the same turn
// redraws the turn, and the step the reader opened stays open, with all of
// its output.
func browserOpenStepSurvivesUpdate(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "open-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	long := countable(5000)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("Build it")),
		stepRec(sid, 2, 1, at, "command", obj{"command": "make", "stdout": long}),
		stepRec(sid, 3, 1, at, "command", obj{"command": "make test", "stdout": "running"}),
	}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)

	p.Click("#step-2 > summary")
	p.WaitFor("step 2 shows its whole output", `document.querySelector('#step-2').open
		&& document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent.length === 5000`)

	s.mustPush(laterPush(x, nil, arr{stepRec(sid, 3, 1, at, "command", obj{"command": "make test", "stdout": "all passed"})}), http.StatusOK)
	p.WaitFor("the change to step 3 shows", `document.querySelector('#step-3 [data-testid="block-stdout"] pre').textContent === 'all passed'`)
	if !evalJS[bool](p, `document.querySelector('#step-2').open`) {
		t.Fatal("step 2 closed when its turn was redrawn; want it to stay open")
	}
	if n := p.Count(`[data-testid="turn"]`); n != 1 {
		t.Errorf("%d turns after the update; want 1", n)
	}
	p.WaitFor("step 2 still shows its whole output", `document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent.length === 5000`)
}

// browserLongOutput: output over 100,000 characters is cut at 100,000 with a
// control that shows all of it.
func browserLongOutput(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "long-output"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{stepRec(sid, 1, 1, at, "command", obj{"command": "cat big.log", "stdout": countable(150_000)})}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)

	const pre = `document.querySelector('#step-1 [data-testid="block-stdout"] pre').textContent`
	p.Click("#step-1 > summary")
	p.WaitFor("opening shows 100,000 characters and Show all", pre+`.length === 100000
		&& document.querySelector('#step-1 [data-testid="show-all"]') !== null`)
	if got := p.Text(`#step-1 [data-testid="cut"]`); !strings.Contains(got, "50,000 more characters") {
		t.Errorf("cut note = %q; want 50,000 more characters", got)
	}
	if got := evalJS[string](p, pre); got != countable(100_000) {
		t.Errorf("the first 100,000 characters shown are not the output's start")
	}
	p.Click(`#step-1 [data-testid="show-all"]`)
	p.WaitFor("Show all shows every character", pre+`.length === 150000 && document.querySelector('#step-1 [data-testid="show-all"]') === null`)
	if got := evalJS[string](p, pre); got != countable(150_000) {
		t.Errorf("the whole output shown differs from the recorded one")
	}
	if !evalJS[bool](p, `document.querySelector('#step-1').open`) {
		t.Error("step 1 closed after Show all")
	}
}

// browserLongRaw: an other step's recorded input gets the cuts output gets:
// 2 KB on the page, 100,000 characters once opened, all of it on Show all;
// a value nested thousands deep opens at about its own size.
func browserLongRaw(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "long-raw"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "other", obj{"tool_name": "Fetch", "raw": obj{"k": countable(150_000)}}),
		stepRec(sid, 2, 1, at, "other", obj{"tool_name": "Deep", "raw": json.RawMessage(`{"a":` + deepArrays(9980) + `}`)}),
	}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)

	const pre = `document.querySelector('#step-1 [data-testid="block-Recorded"] pre').textContent`
	if n := evalJS[int](p, pre+`.length`); n != 2048 {
		t.Errorf("the page carries %d characters of raw; want 2048", n)
	}
	p.Click("#step-1 > summary")
	p.WaitFor("opening shows 100,000 characters and Show all", pre+`.length === 100000
		&& document.querySelector('#step-1 [data-testid="show-all"]') !== null`)
	p.Click(`#step-1 [data-testid="show-all"]`)
	whole := len(`{
  "k": ""
}`) + 150_000
	p.WaitFor("Show all shows all of raw", fmt.Sprintf(`%s.length === %d && document.querySelector('#step-1 [data-testid="show-all"]') === null`, pre, whole))

	p.Click("#step-2 > summary")
	p.WaitFor("the deep value opens whole", `document.querySelector('#step-2 [data-testid="show-all"]') === null`)
	if n := evalJS[int](p, `document.querySelector('#step-2 [data-testid="block-Recorded"] pre').textContent.length`); n > 2*(len(deepArrays(9980))+10) {
		t.Errorf("the deep raw value shows as %d characters; want about its %d", n, len(deepArrays(9980)))
	}
}

// browserFirstDeliveryHead: the page carries the first 2,048 characters of
// each output; opening the step loads the rest.
func browserFirstDeliveryHead(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "head-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	out, errOut, text := countable(5000), "E"+countable(2999), "T"+countable(3999)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", obj{"role": "assistant", "text": text}),
		stepRec(sid, 2, 1, at, "command", obj{"command": "make", "stdout": out, "stderr": errOut}),
		stepRec(sid, 3, 1, at, "command", obj{"command": "true", "stdout": "short"}),
	}
	s.mustPush(x, http.StatusCreated)
	base := serveBrowser(t, s)

	res, err := http.Get(base + "/session?id=" + sid)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sel, whole string }{
		{`#step-1 [data-testid="block-Text"] .md p`, text},
		{`#step-2 [data-testid="block-stdout"] pre`, out},
		{`#step-2 [data-testid="block-stderr"] pre`, errOut},
		{`#step-3 [data-testid="block-stdout"] pre`, "short"},
	} {
		want := c.whole[:min(2048, len(c.whole))]
		if got := doc.Find(c.sel).Text(); got != want {
			t.Errorf("first delivery of %s has %d characters; want the first %d", c.sel, len(got), len(want))
		}
	}
	if _, partial := doc.Find("#step-3").Attr("data-partial"); partial {
		t.Error("step 3, all of it delivered, is marked partial")
	}

	p := b.newTab(t, base)
	p.Open("/session?id=" + sid)
	p.Click("#step-2 > summary")
	p.WaitFor("opening step 2 loads all of stdout and stderr", `document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent.length === 5000
		&& document.querySelector('#step-2 [data-testid="block-stderr"] pre').textContent.length === 3000`)
	if got := evalJS[string](p, `document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent`); got != out {
		t.Error("step 2's loaded stdout differs from the recorded one")
	}
	p.PressEnter("#step-1 > summary")
	p.WaitFor("opening step 1 loads all of its text", `document.querySelector('#step-1 [data-testid="block-Text"] .md p').textContent.length === 4000`)
	if n := p.Count(`[data-testid="cut"]`); n != 0 {
		t.Errorf("%d cut notes after loading the steps; want none", n)
	}
}

// browserEarlierTurns: 30 turns shown, then 50 more per click of the
// earlier-turns control.
func browserEarlierTurns(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(manyTurns("long-session", 90, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=long-session")

	numbers := func() []string {
		return evalJS[[]string](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.dataset.number)`)
	}
	inOrder := func(got []string, from int) {
		t.Helper()
		for i, n := range got {
			if n != fmt.Sprint(from+i) {
				t.Fatalf("turns shown = %v; want %d to 90 in order", got, from)
			}
		}
	}
	inOrder(numbers(), 61)
	if n := len(numbers()); n != 30 {
		t.Fatalf("%d turns shown; want the 30 most recent", n)
	}
	if got := p.Text(`[data-testid="earlier-turns"]`); !strings.Contains(got, "50 earlier") || !strings.Contains(got, "60 not shown") {
		t.Errorf("earlier-turns control = %q; want 50 earlier, 60 not shown", got)
	}
	p.Click(`[data-testid="earlier-turns"]`)
	p.WaitFor("50 earlier turns show", `document.querySelectorAll('[data-testid="turn"]').length === 80`)
	inOrder(numbers(), 11)
	if got := p.Text(`[data-testid="earlier-turns"]`); !strings.Contains(got, "10 earlier") {
		t.Errorf("earlier-turns control = %q; want 10 earlier", got)
	}
	p.Click(`[data-testid="earlier-turns"]`)
	p.WaitFor("the last 10 turns show and the control goes", `document.querySelectorAll('[data-testid="turn"]').length === 90
		&& document.querySelector('[data-testid="earlier-turns"]') === null`)
	inOrder(numbers(), 1)

	// Steps of an earlier turn open like the others.
	p.Click("#step-3 > summary")
	p.WaitFor("a step of an earlier turn opens", `document.querySelector('#step-3').open && document.querySelector('#step-3 [data-testid="step-detail"]').checkVisibility()`)
}

// browserLongTurn: a turn of many steps shows its first and its last; its
// control, by keyboard, adds the steps before those; a live update of the
// turn keeps the steps added and the step opened among them, and the
// control adds the rest, until every step is on the page once, in order.
func browserLongTurn(t *testing.T, b *browser) {
	s := newTestService(t)
	const sid, n = "long-turn", 800
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := longTurn(sid, n, at)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	last := 3 + n - 1
	seqs := func() []int {
		return evalJS[[]int](p, `Array.from(document.querySelectorAll('[data-testid="turn"][data-number="2"] details.step'), d => Number(d.dataset.seq))`)
	}
	inOrder := func(what string, want int) {
		t.Helper()
		got := seqs()
		if len(got) != want || !slices.IsSortedFunc(got, func(a, b int) int { return cmp.Or(a-b, -1) }) { // strictly
			t.Fatalf("%s: the long turn shows %d steps; want %d, each once, in order", what, len(got), want)
		}
	}
	inOrder("at first", 1+recentSteps)
	control := `[data-testid="turn"][data-number="2"] [data-testid="earlier-steps"]`
	p.PressEnter(control)
	p.WaitFor("500 earlier steps show", `document.querySelectorAll('[data-testid="turn"][data-number="2"] details.step').length === `+fmt.Sprint(1+recentSteps+earlierSteps))
	inOrder("after the control", 1+recentSteps+earlierSteps)
	p.WaitFor("the focus is on the control again", `document.activeElement === document.querySelector('`+control+`')`)
	hidden := n - 1 - recentSteps - earlierSteps
	if got := p.Text(control); !strings.Contains(got, fmt.Sprintf("Show %d earlier steps of this turn (%d not shown)", hidden, hidden)) {
		t.Errorf("the control after one use says %q; want %d earlier", got, hidden)
	}
	added := fmt.Sprint(last - recentSteps - 10)
	p.Click("#step-" + added + " > summary")
	p.WaitFor("an added step opens", `document.querySelector('#step-`+added+` [data-testid="step-detail"]').checkVisibility()`)

	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	p.WaitFor("the refresh on ready", `performance.getEntriesByType('resource').some(e => new URL(e.name).pathname === '/session/updates')`)
	var steps arr
	for seq := last + 1; seq <= last+5; seq++ {
		steps = append(steps, stepRec(sid, seq, 2, at.Add(time.Hour), "command", obj{"command": fmt.Sprintf("step %d", seq), "stdout": "ok"}))
	}
	s.mustPush(laterPush(x, nil, steps), http.StatusOK)
	p.WaitFor("the new steps show", fmt.Sprintf(`document.querySelector('#step-%d') !== null`, last+5))
	inOrder("after a live update", 1+recentSteps+earlierSteps+5)
	if !evalJS[bool](p, `document.querySelector('#step-`+added+`').open`) {
		t.Errorf("the step opened among those added is closed after the update")
	}
	if got := p.Text(control); !strings.Contains(got, fmt.Sprintf("(%d not shown)", hidden)) {
		t.Errorf("the control after the update says %q; want %d not shown", got, hidden)
	}
	p.PressEnter(control)
	p.WaitFor("the rest show and the control goes", `document.querySelector('`+control+`') === null`)
	inOrder("at the end", n+5)
	p.WaitFor("the focus is on the first step added", `document.activeElement === document.querySelector('#step-4 > summary')`)
}

// browserLongTurnLink: a link to a step of a turn of many that the page
// does not show loads the page of every turn with the steps around it,
// opened; a live update keeps them, and the controls either side add the
// rest.
func browserLongTurnLink(t *testing.T, b *browser) {
	s := newTestService(t)
	const sid, n, k = "long-link", 900, 400
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := longTurn(sid, n, at)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open(fmt.Sprintf("/session?id=%s#step-%d", sid, k))
	p.WaitFor("the linked step shows, opened", fmt.Sprintf(`location.search.includes('step=%d') && document.querySelector('#step-%d') !== null
		&& document.querySelector('#step-%d').open && document.activeElement === document.querySelector('#step-%d > summary')`, k, k, k, k))
	last := 3 + n - 1
	turn := `[data-testid="turn"][data-number="2"]`
	count := func() int { return evalJS[int](p, `document.querySelectorAll('`+turn+` details.step').length`) }
	if got, want := count(), 1+2*store.AroundSteps+1+recentSteps; got != want {
		t.Fatalf("the linked turn shows %d steps; want its first, the %d around the link and its last %d", got, 2*store.AroundSteps+1, recentSteps)
	}
	if got := p.Count(turn + ` [data-testid="earlier-steps"]`); got != 2 {
		t.Errorf("%d earlier-steps controls; want one each side of the linked steps", got)
	}

	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	p.WaitFor("the refresh on ready", `performance.getEntriesByType('resource').some(e => new URL(e.name).pathname === '/session/updates')`)
	s.mustPush(laterPush(x, nil, arr{stepRec(sid, last+1, 2, at.Add(time.Hour), "command", obj{"command": "one more", "stdout": "ok"})}), http.StatusOK)
	p.WaitFor("the new step shows", fmt.Sprintf(`document.querySelector('#step-%d') !== null`, last+1))
	if got, want := count(), 1+2*store.AroundSteps+1+recentSteps+1; got != want {
		t.Errorf("after a live update the linked turn shows %d steps; want %d, the linked ones kept", got, want)
	}
	if !evalJS[bool](p, fmt.Sprintf(`document.querySelector('#step-%d').open`, k)) {
		t.Errorf("the linked step is closed after the update")
	}
	for p.Count(turn+` [data-testid="earlier-steps"]`) > 0 {
		before := count()
		p.Click(turn + ` [data-testid="earlier-steps"]`)
		p.WaitFor("the control adds steps", fmt.Sprintf(`document.querySelectorAll('%s details.step').length > %d`, turn, before))
	}
	got := evalJS[[]int](p, `Array.from(document.querySelectorAll('`+turn+` details.step'), d => Number(d.dataset.seq))`)
	if len(got) != n+1 || !slices.IsSortedFunc(got, func(a, b int) int { return cmp.Or(a-b, -1) }) {
		t.Errorf("with every control used the turn shows %d steps; want its %d, each once, in order", len(got), n+1)
	}
}

// browserSessionLive: a new step in the last turn and a new turn show
// without a reload, and unchanged turns are not redrawn.
func browserSessionLive(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "live-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", metricsOf(0.1, 1, 1, 1))
	var turns, steps arr
	for i := 1; i <= 3; i++ {
		turns = append(turns, turnRec(sid, i, at, ""))
		steps = append(steps,
			stepRec(sid, 2*i-1, i, at, "message", userPrompt(fmt.Sprintf("prompt %d", i))),
			stepRec(sid, 2*i, i, at, "command", obj{"command": fmt.Sprintf("step %d", 2*i), "stdout": "ok"}))
	}
	x["turns"], x["steps"] = turns, steps
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	// The refresh on connecting is done: the change below gets one of its own.
	p.WaitFor("the refresh on ready", `performance.getEntriesByType('resource').some(e => new URL(e.name).pathname === '/session/updates')`)
	evalJS[bool](p, `window.sameDocument = true;
		document.querySelectorAll('[data-testid="turn"]').forEach(t => { t.keptNode = true }); true`)

	s.mustPush(laterPush(x, arr{turnRec(sid, 4, at.Add(time.Minute), "act")}, arr{
		stepRec(sid, 7, 3, at, "read", obj{"path": "/tmp/ws/new.go"}),
		stepRec(sid, 8, 4, at.Add(time.Minute), "message", userPrompt("prompt 4")),
		stepRec(sid, 9, 4, at.Add(time.Minute), "other", obj{"tool_name": "WebFetch", "raw": obj{"url": "https://example.com"}}),
	}), http.StatusOK)
	p.WaitFor("the new step and the new turn show", `document.querySelector('[data-testid="turn"][data-number="3"] #step-7') !== null
		&& document.querySelector('[data-testid="turn"][data-number="4"] #step-8') !== null`)

	if !evalJS[bool](p, `window.sameDocument === true`) {
		t.Fatal("the page reloaded; want it updated in place")
	}
	// One refresh on connecting (ready), one for the change, two seconds
	// apart, as the page's own resource timings tell.
	fetches := evalJS[[]float64](p, `performance.getEntriesByType('resource')
		.filter(e => new URL(e.name).pathname === '/session/updates').map(e => e.startTime)`)
	if len(fetches) < 2 {
		t.Errorf("%d fetches of the updates; want one on ready and one for the change", len(fetches))
	}
	for i := 1; i < len(fetches); i++ {
		if gap := fetches[i] - fetches[i-1]; gap < 1950 {
			t.Errorf("live refreshes %.0f ms apart; want at most one every two seconds", gap)
		}
	}
	numbers := evalJS[[]string](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.dataset.number)`)
	if strings.Join(numbers, ",") != "1,2,3,4" {
		t.Errorf("turns after the update = %v; want 1,2,3,4 once each", numbers)
	}
	kept := evalJS[[]bool](p, `Array.from(document.querySelectorAll('[data-testid="turn"]'), t => t.keptNode === true)`)
	if fmt.Sprint(kept) != "[true true false false]" {
		t.Errorf("turns kept (not redrawn) = %v; want turns 1 and 2 kept, 3 and 4 drawn", kept)
	}
	if got := p.Fields(`[data-testid="summary"]`); got["Steps"] != "9" || got["Turns"] != "4" {
		t.Errorf("summary after the update shows %s steps, %s turns; want 9 and 4", got["Steps"], got["Turns"])
	}
	if got := p.Text(`[data-testid="turn"][data-number="4"] [data-testid="turn-mode"]`); got != "act" {
		t.Errorf("new turn's mode = %q; want act", got)
	}
	if got := p.Texts(`[data-testid="files"] td code`); fmt.Sprint(got) != "[new.go]" {
		t.Errorf("files touched after the update = %v; want the new read", got)
	}
	if got := p.Texts(`[data-testid="tools"] td code`); fmt.Sprint(got) != "[WebFetch]" {
		t.Errorf("other tools after the update = %v; want the new call's", got)
	}
}

// browserLivePill: live while connected, server offline while the server
// is down with the content kept, live again on return with the changes
// made meanwhile.
func browserLivePill(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "pill-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{stepRec(sid, 1, 1, at, "message", userPrompt("Start"))}
	s.mustPush(x, http.StatusCreated)
	srv := newRestartableServer(t, s.store)
	p := b.newTab(t, srv.URL())
	p.Open("/session?id=" + sid)
	const pill = `document.querySelector('[data-testid="live-pill"]').textContent`
	p.WaitFor("the pill says live", pill+` === 'live'`)
	if class := evalJS[string](p, `document.querySelector('[data-testid="live-pill"]').className`); class != "pill live" {
		t.Errorf("live pill class = %q; want pill live", class)
	}
	evalJS[bool](p, `window.sameDocument = true; window.pillStates = [];
		new MutationObserver(() => pillStates.push(`+pill+`)).observe(document.querySelector('[data-testid="live-pill"]'), { childList: true, characterData: true, subtree: true });
		true`)

	srv.stop()
	p.WaitForWithin(8*time.Second, "the pill says server offline", pill+` === 'server offline'`)
	if title := p.Text(`[data-testid="session-title"]`); title != "Start" || p.Count(`[data-testid="step"]`) != 1 {
		t.Errorf("while offline the page shows %q and %d steps; want its content kept", title, p.Count(`[data-testid="step"]`))
	}

	// A change made while the server is down shows after it returns.
	s.mustPush(laterPush(x, nil, arr{stepRec(sid, 2, 1, at, "command", obj{"command": "make offline", "stdout": "ok"})}), http.StatusOK)
	srv.start()
	p.WaitForWithin(10*time.Second, "the pill says live again", pill+` === 'live'`)
	p.WaitFor("the change made while offline shows", `document.querySelector('#step-2') !== null`)
	if !evalJS[bool](p, `window.sameDocument === true`) {
		t.Error("the page reloaded; want it to catch up in place")
	}
	if states := strings.Join(evalJS[[]string](p, `pillStates`), ", "); !strings.HasPrefix(states, "connecting, server offline") || !strings.HasSuffix(states, "live") {
		t.Errorf("the pill went %s; want connecting, server offline, (connecting,) live", states)
	}
}

// browserManyTabs: ten tabs of the app, more than the six connections a
// browser opens to one host, all load and go live on one shared stream,
// and a push reaches each of them.
func browserManyTabs(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "tabs-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{stepRec(sid, 1, 1, at, "message", userPrompt("Start"))}
	s.mustPush(x, http.StatusCreated)
	base := serveBrowser(t, s)

	const pill = `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`
	tabs := make([]*tab, 10) // even: the list, odd: the session
	for i := range tabs {
		p := b.newTab(t, base)
		if i%2 == 0 {
			p.Open("/")
		} else {
			p.Open("/session?id=" + sid)
		}
		p.WaitFor(fmt.Sprintf("tab %d is live", i+1), pill)
		tabs[i] = p
	}
	if n := s.hub.streamCount(); n != 1 {
		t.Errorf("the server holds %d streams for ten tabs; want one", n)
	}
	for _, p := range tabs {
		p.WaitFor("the tab's refresh on ready", `performance.getEntriesByType('resource').some(e => ['/rows', '/session/updates'].includes(new URL(e.name).pathname))`)
		evalJS[bool](p, `window.sameDocument = true`)
	}
	// pushRead pushes read step seq and waits for each of tabs to show it.
	pushRead := func(seq int, tabs []*tab) {
		t.Helper()
		s.mustPush(laterPush(x, nil, arr{stepRec(sid, seq, 1, at, "read", obj{"path": fmt.Sprintf("/tmp/ws/%d.go", seq)})}), http.StatusOK)
		for _, p := range tabs {
			if p == nil {
				continue
			}
			p.WaitFor("the tab shows push "+strconv.Itoa(seq), fmt.Sprintf(`location.pathname === '/'
				? document.querySelector('[data-session-id="tabs-session"] [data-testid="counts"]').textContent.includes('%d read')
				: document.querySelector('#step-%d') !== null`, seq-1, seq))
		}
	}
	pushRead(2, tabs)
	for i, p := range tabs {
		if !evalJS[bool](p, `window.sameDocument === true`) {
			t.Errorf("tab %d reloaded; want it updated in place", i+1)
		}
	}

	// Closing the tab that started the shared stream, and four more, leaves
	// the others live on the same stream; closing them all ends it.
	for i := range 5 {
		tabs[i].Close()
		tabs[i] = nil
	}
	pushRead(3, tabs)
	if n := s.hub.streamCount(); n != 1 {
		t.Errorf("the server holds %d streams for five tabs left; want one", n)
	}
	for _, p := range tabs[5:] {
		p.Close()
	}
	deadline := time.Now().Add(browsertest.WaitTimeout)
	for s.hub.streamCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d streams after every tab closed; want none", s.hub.streamCount())
		}
		time.Sleep(browsertest.PollEvery)
	}
}

// browserStreamsFull: a tab refused a stream because the server's streams
// are all taken gets one once a stream is free, through the shared stream.
func browserStreamsFull(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "full-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{stepRec(sid, 1, 1, at, "message", userPrompt("Start"))}
	s.mustPush(x, http.StatusCreated)
	srv := loopbackServer(t, s)
	var others []*sseClient
	for range MaxStreams {
		c := openStream(t, srv, "")
		c.mustReady()
		others = append(others, c)
	}

	p := b.newTab(t, srv.URL)
	p.Open("/session?id=" + sid)
	const pill = `document.querySelector('[data-testid="live-pill"]').textContent`
	p.WaitForWithin(8*time.Second, "the refused tab says server offline", pill+` === 'server offline'`)
	others[0].cancel()
	p.WaitForWithin(15*time.Second, "the tab is live once a stream is free", pill+` === 'live'`)
	s.mustPush(laterPush(x, nil, arr{stepRec(sid, 2, 1, at, "read", obj{"path": "/tmp/ws/pushed.go"})}), http.StatusOK)
	p.WaitFor("the push shows", `document.querySelector('#step-2') !== null`)
}

// browserDelete: the dialog asks first with Cancel focused, Cancel keeps
// the session, Delete removes it and goes to the list, and another tab on
// the session says it is gone.
func browserDelete(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	s.mustPush(newBatch("kept-session"), http.StatusCreated)
	base := serveBrowser(t, s)
	const sid = "rich-session-0001"
	other := b.newTab(t, base)
	other.Open("/session?id=" + sid)
	other.WaitFor("the other tab is live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)

	p := b.newTab(t, base)
	p.Open("/session?id=" + sid)
	p.Click(`[data-testid="delete-button"]`)
	p.WaitFor("the dialog opens with Cancel focused", `document.querySelector('[data-testid="delete-dialog"]').open
		&& document.activeElement === document.querySelector('[data-testid="delete-cancel"]')`)
	if got := p.Text(`[data-testid="delete-dialog"]`); !strings.Contains(got, "9 steps will go") || !strings.Contains(got, "Delete 9 steps") {
		t.Errorf("delete dialog = %q; want the 9 steps that will go", got)
	}
	kept := func(how string) {
		t.Helper()
		p.WaitFor(how+" closes the dialog", `!document.querySelector('[data-testid="delete-dialog"]').open`)
		if _, err := s.store.Detail(context.Background(), sid, store.DetailQuery{}); err != nil {
			t.Fatalf("after %s, Detail = %v; want the session kept", how, err)
		}
		if p.Text(`[data-testid="session-title"]`) == "" || evalJS[string](p, `location.pathname`) != "/session" {
			t.Fatalf("after %s the session page is gone", how)
		}
	}
	p.Do("press Enter on the preselected Cancel", chromedp.KeyEvent("\r"))
	kept("Enter on Cancel")
	p.Click(`[data-testid="delete-button"]`)
	p.WaitFor("the dialog opens again", `document.querySelector('[data-testid="delete-dialog"]').open`)
	p.Click(`[data-testid="delete-cancel"]`)
	kept("a click on Cancel")

	p.Click(`[data-testid="delete-button"]`)
	p.WaitFor("the dialog opens again", `document.querySelector('[data-testid="delete-dialog"]').open`)
	p.Click(`[data-testid="delete-confirm"]`)
	p.WaitFor("deleting lands on the list", onTheList)
	if ids := p.listRows(); len(ids) != 1 || ids[0].ID != "kept-session" {
		t.Errorf("list after the delete = %+v; want only kept-session", ids)
	}
	if _, err := s.store.Detail(context.Background(), sid, store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Delete, Detail = %v; want ErrNotFound", err)
	}
	other.WaitFor("the other tab says the session is gone", `document.querySelector('[data-testid="gone"]').checkVisibility()`)
	if got := other.Text(`[data-testid="gone"]`); got != "This session is no longer in the service." {
		t.Errorf("gone banner = %q", got)
	}
	if other.Text(`[data-testid="session-title"]`) == "" {
		t.Error("the other tab dropped the session's content; want it kept under the banner")
	}
	other.Open("/session?id=" + sid)
	if got := other.Text(`[data-testid="missing"]`); !strings.Contains(got, "not in the service") {
		t.Errorf("the deleted session's page says %q; want that it is not in the service", got)
	}
}

// browserExport: the export panel lists every value the download masks,
// as the review route does, and links the download.
func browserExport(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "export-session"
	key := "AKIA" + "QWERTYUIOPASDFGH"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("Deploy")),
		stepRec(sid, 2, 1, at, "command", obj{"command": "env", "stdout": "AWS_ACCESS_KEY_ID=" + key + "\nHOME=/root"}),
	}
	s.mustPush(x, http.StatusCreated)
	base := serveBrowser(t, s)

	res, err := http.Get(base + "/api/sessions/" + sid + "/export/review")
	if err != nil {
		t.Fatal(err)
	}
	var review Review
	err = json.NewDecoder(res.Body).Decode(&review)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET export/review = %d, %v", res.StatusCode, err)
	}
	if len(review.Findings) == 0 {
		t.Fatal("the export review finds nothing; want the AWS key")
	}

	p := b.newTab(t, base)
	p.Open("/session?id=" + sid)
	p.Click(`[data-testid="export-button"]`)
	p.WaitFor("the export panel opens with its findings", `document.querySelector('[data-testid="export-dialog"]').open
		&& document.querySelector('[data-testid="export-findings"]') !== null`)
	type finding struct {
		Rule, Preview, Placeholder, Where string
	}
	got := evalJS[[]finding](p, `Array.from(document.querySelectorAll('[data-testid="export-finding"]'), r => {
		const c = Array.from(r.cells, c => c.textContent.replace(/\s+/g, ' ').trim());
		return { Rule: c[0], Preview: c[1], Placeholder: c[2], Where: c[3].replace(/\s*,\s*/g, ', ') } })`)
	var want []finding
	for _, f := range review.Findings {
		var where []string
		for _, w := range f.Where {
			if w.Seq != nil {
				where = append(where, fmt.Sprintf("step %d %s", *w.Seq, views.FieldLabel(w.Field)))
			} else {
				where = append(where, views.FieldLabel(w.Field))
			}
		}
		want = append(want, finding{Rule: f.Rule + " " + f.Confidence, Preview: f.Preview, Placeholder: f.Placeholder, Where: strings.Join(where, ", ")})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("export panel lists\n%+v\nwant the review's findings\n%+v", got, want)
	}
	var found bool
	for _, f := range got {
		found = found || strings.Contains(f.Where, "step 2 output")
	}
	if !found {
		t.Errorf("export panel %+v names no finding in step 2's stdout", got)
	}
	if panel := p.Text(`[data-testid="export-dialog"]`); strings.Contains(panel, key) {
		t.Error("the export panel shows the whole key")
	}
	if action := evalJS[string](p, `document.querySelector('[data-testid="export-findings"]').getAttribute('action')`); action != "/api/sessions/"+sid+"/export" {
		t.Errorf("download form action = %q; want /api/sessions/%s/export", action, sid)
	}
	// The Markdown button sends the same form with format=md: the file it
	// asks for is the Markdown report, masked.
	md := awaitJS[[3]string](p, `(async () => {
		const form = document.querySelector('[data-testid="export-findings"]');
		const button = form.querySelector('[data-testid="export-download-md"]');
		const query = new URLSearchParams(new FormData(form, button)).toString();
		const res = await fetch(form.getAttribute('action') + '?' + query);
		return [query, res.headers.get('Content-Type'), await res.text()];
	})()`)
	if md[0] != "format=md" || md[1] != "text/markdown; charset=utf-8" {
		t.Errorf("the Markdown button asks for ?%s and gets %s", md[0], md[1])
	}
	if !strings.Contains(md[2], review.Findings[0].Placeholder) || strings.Contains(md[2], key) {
		t.Errorf("the Markdown report does not mask the key as the panel says: %.300s", md[2])
	}
}

// browserExportCSP: the exported file carries its own Content-Security-
// Policy: opened as a page, its style sheet applies, and a script that got
// into the file does not run.
func browserExportCSP(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(newBatch("csp"), http.StatusCreated)
	rec := s.get("/api/sessions/csp/export")
	if rec.Code != http.StatusOK {
		t.Fatalf("export = %d", rec.Code)
	}
	file := strings.Replace(rec.Body.String(), "</body>", `<script>document.title = "script ran"</script></body>`, 1)
	p := openExport(t, b, file)
	if title := evalJS[string](p, `document.title`); title == "script ran" {
		t.Error("a script in the exported file ran")
	}
	// The script was refused by the file's own policy, which says so.
	refused := p.TakeCSPViolations()
	if len(refused) != 1 || !strings.Contains(refused[0], "inline script") {
		t.Errorf("CSP violations = %q; want the one injected inline script refused", refused)
	}
	// The file follows the reader's colour scheme, as the app does: dark
	// text on a light page, light text on a dark one.
	for _, scheme := range []string{"light", "dark"} {
		p.Emulate(1280, 800, scheme)
		c := evalJS[[2]float64](p, `(function(){
			const lum = c => { const [r, g, b] = c.match(/\d+/g).map(Number); return 0.2126*r + 0.7152*g + 0.0722*b; };
			const s = getComputedStyle(document.body);
			return [lum(s.color), lum(s.backgroundColor)];
		})()`)
		if text, page := c[0], c[1]; (scheme == "light") != (text < page) || math.Abs(text-page) < 100 {
			t.Errorf("%s: the export's text luminance %.0f on a page of %.0f; want %s text, far apart", scheme, text, page,
				map[string]string{"light": "dark", "dark": "light"}[scheme])
		}
	}
}

// openExport opens an exported file as a browser opens the downloaded
// file: served with no headers of the service, its own policy only.
func openExport(t *testing.T, b *browser, file string) *tab {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, file)
	}))
	t.Cleanup(srv.Close)
	p := b.newTab(t, srv.URL)
	p.Do("open the exported file", chromedp.Navigate(srv.URL))
	p.WaitFor("the export's style sheet applies", `document.readyState === 'complete' && getComputedStyle(document.body).maxWidth === '1100px'`)
	return p
}

// browserDemo: the demo shows no delete button and refuses ingest.
func browserDemo(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(richSession(), http.StatusCreated)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewHub(s.store, log)
	demo := Routes(Deps{Store: s.store, Hub: hub, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log, Demo: true})
	srv := httptest.NewServer(demo)
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close)

	p := b.newTab(t, srv.URL)
	p.Open("/session?id=rich-session-0001")
	p.WaitFor("the demo session page shows", `document.querySelector('[data-testid="session"]') !== null`)
	if n := p.Count(`[data-testid="delete-button"], [data-testid="delete-dialog"]`); n != 0 {
		t.Errorf("the demo shows a delete button or dialog (%d)", n)
	}
	if n := p.Count(`[data-testid="demo-tag"]`); n != 1 {
		t.Errorf("the demo shows %d demo tags; want 1", n)
	}
	if n := p.Count(`[data-testid="export-button"]`); n != 1 {
		t.Errorf("the demo shows %d export buttons; want 1", n)
	}

	before := s.snapshot()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/ingest", strings.NewReader(string(mustJSON(t, newBatch("demo-push")))))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("demo ingest = %d; want 403", res.StatusCode)
	}
	// A delete sent from the page itself is refused too.
	status := awaitJS[int](p, `fetch('/api/sessions/rich-session-0001', { method: 'DELETE' }).then(r => r.status)`)
	if status != http.StatusForbidden {
		t.Errorf("demo delete = %d; want 403", status)
	}
	if s.snapshot() != before {
		t.Error("the demo's refused writes changed the store")
	}
}

// browserScriptIsText: a step's <script> shows as text and never runs.
func browserScriptIsText(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "xss-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	evil := "<script>alert(1)</script>"
	img := `<img src=x onerror="alert(2)">`
	out := evil + img + countable(3000) // longer than the first delivery: opening loads the rest
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt(evil+" please")),
		stepRec(sid, 2, 1, at, "command", obj{"command": "echo '" + evil + "'", "stdout": out}),
		stepRec(sid, 3, 1, at, "other", obj{"tool_name": "Inject", "raw": obj{"html": evil + img}}),
	}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))

	p.Open("/")
	if got := p.listRows(); len(got) != 1 || got[0].Title != evil+" please" {
		t.Errorf("list title = %+v; want the prompt as text", got)
	}
	p.Open("/session?id=" + sid)
	if got := p.Text(`[data-testid="session-title"]`); got != evil+" please" {
		t.Errorf("session title = %q; want the prompt as text", got)
	}
	if got := p.Text(`#step-1 .line`); got != "user: "+evil+" please" {
		t.Errorf("step 1 line = %q; want the prompt as text", got)
	}
	p.Click("#step-2 > summary")
	p.WaitFor("step 2 loads its whole output", `document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent.length === `+fmt.Sprint(len(out)))
	if got := evalJS[string](p, `document.querySelector('#step-2 [data-testid="block-stdout"] pre').textContent`); got != out {
		t.Errorf("stdout shown = %.80q...; want it as text", got)
	}
	p.Click(`[data-testid="expand-all"]`)
	p.WaitFor("every step opens", `document.querySelectorAll('details.step[open]').length === 3`)
	if got := p.Text(`#step-3 [data-testid="block-Recorded"] pre`); !strings.Contains(got, `\u003cscript\u003e`) && !strings.Contains(got, evil) {
		t.Errorf("step 3 raw = %q; want the script as text", got)
	}
	if n := p.Count(`main script, main img`); n != 0 {
		t.Errorf("%d script or img elements in the page content; want none", n)
	}
	// A dialog blocks the page; give one a moment to show.
	p.Do("settle", chromedp.Sleep(300*time.Millisecond))
	if d := p.SeenDialogs(); len(d) != 0 {
		t.Errorf("JavaScript dialogs opened: %q", d)
	}
}

// TestBrowserExportSummary: in the exported file each figure of the
// summary sits beside its label, and the line under a figure (the cost and
// tokens added up from the session's usage records) under the figure, not
// in the next label's place; at 390 px, every step open, nothing is wider
// than the screen, however long a command line or a code span.
func TestBrowserExportSummary(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	v := newBatch("exp-sum")
	delete(v["session"].(obj), "metrics")
	long := "/" + strings.Repeat("a-long-folder-name/", 30) + "file.txt"
	v["steps"].(arr)[1].(obj)["payload"].(obj)["command"] = "cat " + long
	v["steps"].(arr)[0].(obj)["payload"].(obj)["text"] = "Read `" + long + "` and **`" + long + "`**"
	batch, err := store.ParseBatch(mustJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	batch.Usage = []store.UsageRecord{{ID: "1", At: "2026-01-02T10:00:05Z", Model: "claude-sonnet-4-5", ActorID: "exp-sum-root",
		TurnID: "exp-sum-t1", Source: store.UsageFromFile, Tokens: pricing.Tokens{Input: 1000, Output: 100}, Requests: 1}}
	if _, err := s.store.Apply(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	rec := s.get("/api/sessions/exp-sum/export")
	if rec.Code != http.StatusOK {
		t.Fatalf("export = %d", rec.Code)
	}
	p := openExport(t, b, rec.Body.String())
	type pair struct {
		Label, Value, Under string
		Beside, Below       bool
	}
	pairs := evalJS[[]pair](p, `Array.from(document.querySelectorAll('.summary dl > div'), d => {
		const [dt, dd, under] = d.children, r = e => e.getBoundingClientRect();
		return { Label: dt.textContent.trim(), Value: dd.textContent.trim(), Under: under ? under.textContent.trim() : '',
			Beside: Math.abs(r(dt).top - r(dd).top) < 2 && r(dd).left > r(dt).right,
			Below: !under || (r(under).top >= r(dd).bottom - 1 && Math.abs(r(under).left - r(dd).left) < 2) };
	})`)
	under := 0
	for _, q := range pairs {
		if !q.Beside || !q.Below {
			t.Errorf("summary %q: %q beside it %v, %q under it %v; want both", q.Label, q.Value, q.Beside, q.Under, q.Below)
		}
		if q.Under != "" {
			under++
		}
	}
	if len(pairs) < 6 || under == 0 {
		t.Errorf("summary = %+v; want its figures, one with a line under it", pairs)
	}
	p.Emulate(390, 844, "light")
	evalJS[bool](p, `document.querySelectorAll('details').forEach(d => d.open = true), true`)
	if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
		t.Errorf("the export at 390 px, every step open, is too wide: %v", wide)
	}
}
