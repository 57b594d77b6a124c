package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/agentreview/service/store"
)

// shownUsageRows reads the rows of the table in the element sel as the page
// shows them, numbers without their commas.
func shownUsageRows(p *tab, sel string) []map[string]string {
	p.T.Helper()
	return evalJS[[]map[string]string](p, `Array.from(document.querySelectorAll(`+browsertest.JSString(sel+` [data-testid="usage-row"]`)+`)).map(r => {
		const o = {key: r.dataset.key};
		for (const c of r.querySelectorAll('td[data-field]')) o[c.dataset.field] = c.textContent.trim().replaceAll(',', '');
		return o; })`)
}

// usageRowFields is a JSON row's figures as the page shows them.
func usageRowFields(r store.UsageRow) map[string]string {
	return map[string]string{
		"key": r.Key, "input": fmt.Sprint(r.Tokens.Input), "output": fmt.Sprint(r.Tokens.Output),
		"cache_read": fmt.Sprint(r.Tokens.CacheRead), "cache_creation": fmt.Sprint(r.Tokens.CacheCreation),
		"total": fmt.Sprint(r.Tokens.Total()), "api_requests": fmt.Sprint(r.APIRequests),
	}
}

// TestBrowserUsagePage: the top bar links to /usage; its charts' tables and
// totals show the numbers GET /api/usage gives for the same period, the
// estimate is marked with the pricing date in its tooltip, a model without
// a price says so; at 390 px nothing is wider than the screen, and the
// dark theme applies.
func TestBrowserUsagePage(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	mustUsageFixture(t, s)
	p := b.newTab(t, serveBrowser(t, s))
	p.Emulate(1280, 800, "light")

	p.Open("/")
	p.Click(`[data-testid="usage-link"]`)
	p.WaitFor("the usage page opens", `location.pathname === '/usage' && document.querySelector('[data-testid="usage-page"]') !== null`)

	const period = "since=2026-03-01&until=2026-03-31"
	p.Open("/usage?" + period)
	for _, group := range []string{"day", "model", "agent", "project", "session"} {
		var rep UsageReport
		if err := json.Unmarshal(s.get("/api/usage?group="+group+"&"+period).Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		sel := `[data-testid="usage-chart-` + group + `"]`
		if group == "session" {
			sel = `[data-testid="usage-sessions"]`
		}
		shown := shownUsageRows(p, sel)
		if len(shown) != len(rep.Rows) {
			t.Fatalf("%s: %d rows shown; want the %d of /api/usage", group, len(shown), len(rep.Rows))
		}
		for i, r := range rep.Rows {
			want := usageRowFields(r)
			for k, v := range want {
				if shown[i][k] != v {
					t.Errorf("%s row %d %s = %q; want %q as /api/usage", group, i, k, shown[i][k], v)
				}
			}
		}
		if group == "day" {
			tot := map[string]string{
				"input": "usage-total-input", "output": "usage-total-output", "cache_read": "usage-total-cache-read",
				"cache_creation": "usage-total-cache-creation", "api_requests": "usage-total-requests",
			}
			want := usageRowFields(rep.Total)
			for k, id := range tot {
				if got := strings.ReplaceAll(p.Text(`[data-testid="`+id+`"]`), ",", ""); got != want[k] {
					t.Errorf("total %s = %q; want %q as /api/usage", k, got, want[k])
				}
			}
			// Each day's bar is stacked by model, each segment the model's
			// tokens that day as /api/usage?model= gives them.
			segs := evalJS[[]map[string]string](p, `Array.from(document.querySelectorAll('[data-testid="usage-chart-day"] svg rect[data-series]')).map(r => ({series: r.dataset.series, tokens: r.dataset.tokens}))`)
			var wantSegs []map[string]string
			for _, d := range rep.Rows {
				var byModel UsageReport
				for _, m := range []string{"gpt-5", "claude-sonnet-4-5", "claude-opus-4-1", "no-such-model"} {
					if err := json.Unmarshal(s.get("/api/usage?group=day&since="+d.Key+"&until="+d.Key+"&model="+m).Body.Bytes(), &byModel); err != nil {
						t.Fatal(err)
					}
					n := int64(0)
					if len(byModel.Rows) == 1 {
						n = byModel.Rows[0].Tokens.Total()
					}
					wantSegs = append(wantSegs, map[string]string{"series": m, "tokens": fmt.Sprint(n)})
				}
			}
			if fmt.Sprint(segs) != fmt.Sprint(wantSegs) {
				t.Errorf("day segments = %v; want %v as /api/usage by model", segs, wantSegs)
			}
			title := evalJS[string](p, `document.querySelector('[data-testid="usage-total-cost"] [data-testid="cost-estimated"]').title`)
			if !strings.Contains(title, rep.Pricing.AsOf) || !strings.HasPrefix(p.Text(`[data-testid="usage-total-cost"] [data-testid="cost-estimated"]`), "≈ $") {
				t.Errorf("total estimate tooltip = %q; want it marked ≈ with the pricing date %s", title, rep.Pricing.AsOf)
			}
		}
	}
	if got := p.Text(`[data-testid="usage-chart-model"] [data-key="no-such-model"] [data-testid="cost-unpriced"]`); got != "no price for no-such-model" {
		t.Errorf("unpriced model's cost = %q; want it to say it has no price", got)
	}
	if got := evalJS[string](p, `document.getElementById(document.querySelector('[data-testid="usage-chart-model"] .usage-rows').getAttribute('aria-labelledby')).textContent`); got != "Tokens by model" {
		t.Errorf("model chart's accessible name = %q; want its title", got)
	}

	p.Emulate(390, 844, "light")
	p.Open("/usage?" + period)
	if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
		t.Errorf("/usage at 390 px: wider than the screen:\n%s", strings.Join(wide, "\n"))
	}
	// The row charts' labels keep the page's type size on a phone (as SVG
	// text they shrank with the chart, to 7 px: hence the scale of an SVG
	// element's user units on the screen).
	if small := evalJS[[]string](p, `Array.from(document.querySelectorAll('.usage-label')).filter(l => parseFloat(getComputedStyle(l).fontSize) * (l.getScreenCTM ? l.getScreenCTM().a : 1) < 12).map(l => l.textContent)`); len(small) > 0 {
		t.Errorf("/usage at 390 px: chart labels under 12 px: %q", small)
	}
	p.Emulate(1280, 800, "dark")
	p.Open("/usage?" + period)
	if l := evalJS[float64](p, backgroundLuma); l > 0.2 {
		t.Errorf("/usage in dark: background luminance %.2f; want the dark theme", l)
	}
	if c := evalJS[string](p, `getComputedStyle(document.querySelector('.usage-label')).color`); c == "rgb(0, 0, 0)" {
		t.Errorf("chart labels in dark are %s; want them readable on the dark background", c)
	}
}

// TestBrowserSessionUsage: the session page shows the session's tokens per
// model and in total, and each turn's tokens and requests in its header,
// equal to the session detail JSON; the estimate is marked with the pricing
// date, a model without a price says so; at 390 px nothing is wider than
// the screen, and the dark theme applies.
func TestBrowserSessionUsage(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	mustUsageFixture(t, s)
	var d struct {
		Usage store.Usage `json:"usage"`
	}
	if err := json.Unmarshal(s.get("/api/sessions/ub").Body.Bytes(), &d); err != nil || len(d.Usage.Turns) != 1 {
		t.Fatalf("GET /api/sessions/ub usage = %+v, %v; want one turn's usage", d.Usage, err)
	}
	p := b.newTab(t, serveBrowser(t, s))
	p.Emulate(1280, 800, "light")
	p.Open("/session?id=ub")

	shown := shownUsageRows(p, `[data-testid="session-usage"]`)
	if len(shown) != len(d.Usage.Models)+1 {
		t.Fatalf("%d usage rows shown; want %d models and the total", len(shown), len(d.Usage.Models))
	}
	rows := make([]store.UsageRow, 0, len(shown))
	for _, m := range d.Usage.Models {
		rows = append(rows, store.UsageRow{Key: m.Model, Tokens: m.Tokens, APIRequests: m.APIRequests})
	}
	rows = append(rows, store.UsageRow{Key: "Total", Tokens: d.Usage.Tokens, APIRequests: d.Usage.APIRequests})
	for i, r := range rows {
		for k, v := range usageRowFields(r) {
			if shown[i][k] != v {
				t.Errorf("usage row %d %s = %q; want %q as the session detail", i, k, shown[i][k], v)
			}
		}
	}
	total := `[data-testid="session-usage"] [data-key="Total"]`
	title := evalJS[string](p, `document.querySelector(`+browsertest.JSString(total+` [data-testid="cost-estimated"]`)+`).title`)
	if !strings.Contains(title, d.Usage.Pricing.AsOf) || !strings.HasPrefix(p.Text(total+` [data-testid="cost-estimated"]`), "≈ $") {
		t.Errorf("session estimate tooltip = %q; want it marked ≈ with the pricing date %s", title, d.Usage.Pricing.AsOf)
	}
	if got := p.Text(`[data-testid="session-usage"] [data-key="no-such-model"] [data-testid="cost-unpriced"]`); got != "no price for no-such-model" {
		t.Errorf("unpriced model's cost = %q; want it to say it has no price", got)
	}
	tu := d.Usage.Turns[0]
	want := strings.ReplaceAll(fmt.Sprintf("%s tokens · %d requests", fmt.Sprint(tu.Tokens.Total()), tu.APIRequests), ",", "")
	if got := strings.ReplaceAll(p.Text(`[data-testid="turn"] [data-testid="turn-tokens"]`), ",", ""); got != want {
		t.Errorf("turn header tokens = %q; want %q as the session detail", got, want)
	}

	p.Emulate(390, 844, "light")
	p.Open("/session?id=ub")
	if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
		t.Errorf("/session at 390 px: wider than the screen:\n%s", strings.Join(wide, "\n"))
	}
	p.Emulate(1280, 800, "dark")
	p.Open("/session?id=ub")
	if l := evalJS[float64](p, backgroundLuma); l > 0.2 {
		t.Errorf("/session in dark: background luminance %.2f; want the dark theme", l)
	}
}
