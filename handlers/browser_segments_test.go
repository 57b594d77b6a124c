package handlers

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSegments drives the segment dividers in Chromium: placed
// where the store's steps say a segment begins, readable in both themes
// and at 390 px, kept through Expand all, a #step-N link and a live
// redraw of their turn.
func TestBrowserSegments(t *testing.T) {
	b := startBrowser(t)
	t.Run("SampleCompactedMidTurn", func(t *testing.T) { browserSegmentSample(t, b) })
	t.Run("SurvivesLiveRefresh", func(t *testing.T) { browserSegmentRefresh(t, b) })
}

// dividerBefore is the data-seq of the step right after each divider, or
// "turn N" for a divider before turn N's header, in page order.
const dividerPlaces = `Array.from(document.querySelectorAll('[data-testid="segment-divider"]')).map(d => {
	const n = d.nextElementSibling;
	return n.tagName === 'H3' ? 'turn ' + d.closest('section.turn').dataset.number : 'step ' + n.dataset.seq;
}).join(', ')`

// contrastOf is the contrast ratio (WCAG) of element fg's text against
// element bg's background colour.
const contrastOf = `(function(fg, bg){
	const lum = c => { const [r, g, b] = c.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
	const f = lum(getComputedStyle(fg).color), b = lum(getComputedStyle(bg).backgroundColor);
	return (Math.max(f, b) + 0.05) / (Math.min(f, b) + 0.05);
})`

// browserSegmentSample: the real sample with a compaction inside its one
// turn shows one divider, before the first step after the compaction.
func browserSegmentSample(t *testing.T, b *browser) {
	s := newTestService(t)
	d, seq := importCompactedMidTurn(t, s)
	n := strconv.FormatInt(seq, 10)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + d.ID)
	p.WaitFor("the page is live", `document.getElementById('live-pill').textContent === 'live'`)
	if got := evalJS[string](p, dividerPlaces); got != "step "+n {
		t.Fatalf("dividers at %q; want one at step %s, the first after the compaction", got, n)
	}
	div := `[data-testid="segment-divider"]`
	if got := evalJS[string](p, `document.querySelector('`+div+`').getAttribute('aria-label')`); got != "Context compacted, segment 2 begins" {
		t.Errorf("divider's label %q; want Context compacted, segment 2 begins", got)
	}
	for _, w := range []int64{390, 1280} {
		for _, scheme := range []string{"light", "dark"} {
			p.Emulate(w, 844, scheme)
			for _, part := range []string{div + ` strong`, div + ` .segment-label`} {
				if c := evalJS[float64](p, contrastOf+`(document.querySelector('`+part+`'), document.querySelector('`+part+`').closest('section.turn'))`); c < 4.5 {
					t.Errorf("%d px %s: %s contrast %.1f; want at least 4.5", w, scheme, part, c)
				}
			}
			if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
				t.Errorf("%d px %s: wider than the screen:\n%s", w, scheme, strings.Join(wide, "\n"))
			}
			if h := evalJS[float64](p, `document.querySelector('`+div+`').getBoundingClientRect().height`); h <= 0 || h > 60 {
				t.Errorf("%d px %s: divider %.0f px high; want a thin visible line", w, scheme, h)
			}
		}
	}
	p.openAllSteps()
	if got := evalJS[string](p, dividerPlaces); got != "step "+n {
		t.Errorf("after Expand all, dividers at %q; want step %s", got, n)
	}
	p.Open("/session?id=" + d.ID + "#step-" + n)
	p.WaitFor("the linked step opens", `document.getElementById('step-`+n+`').open`)
	if got := evalJS[string](p, `document.getElementById('step-`+n+`').previousElementSibling.dataset.testid`); got != "segment-divider" {
		t.Errorf("linked step #%s follows %q; want the segment divider", n, got)
	}
	shootSegments(t, p, d.ID)
}

// browserSegmentRefresh: a live redraw of the turn holding a divider
// brings the divider with it, at the same place; the turn after a clear
// keeps its divider before its header.
func browserSegmentRefresh(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "segs-live"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := segmentedSession(sid, at)
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	p.WaitFor("the page is live", `document.getElementById('live-pill').textContent === 'live'`)
	const want = "step 4, turn 4"
	if got := evalJS[string](p, dividerPlaces); got != want {
		t.Fatalf("dividers at %q; want %s", got, want)
	}
	p.Do("keep the old divider", chromedp.Evaluate[chromedp.Void](`window.oldDivider = document.getElementById('step-4').previousElementSibling`))
	step4 := withFields(x["steps"].(arr)[3].(obj), "payload", obj{"command": "make", "stdout": "all passed"})
	s.mustPush(laterPush(x, nil, arr{step4}), http.StatusOK)
	p.WaitFor("the change to step 4 shows", `document.querySelector('#step-4 [data-testid="block-stdout"] pre')?.textContent === 'all passed'`)
	if evalJS[bool](p, `document.contains(window.oldDivider)`) {
		t.Fatal("the old divider is still in the page; want its turn redrawn")
	}
	if got := evalJS[string](p, dividerPlaces); got != want {
		t.Errorf("after the redraw, dividers at %q; want %s", got, want)
	}
}

// shootSegments writes segments-<width>-<scheme>.png of the divider when
// SERVICE_SCREENSHOTS names a folder.
func shootSegments(t *testing.T, p *tab, sid string) {
	dir := os.Getenv("SERVICE_SCREENSHOTS")
	if dir == "" {
		return
	}
	p.eachLook(func(suffix string) {
		p.Open("/session?id=" + sid)
		p.WaitFor("the page is live", `document.getElementById('live-pill').textContent === 'live'`)
		p.Do("scroll to the divider", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="segment-divider"]').scrollIntoView({block: 'center'})`))
		p.Shoot(dir, "segments"+suffix)
	})
}
