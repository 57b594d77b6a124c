package handlers

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserListFilters: the list's filter form and chips combine, the
// filters stay in the URL and through a reload, and the agent chips'
// counts follow the filters and a later push, live.
func TestBrowserListFilters(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	push := func(sid, kind, root string, at time.Time) {
		t.Helper()
		s.mustPush(sessionBatch(sid, kind, "1.0.0", at, root, metricsOf(0.1, 1, 1, 1)), http.StatusCreated)
	}
	push("plain", "testagent", "/tmp/ws", start)
	push("alpha-one", "testagent", "/tmp/alpha", start.Add(time.Hour))
	push("alpha-two", "otheragent", "/tmp/alpha", start.Add(2*time.Hour))
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/")

	rows := `document.querySelectorAll('[data-testid="session-row"]').length`
	chips := func() []string { return p.Texts(`[data-testid="agent-chip"]`) }
	p.Type(`[data-testid="filter-workspace"]`, "alpha\r")
	p.WaitFor("the workspace filter keeps two sessions", `new URLSearchParams(location.search).get('workspace') === 'alpha' && `+rows+` === 2`)
	if got := chips(); len(got) != 2 || got[0] != "otheragent 1" || got[1] != "testagent 1" {
		t.Errorf("agent chips under workspace=alpha = %q; want otheragent 1, testagent 1", got)
	}

	combined := `new URLSearchParams(location.search).get('workspace') === 'alpha' && new URLSearchParams(location.search).get('agent') === 'testagent'`
	p.ClickUntil(`[data-testid="agent-chip"]:last-child`, "the agent chip keeps the workspace filter", combined+` && `+rows+` === 1`)
	p.Do("reload", chromedp.Reload())
	p.WaitFor("a reload keeps both filters", `document.readyState === 'complete' && `+combined+` && `+rows+` === 1
		&& document.querySelector('[data-testid="filter-workspace"]').value === 'alpha'`)

	p.Click(`[data-testid="filter-failed"]`)
	p.Click(`[data-testid="filter-apply"]`)
	p.WaitFor("the form keeps the agent and adds failures", combined+` && new URLSearchParams(location.search).get('failed') === '1' && `+rows+` === 0`)
	// Back from a script, not chromedp.NavigateBack: that waits for a load
	// event, which a page restored from the back/forward cache never fires
	// (CI once waited out its deadline there).
	evalJS[bool](p, `(setTimeout(() => history.back(), 0), true)`)
	p.WaitFor("back to the two filters", `document.readyState === 'complete' && `+combined+` && !location.search.includes('failed') && `+rows+` === 1`)

	push("alpha-three", "testagent", "/tmp/alpha-3", start.Add(3*time.Hour))
	p.WaitFor("a push updates the rows and the chips' counts live", rows+` === 2
		&& Array.from(document.querySelectorAll('[data-testid="agent-chip"]'), c => c.textContent).join(',') === 'otheragent 1,testagent 2'`)
}
