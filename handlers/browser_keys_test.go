package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// key presses k on whatever has the focus, as a keyboard does: the key
// down carries the text, so a handled (default-prevented) key types nothing,
// as in a browser driven by a person (chromedp.KeyEvent sends the text as a
// separate char event that types whatever the page did).
func (p *tab) key(k string) {
	p.T.Helper()
	p.Do("press "+k, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var down, up input.DispatchKeyEventParams
		for _, e := range kb.Encode([]rune(k)[0]) {
			switch e.Type {
			case kb.KeyDown:
				down = *e
			case kb.KeyChar:
				down.Text, down.UnmodifiedText = e.Text, e.UnmodifiedText
			case kb.KeyUp:
				up = *e
			}
		}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	}))
}

// TestBrowserKeys drives every keyboard shortcut: ? lists them in a named
// dialog, / focuses the top bar's search (and a key typed there stays
// text), j/k move through the list's rows, the selection outlives a live
// refresh and Enter opens it, j, o/O and [/] work the timeline, a writes a
// note on the selected step, g then u
// goes to the usage page and g then s back to the sessions, and the top
// bar's search box searches.
func TestBrowserKeys(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	s.mustPush(manyTurns("keys-older", 4, start), http.StatusCreated)
	s.mustPush(manyTurns("keys-newer", 4, start.Add(time.Hour)), http.StatusCreated)
	base := serveBrowser(t, s)
	p := b.newTab(t, base)
	p.Open("/")

	p.key("?")
	p.WaitFor("? opens the shortcuts dialog", `document.getElementById('keys-dialog').open`)
	if got := evalJS[string](p, `document.getElementById(document.getElementById('keys-dialog').getAttribute('aria-labelledby')).textContent`); got != "Keyboard shortcuts" {
		t.Errorf("dialog's name = %q; want Keyboard shortcuts", got)
	}
	if n := p.Count(`[data-testid="keys-dialog"] kbd`); n < 10 {
		t.Errorf("the dialog shows %d keys; want every shortcut", n)
	}
	p.key("\x1b")
	p.WaitFor("Escape closes it", `!document.getElementById('keys-dialog').open`)

	p.key("/")
	p.WaitFor("/ focuses the search box", `document.activeElement === document.querySelector('[data-testid="topbar-search"]')`)
	p.key("j")
	p.key("?")
	if got := evalJS[string](p, `document.activeElement.value`); got != "j?" {
		t.Errorf("typed in the search box: %q; want j? as text", got)
	}
	if n := p.Count(`.kb-current, dialog[open]`); n != 0 {
		t.Errorf("keys typed in a field moved or opened %d things; want none", n)
	}
	evalJS[bool](p, `document.activeElement.blur(), true`)

	row := func(i int) string {
		return `document.querySelectorAll('[data-testid="session-row"]')[` + string(rune('0'+i)) + `]`
	}
	p.key("j")
	p.key("j")
	p.WaitFor("j j selects the second row", row(1)+`.classList.contains('kb-current') && `+row(1)+`.contains(document.activeElement)`)
	p.key("k")
	p.WaitFor("k selects the first row", row(0)+`.classList.contains('kb-current') && !`+row(1)+`.classList.contains('kb-current')`)
	s.mustPush(manyTurns("keys-oldest", 1, start.Add(-time.Hour)), http.StatusCreated)
	p.WaitFor("a live refresh redraws the rows and keeps the selection", `document.querySelectorAll('[data-testid="session-row"]').length === 3 && `+row(0)+`.classList.contains('kb-current')`)
	evalJS[bool](p, `document.activeElement.blur(), true`)
	p.key("\r")
	p.WaitFor("Enter opens the newest session", `location.pathname === '/session' && document.readyState === 'complete' && document.querySelector('[data-testid="session"]') !== null
		&& document.querySelector('[data-testid="session"]').dataset.sessionId === 'keys-newer'`)

	p.key("j")
	p.WaitFor("j selects the first step", `document.querySelector('details.step').classList.contains('kb-current')`)
	p.key("o")
	p.WaitFor("o expands every step", `document.querySelectorAll('details.step:not([open])').length === 0`)
	p.key("O")
	p.WaitFor("O collapses every step", `document.querySelectorAll('details.step[open]').length === 0`)
	turnOf := `document.querySelector('.kb-current').closest('section.turn').dataset.number`
	first := evalJS[string](p, turnOf)
	p.key("]")
	p.WaitFor("] moves to the next turn", turnOf+` !== `+browsertest.JSString(first))
	p.key("[")
	p.WaitFor("[ moves back", turnOf+` === `+browsertest.JSString(first))
	p.key("\r")
	p.WaitFor("Enter opens the step", `document.querySelector('.kb-current').open`)
	p.key("O")
	grantClipboard(p, base)
	p.key("c")
	p.WaitFor("c opens the selected step and copies it", `document.querySelector('.kb-current').open
		&& document.querySelector('.kb-current .step-copy .copied')?.textContent === 'Copied'`)
	seq := evalJS[string](p, `document.querySelector('.kb-current').dataset.seq`)
	if got, want := awaitJS[string](p, `navigator.clipboard.readText()`), s.get("/api/sessions/keys-newer/export?format=md&step="+seq).Body.String(); got != want || want == "" {
		t.Errorf("c copied %q; want step %s's Markdown %q", got, seq, want)
	}
	p.key("O")
	p.key("a")
	p.WaitFor("a opens the selected step and the note dialog on it", `document.getElementById('note-dialog').open && document.querySelector('.kb-current').open
		&& document.getElementById('note-dialog-seq').textContent === document.querySelector('.kb-current').dataset.seq
		&& document.activeElement === document.querySelector('[data-testid="note-text-input"]')`)
	p.key("j")
	if got := evalJS[string](p, `document.activeElement.value`); got != "j" {
		t.Errorf("typed in the note: %q; want j as text", got)
	}
	p.typeInto(`[data-testid="note-author-input"]`, "Kay")
	p.Click(`[data-testid="note-save"]`)
	p.WaitFor("the note is saved on that step", `document.querySelector('[data-testid="step-notes"][data-seq="' + document.querySelector('.kb-current').dataset.seq + '"] [data-testid="note-text"]')?.textContent === 'j'`)
	p.key("f")
	p.WaitFor("f focuses the session's search box", `document.activeElement === document.querySelector('[data-testid="session-search-input"]')`)
	p.key("j")
	if got := evalJS[string](p, `document.activeElement.value`); got != "j" {
		t.Errorf("typed in the session's search box: %q; want j as text", got)
	}
	evalJS[bool](p, `(document.activeElement.value = '', document.activeElement.blur(), true)`)
	p.key("n")
	p.WaitFor("n opens the next session not reviewed", `location.pathname === '/session' && document.readyState === 'complete'
		&& document.querySelector('[data-testid="session"]')?.dataset.sessionId === 'keys-older'`)
	p.key("v")
	p.WaitFor("v focuses the first verdict button", `document.activeElement === document.querySelector('[data-testid="verdict-quick"]')`)
	p.key("\r")
	p.WaitFor("Enter on it saves that verdict", `document.querySelector('[data-testid="verdict-state"]')?.textContent === document.querySelector('[data-testid="verdict-quick"]').dataset.state`)

	p.key("g")
	p.key("u")
	p.WaitFor("g u goes to the usage page", `location.pathname === '/usage' && document.readyState === 'complete'`)
	p.key("g")
	p.key("s")
	p.WaitFor("g s goes to the sessions", onTheList)

	p.key("/")
	p.Type(`[data-testid="topbar-search"]`, "prompt\r")
	p.WaitFor("the top bar's search opens the search page with hits", `location.pathname === '/search'
		&& new URLSearchParams(location.search).get('q') === 'prompt' && document.querySelector('[data-testid="search-hit"]') !== null
		&& document.readyState === 'complete'`)
	// j/k move through the hits, across their sessions, and Enter opens
	// the selected hit's step.
	evalJS[bool](p, `document.activeElement.blur(), true`)
	hit := func(i int) string {
		return `document.querySelectorAll('[data-testid="search-hit"]')[` + fmt.Sprint(i) + `]`
	}
	if n := evalJS[int](p, `document.querySelectorAll('[data-testid="search-group"]')[0].querySelectorAll('[data-testid="search-hit"]').length`); n < 1 ||
		p.Count(`[data-testid="search-group"]`) < 2 {
		t.Fatalf("the search of prompt shows %d groups, the first of %d hits; want hits in both sessions", p.Count(`[data-testid="search-group"]`), n)
	}
	last := p.Count(`[data-testid="search-hit"]`) - 1
	for range last + 2 { // one more than the hits: j stays on the last
		p.key("j")
	}
	p.WaitFor("j moves through every hit, into the next session's", hit(last)+`.classList.contains('kb-current') && `+hit(last)+`.contains(document.activeElement)`)
	p.key("k")
	p.WaitFor("k selects the hit before", hit(last-1)+`.classList.contains('kb-current') && !`+hit(last)+`.classList.contains('kb-current')`)
	want := evalJS[string](p, hit(last-1)+`.querySelector('[data-testid="search-hit-link"]').href`)
	p.key("\r")
	p.WaitFor("Enter opens the selected hit's step", `location.href === `+browsertest.JSString(want)+` && document.readyState === 'complete'`)
	if v := p.TakeCSPViolations(); len(v) != 0 {
		t.Errorf("CSP violations: %v", v)
	}
}

// TestBrowserKeysNextProblem: e and E move through the timeline's failed
// and flagged steps, in order from the step selected, and go round at
// either end; j from there goes on from the step e selected.
func TestBrowserKeysNextProblem(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	batch := manyTurns("keys-problems", 6, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC))
	var want []string // the failed or flagged steps, in timeline order
	for _, st := range batch["steps"].(arr) {
		st := st.(obj)
		switch st["seq"] {
		case 2:
			st["outcome"] = "failed"
		case 5:
			st["flags"] = arr{obj{"kind": "secret_in_output", "severity": "warn", "reason": "a key"}}
		}
		if st["outcome"] == "failed" || len(st["flags"].(arr)) > 0 {
			want = append(want, fmt.Sprint("step-", st["seq"]))
		}
	}
	s.mustPush(batch, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=keys-problems")
	selected := func(what, id string) {
		t.Helper()
		p.WaitFor(what, `document.querySelector('.kb-current') !== null && document.querySelector('.kb-current').id === `+browsertest.JSString(id))
	}
	p.key("e")
	selected("e selects the first failed or flagged step", want[0])
	p.key("e")
	selected("e selects the next", want[1])
	p.key("e")
	selected("e goes round to the first", want[0])
	p.key("E")
	selected("E goes round to the last", want[1])
	p.key("E")
	selected("E selects the one before", want[0])
	p.key("j")
	selected("j goes on from there", "step-3")
	p.key("E")
	selected("E from a step between them selects the one before it", want[0])
}
