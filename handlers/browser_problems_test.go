package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentreview/service/internal/browsertest"
)

// TestBrowserProblemsOnly: Only failed or flagged shows the failed and
// flagged steps alone, and the turns that count one (a turn whose failure
// the page leaves out too), j/k move through those steps only, a live
// refresh follows it, and unticked (by its key, p) it shows every step
// again.
func TestBrowserProblemsOnly(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	// Turn 1: a prompt and a command, no problem; turn 2: 400 steps, its
	// problems at seqs 60 (failed, left out of the page), 380 (failed)
	// and 390 (flagged).
	x := withProblems(longTurn("only", 400, at), []int{60, 380}, []int{390})
	s.mustPush(x, http.StatusCreated)
	var problems []string // the steps the page shows that the filter keeps
	for _, seq := range problemSeqs(x) {
		if seq > 402-recentSteps {
			problems = append(problems, fmt.Sprint(seq))
		}
	}
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=only")
	all := p.Count(`details.step`)
	shown := func() []string {
		return evalJS[[]string](p, `Array.from(document.querySelectorAll('details.step')).filter(e => e.getClientRects().length > 0).map(e => e.dataset.seq)`)
	}
	turnShown := func(n int) bool {
		return evalJS[bool](p, fmt.Sprintf(`document.querySelector('section.turn[data-number="%d"]').getClientRects().length > 0`, n))
	}
	p.Click(`[data-testid="problems-only"]`)
	if got := shown(); !slices.Equal(got, problems) {
		t.Errorf("only failed or flagged: steps %v shown; want %v", got, problems)
	}
	if turnShown(1) || !turnShown(2) {
		t.Errorf("only failed or flagged: turn 1 shown %v, turn 2 %v; want only turn 2, which counts problems", turnShown(1), turnShown(2))
	}
	p.key("j")
	p.key("j")
	if got := evalJS[string](p, `document.querySelector('.kb-current') ? document.querySelector('.kb-current').dataset.seq : ''`); got != problems[1] {
		t.Errorf("j twice selects step %q; want %s, the second step shown", got, problems[1])
	}
	// A live refresh follows the filter: turn 1 redrawn with a failed
	// step shows, with that step alone.
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	failed := stepRec("only", 2, 1, at, "command", obj{"command": "step 2", "stdout": "no"})
	failed["outcome"], failed["error"] = "failed", obj{"type": "exit_code", "message": "exit status 1"}
	s.mustPush(laterPush(x, nil, arr{failed}), http.StatusOK)
	p.WaitFor("turn 1 shows, with its failed step alone", `document.querySelector('section.turn[data-number="1"]').getClientRects().length > 0`)
	if got := shown(); !slices.Equal(got, append([]string{"2"}, problems...)) {
		t.Errorf("after a failure in turn 1: steps %v shown; want 2 and %v", got, problems)
	}
	p.key("p") // the key unticks it, as a click does
	if got := len(shown()); got != all || !turnShown(1) || evalJS[bool](p, `document.querySelector('[data-testid="problems-only"]').checked`) {
		t.Errorf("unchecked: %d of %d steps shown, turn 1 shown %v; want all", got, all, turnShown(1))
	}
}

// TestBrowserKeysReachEveryProblem: on a page that leaves steps out, e and
// E go through every failed or flagged step of the session in order, those
// left out too (shown with the steps around them), and round at either
// end; j goes on from a step e opened that way.
func TestBrowserKeysReachEveryProblem(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	// Turn 1's command (seq 2) and the long turn's steps 60, 61 and 150,
	// which its first view leaves out, and 380 and 390, which it shows.
	x := withProblems(longTurn("reach", 400, at), []int{2, 61, 380}, []int{60, 150, 390})
	s.mustPush(x, http.StatusCreated)
	var problems []string // from the batch, in seq order
	for _, seq := range problemSeqs(x) {
		problems = append(problems, fmt.Sprint("step-", seq))
	}
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=reach")
	var left []string
	for _, id := range problems {
		if p.Count("#"+id) == 0 {
			left = append(left, id)
		}
	}
	if len(left) != 3 {
		t.Fatalf("the first view leaves out %v of the problems %v; want three of them", left, problems)
	}
	selected := func(what, id string) {
		t.Helper()
		p.WaitFor(what, `document.querySelector('.kb-current') !== null && document.querySelector('.kb-current').id === `+browsertest.JSString(id))
	}
	for _, id := range problems {
		p.key("e")
		selected("e selects the next problem, "+id, id)
	}
	p.key("e")
	selected("e goes round to the first", problems[0])
	p.key("E")
	selected("E goes round to the last", problems[len(problems)-1])
	for i := len(problems) - 2; i >= 0; i-- {
		p.key("E")
		selected("E selects the one before, "+problems[i], problems[i])
	}
	p.key("e")
	selected("e from the first selects the second", problems[1])
	p.key("j")
	selected("j goes on from there", fmt.Sprint("step-", 61))
}

// TestBrowserProblemsOnlyKeptInAddress: Only failed or flagged is kept in
// the page's address, so e going to a step the page did not show keeps it
// (browserActorFilter checks Show's).
func TestBrowserProblemsOnlyKeptInAddress(t *testing.T) {
	b := startBrowser(t)
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := withProblems(longTurn("kept", 400, at), []int{60, 390}, nil)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=kept")
	if p.Count("#step-60") != 0 {
		t.Fatal("the first view shows step 60; the test needs it left out")
	}
	p.key("p")
	p.WaitFor("the address says so", `new URLSearchParams(location.search).get('only') === 'problems'`)
	p.key("e")
	p.WaitFor("e goes to step 60, the page read around it", `document.querySelector('.kb-current') !== null && document.querySelector('.kb-current').id === 'step-60'`)
	shown := evalJS[[]string](p, `Array.from(document.querySelectorAll('details.step')).filter(e => e.getClientRects().length > 0).map(e => e.dataset.seq)`)
	var want []string
	for _, seq := range problemSeqs(x) {
		want = append(want, fmt.Sprint(seq))
	}
	if !evalJS[bool](p, `document.getElementById('problems-only').checked`) || !slices.Equal(shown, want) {
		t.Errorf("after e read the page again: box checked %v, steps %v shown; want checked and %v",
			evalJS[bool](p, `document.getElementById('problems-only').checked`), shown, want)
	}
	p.key("p")
	p.WaitFor("unticked, the address drops it", `!new URLSearchParams(location.search).has('only')`)
}
