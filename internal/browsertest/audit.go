package browsertest

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core 4.14.1 (npm, MPL-2.0; axe/LICENSE), the checker of
// web accessibility that browsers' own audits use.
//
//go:embed axe/axe-4.14.1.min.js
var axeSource string

// Audit runs axe-core's rules (WCAG 2.0–2.2 A and AA, and its best
// practices) on the page as the tab shows it now, at its size and colour
// scheme, and returns each rule it breaks: its impact, id and help, how
// many elements break it and the first three of them, each with axe's
// summary of the fix. Content scripts run in the page through the
// DevTools protocol, which the page's Content-Security-Policy does not
// govern, so the app's CSP stays as it is.
func (p *Tab) Audit() []string {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 2*ActionTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("if (window.axe === undefined) {\n"+axeSource+"\n}\ntrue")); err != nil {
		p.T.Fatalf("load axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v =>
		v.impact + ' ' + v.id + ': ' + v.help + ' (' + v.nodes.length + ' elements) e.g. ' +
		v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 240)).join(' | ')))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		p.T.Fatalf("run axe-core: %v", fmt.Sprint(err))
	}
	return out
}
