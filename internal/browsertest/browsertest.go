// Package browsertest drives a headless Chromium for the tests of the web
// app: the handlers' tests against one server and cmd/service's against
// team server processes. A test starts one Browser, opens a Tab per page
// and reads the page through JavaScript; every wait is bounded, and an
// uncaught exception or a Content-Security-Policy violation in a page
// fails the test.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Bounds of the browser tests: one action, one wait for a condition, and
// the pause between two looks at a condition.
// Upper bounds only, for a 2-core CI machine that also runs PostgreSQL and
// the other packages' tests: a chip's navigation once took over 6 s there.
const (
	ActionTimeout = 15 * time.Second
	WaitTimeout   = 15 * time.Second
	PollEvery     = 50 * time.Millisecond
)

// Browser is one Chromium shared by the subtests of a test; each opens
// its own Tab.
type Browser struct{ ctx context.Context }

// chromium finds the browser: Debian's chromium first, then the usual names.
func chromium() (string, bool) {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", true
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// Start starts headless Chromium for t and its subtests. Without a
// Chromium the test is skipped, or fails when SERVICE_BROWSER_TESTS=required.
func Start(t *testing.T) *Browser {
	t.Helper()
	path, ok := chromium()
	if !ok {
		if os.Getenv("SERVICE_BROWSER_TESTS") == "required" {
			t.Fatal("no Chromium installed and SERVICE_BROWSER_TESTS=required")
		}
		t.Skip("no Chromium installed; set SERVICE_BROWSER_TESTS=required to fail instead")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// No timeout here: the first run binds the browser's life to its context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return &Browser{ctx: ctx}
}

// Tab is one browser tab on a server, for one test.
type Tab struct {
	T    *testing.T
	Ctx  context.Context // the tab's chromedp context
	Base string          // the server's address, which Open's paths are on

	mu            sync.Mutex
	exceptions    []string
	cspViolations []string
	dialogs       []string
}

// Tab opens a tab on the server at base; the tab closes when t ends.
// Uncaught page exceptions and JavaScript dialogs are recorded; an uncaught
// exception or a Content-Security-Policy violation fails the test.
func (b *Browser) Tab(t *testing.T, base string) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	p := &Tab{T: t, Ctx: ctx, Base: base}
	err := chromedp.Listen(ctx, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p.exceptions = append(p.exceptions, exceptionText(ev))
		case *log.EventEntryAdded:
			if cspViolation(ev.Entry) {
				p.cspViolations = append(p.cspViolations, ev.Entry.Text)
			}
		case *page.EventJavascriptDialogOpening:
			p.dialogs = append(p.dialogs, ev.Message)
		}
	})
	if err != nil {
		t.Fatalf("listening to the tab: %v", err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.exceptions {
			t.Errorf("uncaught exception in the page: %s", e)
		}
		for _, v := range p.cspViolations {
			t.Errorf("Content-Security-Policy violation in the page: %s", v)
		}
	})
	return p
}

// TakeCSPViolations returns the violations reported so far and forgets
// them, for a test whose page is meant to have something refused.
func (p *Tab) TakeCSPViolations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.cspViolations
	p.cspViolations = nil
	return v
}

// cspViolation tells whether a browser log entry reports that the page's
// Content-Security-Policy refused something.
func cspViolation(e *log.Entry) bool {
	return e.Source == log.EntrySourceSecurity || strings.Contains(e.Text, "Content Security Policy")
}

func exceptionText(ev *runtime.EventExceptionThrown) string {
	d := ev.ExceptionDetails
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

// SeenDialogs returns the messages of the JavaScript dialogs opened so far.
func (p *Tab) SeenDialogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dialogs...)
}

// Close closes the tab, as a user does: the page gets its pagehide.
func (p *Tab) Close() {
	p.T.Helper()
	if err := chromedp.Cancel(p.Ctx); err != nil {
		p.T.Fatalf("closing the tab: %v", err)
	}
}

// Do runs actions within ActionTimeout, failing the test on an error.
func (p *Tab) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, ActionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.T.Fatalf("%s: %v", what, err)
	}
}

// Open loads path of the server and waits for app.js to have run.
func (p *Tab) Open(path string) {
	p.T.Helper()
	p.Do("open "+path, chromedp.Navigate(p.Base+path))
	p.WaitFor(path+" has loaded", `document.readyState === 'complete' && window.htmx !== undefined`)
}

// Click clicks the first element matching a CSS selector, as a mouse does.
func (p *Tab) Click(sel string) {
	p.T.Helper()
	p.DoOnNode("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// ClickUntil clicks the element matching sel until cond holds, then
// waits for it as WaitFor does. A live refresh that replaces the element
// between the mouse's press and release loses the click (the app
// refreshes once as its stream connects); a user would click again, so a
// click that changed nothing within a few seconds is made again, up to
// three times.
func (p *Tab) ClickUntil(sel, what, cond string) {
	p.T.Helper()
	p.until(func() { p.Click(sel) }, what, cond)
}

// until does act until cond holds, up to three times, then waits for it
// as WaitFor does.
func (p *Tab) until(act func(), what, cond string) {
	p.T.Helper()
	for range 2 {
		act()
		if p.Poll(3*time.Second, cond) == nil {
			return
		}
	}
	act()
	p.WaitFor(what, cond)
}

// Type focuses the element matching sel and types text into it, as
// chromedp.SendKeys does ("\r" is Enter).
func (p *Tab) Type(sel, text string) {
	p.T.Helper()
	p.DoOnNode("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// PressEnter focuses the element matching sel and presses Enter on it. A
// live refresh that swaps the element out after it took the focus leaves
// the focus with the old one, so it is focused again until the element
// in the page has it.
func (p *Tab) PressEnter(sel string) {
	p.T.Helper()
	p.until(func() { p.DoOnNode("focus "+sel, chromedp.Focus(chromedp.CSS(sel))) },
		sel+" has the focus", `document.activeElement === document.querySelector(`+JSString(sel)+`)`)
	p.Do("press Enter on "+sel, chromedp.KeyEvent("\r"))
}

// PressEnterUntil presses Enter on the element matching sel until cond
// holds, then waits for it as WaitFor does: a live refresh that swaps the
// element between its focus and the key loses the key, as ClickUntil's
// click.
func (p *Tab) PressEnterUntil(sel, what, cond string) {
	p.T.Helper()
	p.until(func() { p.PressEnter(sel) }, what, cond)
}

// DoOnNode runs one action on an element, as Do does. A live refresh may
// swap the element out between finding it and acting on it ("Could not
// find node", before anything is done to it); a user would act on the
// new one, so the action is tried again on that.
func (p *Tab) DoOnNode(what string, action chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.Ctx, ActionTimeout)
		err = chromedp.Do(ctx, action)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		p.T.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates expr in p's page and decodes its value as T.
func Eval[T any](p *Tab, expr string) T {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, ActionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.T.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Await evaluates expr, a promise, in p's page and decodes what it
// resolves to as T.
func Await[T any](p *Tab, expr string) T {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, ActionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.T.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor polls a JavaScript condition until it holds, for WaitTimeout. It
// polls from Go, so it survives the page reloading in between.
func (p *Tab) WaitFor(what, cond string) {
	p.T.Helper()
	p.WaitForWithin(WaitTimeout, what, cond)
}

// WaitForWithin is WaitFor with a bound of d.
func (p *Tab) WaitForWithin(d time.Duration, what, cond string) {
	p.T.Helper()
	if err := p.Poll(d, cond); err != nil {
		p.T.Fatalf("%s: %v (waited for %s)", what, err, cond)
	}
}

// Poll polls a JavaScript condition until it holds, for at most d, and
// says why it gave up.
func (p *Tab) Poll(d time.Duration, cond string) error {
	deadline := time.Now().Add(d)
	var last error
	for {
		ctx, cancel := context.WithTimeout(p.Ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(function(){ try { return (`+cond+`) } catch (e) { return false } })()`))
		cancel()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("not true after %v (last error: %v)", d, last)
			}
			return fmt.Errorf("not true after %v", d)
		}
		time.Sleep(PollEvery)
	}
}

// Text is the whitespace-normalized text of the first element matching a
// CSS selector, or "" if none does.
func (p *Tab) Text(sel string) string {
	p.T.Helper()
	return Eval[string](p, `(function(){ const e = document.querySelector(`+JSString(sel)+`);
		return e ? e.textContent.replace(/\s+/g, ' ').trim() : '' })()`)
}

// Texts is the normalized text of every element matching a CSS selector.
func (p *Tab) Texts(sel string) []string {
	p.T.Helper()
	return Eval[[]string](p, `Array.from(document.querySelectorAll(`+JSString(sel)+`),
		e => e.textContent.replace(/\s+/g, ' ').trim())`)
}

// Rows is the text of each table row matching sel, its cells joined by " | ".
func (p *Tab) Rows(sel string) []string {
	p.T.Helper()
	return Eval[[]string](p, `Array.from(document.querySelectorAll(`+JSString(sel)+`),
		r => Array.from(r.cells, c => c.textContent.replace(/\s+/g, ' ').trim()).join(' | '))`)
}

// Count is how many elements match a CSS selector.
func (p *Tab) Count(sel string) int {
	p.T.Helper()
	return Eval[int](p, `document.querySelectorAll(`+JSString(sel)+`).length`)
}

// Fields reads the dt/dd pairs under sel; a label seen twice has its
// values joined with " | ".
func (p *Tab) Fields(sel string) map[string]string {
	p.T.Helper()
	return Eval[map[string]string](p, `(function(){
		const m = {};
		document.querySelectorAll(`+JSString(sel+" dt")+`).forEach(dt => {
			const k = dt.textContent.trim(), v = dt.nextElementSibling.textContent.replace(/\s+/g, ' ').trim();
			m[k] = k in m ? m[k] + ' | ' + v : v;
		});
		return m })()`)
}

// Emulate sets the tab's viewport and colour scheme ("light", "dark").
func (p *Tab) Emulate(width, height int64, scheme string) {
	p.T.Helper()
	p.Do(fmt.Sprintf("emulate %dx%d %s", width, height, scheme),
		chromedp.EmulateViewport(width, height),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			})
			return err
		}))
}

// Shoot writes what the tab shows as dir/name.png.
func (p *Tab) Shoot(dir, name string) {
	p.T.Helper()
	png, err := chromedp.Run(p.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.T.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.T.Fatal(err)
	}
}

// JSString quotes s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
