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

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/store"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserLook drives the review app's reading and layout in Chromium:
// no page scrolls sideways on a phone, the dark theme applies, the list
// fits 15 sessions on a laptop screen, messages are Markdown with agent
// HTML inert, and times show in the viewer's zone. With
// SERVICE_SCREENSHOTS=<dir> (`just screenshots`) it also writes PNGs of the
// pages at 1280 and 390 px, light and dark, into dir.
func TestBrowserLook(t *testing.T) {
	b := startBrowser(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *browser)
	}{
		{"Narrow", browserNarrow},
		{"Dark", browserDark},
		{"ListDensity", browserListDensity},
		{"Markdown", browserMarkdown},
		{"ToolRenderings", browserToolRenderings},
		{"LocalTime", browserLocalTime},
		{"ExportKeep", browserExportKeep},
		{"Disabled", browserDisabled},
		{"LongCommand", browserLongCommand},
		{"Screenshots", browserScreenshots},
		{"Accessible", browserAccessible},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, b) })
	}
}

const showcaseID = "showcase-0001"

// lookService is a service holding 24 sessions of four agents and the
// showcase session.
func lookService(t *testing.T) *testService {
	s := newTestService(t)
	now := time.Now().UTC()
	manySessions(s, 24, now)
	s.mustPush(showcaseSession(t, showcaseID, now.Add(-12*time.Minute)), http.StatusCreated)
	if _, err := s.store.AddNote(context.Background(), showcaseID, store.NoteInput{Seq: 2, Author: "Ann",
		Text: "Read the whole test file before changing it: the failing case is further down."}); err != nil {
		t.Fatal(err)
	}
	return s
}

// eachLook shows p at each size and colour scheme the screenshots are
// taken at (1280 × 800 and 390 × 844, light and dark) and calls fn with
// the name's suffix for it, e.g. "-390-dark".
func (p *tab) eachLook(fn func(suffix string)) {
	p.T.Helper()
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"1280", 1280, 800}, {"390", 390, 844}} {
		for _, scheme := range []string{"light", "dark"} {
			p.Emulate(w.width, w.height, scheme)
			fn("-" + w.name + "-" + scheme)
		}
	}
}

// openAllSteps opens every step of the session page and waits for their
// bodies, so the widest content is on the page.
func (p *tab) openAllSteps() {
	p.T.Helper()
	p.Click(`#expand-all`)
	p.WaitFor("every step is open", `Array.from(document.querySelectorAll('details.step')).every(d => d.open)`)
}

// tooWide lists the elements, by tag, class and a bit of text, that reach
// past the right edge of the viewport without a scrolling box around them,
// and whether the document scrolls sideways.
const tooWide = `(function(){
	const w = document.documentElement.clientWidth, out = [];
	if (document.documentElement.scrollWidth > w) out.push('the document scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + w);
	for (const e of document.body.querySelectorAll('*')) {
		const r = e.getBoundingClientRect();
		if (r.width === 0 || r.right <= w + 0.5) continue;
		let clipped = false;
		for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
			if (getComputedStyle(a).overflowX !== 'visible') { clipped = true; break; }
		}
		if (e.closest('dialog:not([open])')) continue;
		if (!clipped) out.push(e.tagName.toLowerCase() + '.' + e.className + ' (' + Math.round(r.right) + 'px): ' + e.textContent.trim().slice(0, 40));
	}
	return out.slice(0, 10);
})()`

// browserNarrow: at 390 px nothing is wider than the screen, on the list,
// a session with every step open and the search page, measured in the
// browser.
func browserNarrow(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	p.Emulate(390, 844, "light")
	for _, page := range []string{"/", "/search?q=parse", "/session?id=" + showcaseID} { // the session last: the export panel below opens on it
		p.Open(page)
		if strings.HasPrefix(page, "/session") {
			p.openAllSteps()
			p.WaitFor("the diff shows", `document.querySelector('[data-testid="diff"]') !== null`)
		}
		if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
			t.Errorf("%s at 390 px: wider than the screen:\n%s", page, strings.Join(wide, "\n"))
		}
	}
	p.Click(`[data-testid="export-button"]`)
	p.WaitFor("the export panel lists its findings", `document.querySelector('[data-testid="export-finding"]') !== null`)
	if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
		t.Errorf("the export panel at 390 px: wider than the screen:\n%s", strings.Join(wide, "\n"))
	}
	p.Click(`[data-testid="export-dialog"] form[method="dialog"] button`)
	// The edit's line names its file in the workspace, whole.
	show := showcaseSession(t, showcaseID, time.Now())
	root := show["session"].(obj)["workspace"].(obj)["root"].(string)
	edit := show["steps"].(arr)[4].(obj)["payload"].(obj)["path"].(string)
	if h, want := p.Text(`[data-testid="step"][data-seq="5"] .line`), "edit "+strings.TrimPrefix(edit, root+"/"); h != want || len(want) >= len("edit "+edit) {
		t.Errorf("step summary at 390 px = %q; want %q, readable, not squeezed", h, want)
	}
	if w := evalJS[float64](p, `document.querySelector('[data-testid="step"][data-seq="5"] .line').getBoundingClientRect().width`); w < 250 {
		t.Errorf("step summary at 390 px is %.0f px wide; want a line of its own", w)
	}
}

// backgroundLuma is the relative luminance (0 to 1) of the page's background.
const backgroundLuma = `(function(){
	const m = getComputedStyle(document.body).backgroundColor.match(/\d+(\.\d+)?/g).map(Number);
	return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
})()`

// browserDark: the dark theme applies when the system asks for it, and
// the light one otherwise; text stays readable on both.
func browserDark(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	for _, c := range []struct {
		scheme   string
		dark     bool
		pageLuma func(float64) bool
	}{
		{"dark", true, func(l float64) bool { return l < 0.2 }},
		{"light", false, func(l float64) bool { return l > 0.8 }},
	} {
		p.Emulate(1280, 800, c.scheme)
		for _, page := range []string{"/", "/session?id=" + showcaseID} {
			p.Open(page)
			if l := evalJS[float64](p, backgroundLuma); !c.pageLuma(l) {
				t.Errorf("%s in %s: background luminance %.2f; want the %s theme", page, c.scheme, l, c.scheme)
			}
			textLuma := evalJS[float64](p, `(function(){
				const m = getComputedStyle(document.body).color.match(/\d+(\.\d+)?/g).map(Number);
				return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255; })()`)
			if (textLuma > 0.5) != c.dark {
				t.Errorf("%s in %s: text luminance %.2f; want it to contrast with the background", page, c.scheme, textLuma)
			}
		}
	}
}

// browserListDensity: at 1280x800 the list shows at least 15 sessions
// without scrolling.
func browserListDensity(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	p.Emulate(1280, 800, "light")
	p.Open("/")
	visible := evalJS[int](p, `Array.from(document.querySelectorAll('[data-testid="session-row"]'))
		.filter(r => r.getBoundingClientRect().bottom <= window.innerHeight).length`)
	if visible < 15 {
		t.Errorf("%d sessions visible at 1280x800; want at least 15", visible)
	}
	t.Logf("%d sessions visible at 1280x800", visible)
	if h := p.Text(`h1`); h != "Sessions" {
		t.Errorf("list heading = %q; want Sessions", h)
	}
}

// browserMarkdown: a message is rendered as Markdown, with its code
// highlighted, its links marked nofollow and its images as links, and
// the HTML an agent wrote in it shows as text and never runs.
func browserMarkdown(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + showcaseID + "#step-9")
	p.WaitFor("the step's body loads", `document.querySelector('#step-9 .md h4') !== null`)
	md := `#step-9 [data-testid="markdown"]`
	if got := p.Text(md + ` h4`); got != "Fixed" {
		t.Errorf("heading = %q; want Fixed", got)
	}
	if got := p.Text(md + ` strong`); got != "returns" {
		t.Errorf("bold = %q; want returns", got)
	}
	if n := p.Count(md + ` li`); n != 2 {
		t.Errorf("%d list items; want 2", n)
	}
	if n := p.Count(md + ` pre.code [class^="hl-"]`); n == 0 {
		t.Error("the Go code block has no highlighted tokens")
	}
	if rel := evalJS[string](p, `document.querySelector('`+md+` a[href="https://example.com/issues/1"]').rel`); rel != "noopener noreferrer nofollow" {
		t.Errorf("link rel = %q; want noopener noreferrer nofollow", rel)
	}
	if n := p.Count(`#step-9 img, #step-9 script`); n != 0 {
		t.Errorf("%d img or script elements in the message; want none", n)
	}
	if got := p.Text(md + ` a.image-link`); got != "a chart" {
		t.Errorf("image = %q; want a link named a chart", got)
	}
	text := p.Text(md)
	for _, want := range []string{"<script>window.agentRan = true</script>", `<img src="https://example.com/x.png"`} {
		if !strings.Contains(text, want) {
			t.Errorf("message text = %q; want the agent's HTML %q shown as text", text, want)
		}
	}
	if ran := evalJS[bool](p, `window.agentRan === true`); ran {
		t.Error("the agent's HTML ran in the page")
	}
	if got := p.Text(`[data-testid="turn"][data-number="1"] [data-testid="turn-prompt"] strong`); got != "empty input" {
		t.Errorf("prompt bold = %q; want the user's Markdown rendered", got)
	}
}

// browserToolRenderings: the common tools show for what they are, with
// the recorded input one click away.
func browserToolRenderings(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + showcaseID)
	p.openAllSteps()
	p.WaitFor("the todo list shows", `document.querySelectorAll('#step-2 [data-testid="todos"] li').length > 0`)
	if open := evalJS[bool](p, `document.querySelector('#step-2 [data-testid="raw-input"]').open`); open {
		t.Error("the recorded input is open; want it one click away")
	}
	p.Click(`#step-2 [data-testid="raw-input"] > summary`)
	p.WaitFor("the recorded input opens", `document.querySelector('#step-2 [data-testid="raw-input"]').open`)
}

// browserLocalTime: times show in the viewer's time zone.
func browserLocalTime(t *testing.T, b *browser) {
	s := newTestService(t)
	started := time.Date(2026, 2, 11, 20, 56, 19, 0, time.UTC)
	s.mustPush(showcaseSession(t, showcaseID, started), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Do("set the time zone", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	p.Open("/")
	if got := p.Text(`[data-testid="started"]`); got != "2026-02-12 05:56" {
		t.Errorf("list start in Tokyo = %q; want 2026-02-12 05:56", got)
	}
	p.Open("/session?id=" + showcaseID)
	if got := p.Text(`[data-testid="summary-time"] time`); got != "2026-02-12 05:56" {
		t.Errorf("session start in Tokyo = %q; want 2026-02-12 05:56", got)
	}
	if got := p.Text(`[data-testid="turn"][data-number="1"] h3 time`); got != "05:56:21" {
		t.Errorf("turn time in Tokyo = %q; want 05:56:21", got)
	}
}

// browserExportKeep: in the export panel a candidate value can be ticked
// to stay unmasked and a known-format key cannot; the download made from
// the panel keeps the ticked value and its manifest says so; a step named
// in the panel is a link to it.
func browserExportKeep(t *testing.T, b *browser) {
	s := newTestService(t)
	s.mustPush(keepBatch("k1"), http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=k1")
	p.Click(`[data-testid="export-button"]`)
	p.WaitFor("the export panel lists its findings", `document.querySelectorAll('[data-testid="export-finding"]').length === 3`)
	type row struct {
		Rule     string `json:"rule"`
		Keepable bool   `json:"keepable"`
		Always   bool   `json:"always"`
	}
	rows := evalJS[[]row](p, `Array.from(document.querySelectorAll('[data-testid="export-finding"]'), r => ({
		rule: r.cells[0].textContent.trim().split(/\s+/)[0],
		keepable: r.querySelector('[data-testid="keep"]') !== null,
		always: r.querySelector('[data-testid="always-masked"]') !== null }))`)
	want := []row{{"generic-secret", true, false}, {"aws-access-key", false, true}, {"generic-secret", true, false}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("panel rows = %+v; want %+v", rows, want)
	}
	if n := p.Count(`[data-testid="keep"]:checked`); n != 0 {
		t.Errorf("%d values ticked to keep before any choice; want none", n)
	}
	p.Click(`[data-testid="export-finding"] [data-testid="keep"][value="[generic-secret-1]"]`)
	report := awaitJS[string](p, `(async () => {
		const f = document.querySelector('[data-testid="export-findings"]');
		const res = await fetch(f.action + '?' + new URLSearchParams(new FormData(f)));
		return res.text(); })()`)
	if !strings.Contains(report, "Base.url_encode64(:crypto") || strings.Contains(report, fakeAWS) {
		t.Error("the download made from the panel does not keep the ticked value alone")
	}
	if !strings.Contains(report, "kept unmasked by the reviewer") {
		t.Error("the download's manifest does not record the kept value")
	}
	p.Click(`[data-testid="finding-step"][href="#step-2"]`)
	p.WaitFor("the link closes the panel and opens the step", `!document.querySelector('[data-testid="export-dialog"]').open
		&& document.querySelector('#step-2').open`)
}

// browserLongCommand: a command of many lines (a commit and its message)
// shows its first three in the Commands run table, its whole text still
// there, for a copy or a screen reader.
func browserLongCommand(t *testing.T, b *browser) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %d of the commit message", i+1))
	}
	command := "git commit -m \"$(cat <<'EOF'\n" + strings.Join(lines, "\n") + "\nEOF\n)\""
	x := sessionBatch("long-command", "testagent", "1.0.0", at, "/tmp/ws", metricsOf(0.1, 1, 1, 1))
	x["turns"] = arr{turnRec("long-command", 1, at, "")}
	x["steps"] = arr{stepRec("long-command", 1, 1, at, "message", userPrompt("commit it")),
		stepRec("long-command", 2, 1, at, "command", obj{"command": command, "stdout": "ok"})}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	for _, w := range []int64{1280, 390} {
		p.Emulate(w, 844, "light")
		p.Open("/session?id=long-command")
		const cell = `document.querySelector('[data-testid="command-step"] code')`
		if got := evalJS[string](p, cell+`.textContent`); got != command {
			t.Errorf("at %d px the cell's text is %q; want the whole command", w, got)
		}
		lines := evalJS[float64](p, `(function(){ const c = `+cell+`; return c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).lineHeight) })()`)
		if !(lines >= 2.5 && lines <= 3.5) { // NaN too: a line height not in pixels
			t.Errorf("at %d px the cell shows %.1f lines of the command; want 3", w, lines)
		}
	}
}

// browserDisabled: a disabled button looks disabled: faded, with a
// not-allowed cursor, unlike an enabled one.
func browserDisabled(t *testing.T, b *browser) {
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + showcaseID)
	type look struct {
		Opacity string `json:"opacity"`
		Cursor  string `json:"cursor"`
	}
	const lookOf = `(function(){ const c = getComputedStyle(document.getElementById('export-button'));
		return { opacity: c.opacity, cursor: c.cursor } })()`
	enabled := evalJS[look](p, lookOf)
	p.Do("disable the export button", chromedp.Evaluate[chromedp.Void](`document.getElementById('export-button').disabled = true`))
	disabled := evalJS[look](p, lookOf)
	if enabled.Opacity != "1" || disabled.Opacity == "1" || disabled.Cursor != "not-allowed" {
		t.Errorf("export button enabled %+v, disabled %+v; want a disabled one faded with a not-allowed cursor", enabled, disabled)
	}
}

// browserScreenshots writes the screenshots of docs/screenshots (list,
// session, diff, message, tools, search, export, usage) when
// SERVICE_SCREENSHOTS names a folder.
func browserScreenshots(t *testing.T, b *browser) {
	dir := os.Getenv("SERVICE_SCREENSHOTS")
	if dir == "" {
		t.Skip("set SERVICE_SCREENSHOTS=<dir> to write screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := lookService(t)
	p := b.newTab(t, serveBrowser(t, s))
	shot := func(name string) {
		t.Helper()
		p.WaitFor("the page is live", `document.getElementById('live-pill').textContent === 'live'`)
		p.Shoot(dir, name)
	}
	p.eachLook(func(suffix string) {
		p.Open("/")
		shot("list" + suffix)
		p.Open("/session?id=" + showcaseID)
		shot("session" + suffix)
		p.Open("/session?id=" + showcaseID + "#step-5")
		p.WaitFor("the diff shows", `document.querySelector('#step-5 [data-testid="diff"]') !== null`)
		shot("diff" + suffix)
		p.Open("/session?id=" + showcaseID + "#step-9")
		p.WaitFor("the message shows", `document.querySelector('#step-9 .md h4') !== null`)
		shot("message" + suffix)
		p.openAllSteps()
		p.WaitFor("the tools show", `document.querySelector('#step-8 [data-testid="tool-task"]') !== null`)
		p.Do("scroll to the tools", chromedp.Evaluate[chromedp.Void](`document.querySelector('#step-2').scrollIntoView()`))
		shot("tools" + suffix)
		p.Open("/search?q=parse")
		p.WaitFor("the hits show", `document.querySelector('mark') !== null`)
		shot("search" + suffix)
	})
	// The exported report of the showcase session, opened as a file.
	exp := s.get("/api/sessions/" + showcaseID + "/export")
	if exp.Code != http.StatusOK {
		t.Fatalf("export = %d", exp.Code)
	}
	p = openExport(t, b, exp.Body.String())
	p.eachLook(func(suffix string) { p.Shoot(dir, "export"+suffix) })
	// The usage page: the sessions above came over the ingest API, which
	// carries no usage records, so it shows imported transcripts' instead.
	u, period := usageLookService(t)
	p = b.newTab(t, serveBrowser(t, u))
	p.eachLook(func(suffix string) {
		p.Open("/usage?" + period)
		p.WaitFor("the usage shows", `document.querySelector('[data-testid="usage-row"]') !== null`)
		shot("usage" + suffix)
		p.Do("scroll to the model chart", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="usage-chart-model"]').scrollIntoView()`))
		shot("usage-rows" + suffix)
	})
}

// browserAccessible: axe-core (Audit) finds nothing to fix on the app's
// pages and the exported report, at 1280 and 390 px, light and dark: the
// list with a verdict, the showcase session with every step open (its
// Markdown, diff, tools, note and verdict), a search with hits, the usage
// page and the report.
func browserAccessible(t *testing.T, b *browser) {
	s := lookService(t)
	if err := s.store.SetVerdict(context.Background(), showcaseID, store.Verdict{State: "needs_attention", Reviewer: "Ann", Note: "skipped a test"}); err != nil {
		t.Fatal(err)
	}
	p := b.newTab(t, serveBrowser(t, s))
	audit := func(p *tab, page string) {
		t.Helper()
		for _, v := range p.Audit() {
			t.Errorf("%s: %s", page, v)
		}
	}
	p.eachLook(func(look string) {
		p.Open("/")
		audit(p, "list"+look)
		p.Open("/session?id=" + showcaseID)
		p.openAllSteps()
		audit(p, "session"+look)
		p.Open("/search?q=parse")
		audit(p, "search"+look)
	})
	u, period := usageLookService(t)
	p = b.newTab(t, serveBrowser(t, u))
	p.eachLook(func(look string) {
		p.Open("/usage?" + period)
		audit(p, "usage"+look)
	})
	exp := s.get("/api/sessions/" + showcaseID + "/export")
	if exp.Code != http.StatusOK {
		t.Fatalf("export = %d", exp.Code)
	}
	p = openExport(t, b, exp.Body.String())
	p.eachLook(func(look string) { audit(p, "export"+look) })
}

// usageLookService is a service holding the Claude Code and Codex
// transcripts of the adapters' test data, imported, with the period their
// usage records span as since and until parameters.
func usageLookService(t *testing.T) (*testService, string) {
	s := newTestService(t)
	for _, imp := range []struct {
		agent adapters.Agent
		roots []string
	}{
		{claudecode.Agent, []string{"../adapters/claudecode/testdata/spotter", "../adapters/claudecode/testdata/agentlogs_crud.jsonl",
			"../adapters/claudecode/testdata/agentlogs_todos.jsonl", "../adapters/claudecode/testdata/agentlogs_clear_compact.jsonl"}},
		{codex.Agent, []string{"../adapters/codex/testdata/agentlogs_crud_rollout.jsonl"}},
	} {
		im := adapters.Importer{Store: s.store}
		if _, err := im.Run(context.Background(), imp.agent, imp.roots); err != nil {
			t.Fatalf("import %s = %v", imp.agent.Kind, err)
		}
	}
	var rep UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=day&since=2000-01-01").Body.Bytes(), &rep); err != nil || len(rep.Rows) == 0 {
		t.Fatalf("the imported transcripts' usage by day = %+v, %v; want some days", rep.Rows, err)
	}
	return s, "since=" + rep.Rows[0].Key + "&until=" + rep.Rows[len(rep.Rows)-1].Key
}
