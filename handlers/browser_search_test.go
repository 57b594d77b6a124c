package handlers

import (
	"net/http"
	"testing"
	"time"
)

// TestBrowserSearch: a query typed in the search page's box finds a step;
// its hit, with the match marked and agent markup as text, opens that step
// on the session page, scrolled to, with the match marked in it.
func TestBrowserSearch(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	sess := manyTurns("long-session", 90, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC))
	sess["steps"].(arr)[74].(obj)["payload"].(obj)["text"] = "prompt 75 <img src=x onerror=alert(1)> frobnicate_widget.go"
	sess["steps"].(arr)[9].(obj)["payload"].(obj)["text"] = "prompt 10 hidden_helper.go"
	s.mustPush(sess, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))

	p.Open("/search")
	p.Type(`[data-testid="search-input"]`, "frobnicate_widget.go\r")
	p.WaitFor("the hits are shown", `document.querySelector('[data-testid="search-hit"]') !== null`)
	if n := p.Count(`[data-testid="search-hit"]`); n != 1 {
		t.Fatalf("%d hits; want 1", n)
	}
	if got := p.Text(`[data-testid="search-snippet"] mark`); got != "frobnicate_widget.go" {
		t.Errorf("marked match = %q; want frobnicate_widget.go", got)
	}
	if n := p.Count(`[data-testid="search-snippet"] img`); n != 0 {
		t.Errorf("the snippet made %d img elements of agent text; want it as text", n)
	}
	if d := p.SeenDialogs(); len(d) != 0 {
		t.Errorf("dialogs opened: %v; want none", d)
	}
	p.Click(`[data-testid="search-hit-link"]`)
	p.WaitFor("step 75 is open and scrolled to", `location.pathname === '/session' && location.hash === '#step-75'
		&& document.querySelector('#step-75') !== null && document.querySelector('#step-75').open && `+inView("#step-75"))
	p.WaitFor("the match is marked in the step", `document.querySelector('#step-75 mark.hit') !== null`)
	if got := p.Texts(`#step-75 mark.hit`); len(got) == 0 || got[0] != "frobnicate_widget.go" {
		t.Errorf("marked in the step: %q; want frobnicate_widget.go", got)
	}
	if n := p.Count(`#step-75 img`); n != 0 {
		t.Errorf("marking made %d img elements of agent text; want it as text", n)
	}

	// The session page's box finds a step of a turn the page has not
	// loaded (the 30 latest are), in this session alone.
	other := manyTurns("other-session", 2, time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC))
	other["steps"].(arr)[0].(obj)["payload"].(obj)["text"] = "hidden_helper.go elsewhere"
	s.mustPush(other, http.StatusCreated)
	p.Open("/session?id=long-session")
	if n := p.Count(`#step-10`); n != 0 {
		t.Fatalf("step 10 is on the page before the search (%d); want it among the earlier turns not loaded", n)
	}
	p.Type(`[data-testid="session-search-input"]`, "hidden_helper.go\r")
	p.WaitFor("the session's hits are shown", `location.pathname === '/search' && document.querySelector('[data-testid="search-hit"]') !== null`)
	if got := p.Texts(`[data-testid="search-group"] [data-testid="search-session"]`); len(got) != 1 || p.Count(`[data-testid="search-hit"]`) != 1 {
		t.Fatalf("groups %q with %d hits; want this session's one hit", got, p.Count(`[data-testid="search-hit"]`))
	}
	p.Click(`[data-testid="search-hit-link"]`)
	p.WaitFor("step 10 is open and scrolled to", `location.pathname === '/session' && location.hash === '#step-10'
		&& document.querySelector('#step-10') !== null && document.querySelector('#step-10').open && `+inView("#step-10"))
}
