package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentreview/service/store"
)

// Bounds of the browser tests: one action, and one wait for a condition.
// Upper bounds only, for a 2-core CI machine that also runs PostgreSQL and
// the other packages' tests: a chip's navigation once took over 6 s there.
const (
	actionTimeout = 15 * time.Second
	waitTimeout   = 15 * time.Second
	pollEvery     = 50 * time.Millisecond
)

// browser is one Chromium shared by the subtests of TestBrowser; each
// subtest opens its own tab.
type browser struct{ ctx context.Context }

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

// startBrowser starts headless Chromium for t and its subtests. Without a
// Chromium the test is skipped, or fails when SERVICE_BROWSER_TESTS=required.
func startBrowser(t *testing.T) *browser {
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
	return &browser{ctx: ctx}
}

// tab is one browser tab on a server, for one test.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu            sync.Mutex
	exceptions    []string
	cspViolations []string
	dialogs       []string
}

// newTab opens a tab on the server at base; the tab closes when t ends.
// Uncaught page exceptions and JavaScript dialogs are recorded; an uncaught
// exception or a Content-Security-Policy violation fails the test.
func (b *browser) newTab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	p := &tab{t: t, ctx: ctx, base: base}
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

// takeCSPViolations returns the violations reported so far and forgets
// them, for a test whose page is meant to have something refused.
func (p *tab) takeCSPViolations() []string {
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

// seenDialogs returns the messages of the JavaScript dialogs opened so far.
func (p *tab) seenDialogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dialogs...)
}

// close closes the tab, as a user does: the page gets its pagehide.
func (p *tab) close() {
	p.t.Helper()
	if err := chromedp.Cancel(p.ctx); err != nil {
		p.t.Fatalf("closing the tab: %v", err)
	}
}

// do runs actions within actionTimeout, failing the test on an error.
func (p *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// open loads path of the server and waits for app.js to have run.
func (p *tab) open(path string) {
	p.t.Helper()
	p.do("open "+path, chromedp.Navigate(p.base+path))
	p.waitFor("the page has loaded", `document.readyState === 'complete' && window.htmx !== undefined`)
}

// click clicks the first element matching a CSS selector, as a mouse does.
// A live refresh may swap the element out between finding and clicking it;
// a user would click the new one, so the click is tried again on that.
func (p *tab) click(sel string) {
	p.t.Helper()
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("click %s: %v", sel, err)
	}
}

// pressEnter focuses the element matching sel and presses Enter on it.
func (p *tab) pressEnter(sel string) {
	p.t.Helper()
	p.do("focus "+sel, chromedp.Focus(chromedp.CSS(sel)))
	p.waitFor(sel+" has the focus", `document.activeElement === document.querySelector(`+jsString(sel)+`)`)
	p.do("press Enter on "+sel, chromedp.KeyEvent("\r"))
}

// evalJS evaluates expr in the page and decodes its value as T.
func evalJS[T any](p *tab, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// awaitJS evaluates expr, a promise, in the page and decodes what it
// resolves to as T.
func awaitJS[T any](p *tab, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds, for waitTimeout. It
// polls from Go, so it survives the page reloading in between.
func (p *tab) waitFor(what, cond string) {
	p.t.Helper()
	p.waitForWithin(waitTimeout, what, cond)
}

func (p *tab) waitForWithin(d time.Duration, what, cond string) {
	p.t.Helper()
	if err := p.poll(d, cond); err != nil {
		p.t.Fatalf("%s: %v (waited for %s)", what, err, cond)
	}
}

func (p *tab) poll(d time.Duration, cond string) error {
	deadline := time.Now().Add(d)
	var last error
	for {
		ctx, cancel := context.WithTimeout(p.ctx, time.Second)
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
		time.Sleep(pollEvery)
	}
}

// text is the whitespace-normalized text of the first element matching a
// CSS selector, or "" if none does.
func (p *tab) text(sel string) string {
	p.t.Helper()
	return evalJS[string](p, `(function(){ const e = document.querySelector(`+jsString(sel)+`);
		return e ? e.textContent.replace(/\s+/g, ' ').trim() : '' })()`)
}

// texts is the normalized text of every element matching a CSS selector.
func (p *tab) texts(sel string) []string {
	p.t.Helper()
	return evalJS[[]string](p, `Array.from(document.querySelectorAll(`+jsString(sel)+`),
		e => e.textContent.replace(/\s+/g, ' ').trim())`)
}

// rows is the text of each table row matching sel, its cells joined by " | ".
func (p *tab) rows(sel string) []string {
	p.t.Helper()
	return evalJS[[]string](p, `Array.from(document.querySelectorAll(`+jsString(sel)+`),
		r => Array.from(r.cells, c => c.textContent.replace(/\s+/g, ' ').trim()).join(' | '))`)
}

// count is how many elements match a CSS selector.
func (p *tab) count(sel string) int {
	p.t.Helper()
	return evalJS[int](p, `document.querySelectorAll(`+jsString(sel)+`).length`)
}

// fields reads the dt/dd pairs under sel; a label seen twice has its
// values joined with " | ".
func (p *tab) fields(sel string) map[string]string {
	p.t.Helper()
	return evalJS[map[string]string](p, `(function(){
		const m = {};
		document.querySelectorAll(`+jsString(sel+" dt")+`).forEach(dt => {
			const k = dt.textContent.trim(), v = dt.nextElementSibling.textContent.replace(/\s+/g, ' ').trim();
			m[k] = k in m ? m[k] + ' | ' + v : v;
		});
		return m })()`)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serveBrowser serves s on a free loopback port for a browser; streams end
// before the server closes, as in the real server.
func serveBrowser(t *testing.T, s *testService) string {
	t.Helper()
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	t.Cleanup(s.hub.Close)
	return srv.URL
}

// restartableServer serves a store on a fixed loopback port and can be
// stopped and started again on that port, as a restarted service is.
type restartableServer struct {
	t     *testing.T
	st    *store.Store
	addr  string
	hub   *Hub
	srv   *http.Server
	serve sync.WaitGroup
}

func newRestartableServer(t *testing.T, st *store.Store) *restartableServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &restartableServer{t: t, st: st, addr: ln.Addr().String()}
	r.startOn(ln)
	t.Cleanup(r.stop)
	return r
}

func (r *restartableServer) URL() string { return "http://" + r.addr }

// start listens on the same port again, with a new hub.
func (r *restartableServer) start() {
	r.t.Helper()
	var ln net.Listener
	deadline := time.Now().Add(waitTimeout)
	for {
		var err error
		ln, err = net.Listen("tcp", r.addr)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			r.t.Fatalf("listen again on %s: %v", r.addr, err)
		}
		time.Sleep(pollEvery)
	}
	r.startOn(ln)
}

func (r *restartableServer) startOn(ln net.Listener) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r.hub = NewHub(r.st, log)
	r.srv = NewServer(Routes(Deps{Store: r.st, Hub: r.hub, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log}), log)
	r.serve.Add(1)
	go func() {
		defer r.serve.Done()
		r.srv.Serve(ln)
	}()
}

// stop ends the streams, then closes the listener and every connection.
func (r *restartableServer) stop() {
	if r.srv == nil {
		return
	}
	r.hub.Close()
	r.srv.Close()
	r.serve.Wait()
	r.srv = nil
}

// Builders of the sessions the browser tests push. Times are UTC.

func isoUTC(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// sessionBatch is a batch holding only a session header, one segment and a
// root actor. metrics may be nil: cost not recorded.
func sessionBatch(sid, kind, version string, started time.Time, root string, metrics obj) obj {
	session := obj{
		"id": sid, "agent": obj{"kind": kind, "version": version},
		"workspace": obj{"root": root}, "started_at": isoUTC(started),
	}
	if metrics != nil {
		session["metrics"] = metrics
	}
	return obj{
		"schema_version": "1.2",
		"session":        session,
		"segments":       arr{obj{"index": 0, "start_reason": "start", "started_at": isoUTC(started), "source_files": arr{}}},
		"actors":         arr{obj{"id": sid + "-root", "type": "root"}},
		"turns":          arr{},
		"steps":          arr{},
	}
}

func metricsOf(cost float64, requests, in, out int) obj {
	return obj{"cost_usd": cost, "api_requests": requests,
		"tokens": obj{"input": in, "output": out, "cache_read": 0, "cache_creation": 0}}
}

// turnRec is turn number n of session sid.
func turnRec(sid string, n int, at time.Time, mode string) obj {
	t := obj{"id": fmt.Sprintf("%s-t%d", sid, n), "session_id": sid, "segment_index": 0, "actor_id": sid + "-root",
		"index": n, "started_at": isoUTC(at), "step_ids": arr{}}
	if mode != "" {
		t["mode"] = mode
	}
	return t
}

// stepRec is an accepted, ok, inline step of turn number turn.
func stepRec(sid string, seq, turn int, at time.Time, typ string, payload obj) obj {
	decision := "accepted"
	if typ == "message" {
		decision = "n/a"
	}
	return obj{
		"id": fmt.Sprintf("%s-s%d", sid, seq), "session_id": sid, "segment_index": 0,
		"turn_id": fmt.Sprintf("%s-t%d", sid, turn), "actor_id": sid + "-root", "seq": seq, "at": isoUTC(at),
		"type": typ, "decision": decision, "outcome": "ok", "content_status": "inline",
		"channels": arr{"hook"}, "flags": arr{}, "payload": payload,
	}
}

func userPrompt(text string) obj { return obj{"role": "user", "text": text} }

// withFields returns a copy of rec with the given fields set.
func withFields(rec obj, kv ...any) obj {
	out := obj{}
	for k, v := range rec {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// laterPush is a later push to the session of b: its header without metrics,
// and the given turns and steps.
func laterPush(b obj, turns, steps arr) obj {
	session := withFields(b["session"].(obj))
	delete(session, "metrics")
	out := obj{"schema_version": "1.2", "session": session}
	if turns != nil {
		out["turns"] = turns
	}
	if steps != nil {
		out["steps"] = steps
	}
	return out
}

// manyTurns is a session of n turns, each a prompt "prompt <i>" at seq i.
func manyTurns(sid string, n int, started time.Time) obj {
	b := sessionBatch(sid, "testagent", "1.0.0", started, "/tmp/ws", metricsOf(0.1, 1, 1, 1))
	var turns, steps arr
	for i := 1; i <= n; i++ {
		at := started.Add(time.Duration(i) * time.Second)
		turns = append(turns, turnRec(sid, i, at, ""))
		steps = append(steps, stepRec(sid, i, i, at, "message", userPrompt(fmt.Sprintf("prompt %d", i))))
	}
	b["turns"], b["steps"] = turns, steps
	return b
}

// countable is n characters of a repeating, countable pattern.
func countable(n int) string {
	return strings.Repeat("0123456789", n/10+1)[:n]
}
