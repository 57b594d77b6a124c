package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
	"github.com/agentreview/service/views"
)

// liveWait bounds how long a browser may take to show a push to another
// process: the database's notification, the page's throttled refresh (at
// most every two seconds) and a slow shared machine.
const liveWait = 15 * time.Second

// TestTeamBrowserTwoProcesses: two `serve --team` processes of the built
// binary on one PostgreSQL database; a browser signed in as "lead" shows
// the list and a session page of process B, and a push to process A
// appears there live, without a reload, as pushed.
func TestTeamBrowserTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and a browser")
	}
	dsn := pgtest.DSN(t)
	bin := mustBuild(t)
	home := withHome(t)
	token := teamToken(t, dsn, "alice")
	a, b := startTeamServer(t, bin, home, dsn), startTeamServer(t, bin, home, dsn)

	// A session alice pushed before the lead looks: one turn.
	const watched, added = "team-live-watched", "team-live-added"
	first := teamBatch(watched, 1, 1)
	mustPushJSON(t, a.base, token, first, 201)

	lead := signInProxy(t, b.base, "lead")
	br := startTeamBrowser(t)
	list := br.tab(t, lead)
	list.open("/")
	list.waitLive()
	page := br.tab(t, lead)
	page.open("/session?id=" + watched)
	page.waitLive()
	// A mark on each page's window: gone if the page reloads.
	for _, p := range []*teamTab{list, page} {
		p.eval(`window.noReload = true`)
	}
	if n := list.count(`[data-testid="session-row"]`); n != 1 {
		t.Fatalf("list on B shows %d rows before the push; want 1", n)
	}

	// To A: a new session, and two more turns of the watched one.
	newer := teamBatch(added, 1, 3)
	mustPushJSON(t, a.base, token, newer, 201)
	more := teamBatch(watched, 2, 2)
	delete(more, "segments")
	delete(more, "actors")
	mustPushJSON(t, a.base, token, more, 200)

	row := `[data-testid="session-row"][data-session-id="` + added + `"]`
	list.waitWithin(liveWait, "the new session's row on B", `document.querySelector('`+row+`') !== null`)
	if got, want := list.text(row+` [data-testid="counts"]`), countsText(newer); got != want {
		t.Errorf("the new row's counts on B = %q; want %q, from the push", got, want)
	}
	if got, want := list.text(row+` [data-testid="title"]`), firstPrompt(newer); got != want {
		t.Errorf("the new row's title on B = %q; want the pushed prompt %q", got, want)
	}
	if got, want := list.text(`[data-testid="total"]`), "2 sessions"; !strings.HasPrefix(got, want) {
		t.Errorf("total on B = %q; want it to start with %q", got, want)
	}

	steps := len(first["steps"].([]any)) + len(more["steps"].([]any))
	turns := len(first["turns"].([]any)) + len(more["turns"].([]any))
	page.waitWithin(liveWait, "the pushed steps on the session page on B",
		fmt.Sprintf(`document.querySelectorAll('details.step').length === %d`, steps))
	if n := page.count(`[data-testid="turn"]`); n != turns {
		t.Errorf("session page on B shows %d turns; want %d", n, turns)
	}
	for _, s := range more["steps"].([]any) {
		seq := s.(map[string]any)["seq"].(int)
		if page.count(fmt.Sprintf(`#step-%d`, seq)) != 1 {
			t.Errorf("session page on B has no step %d of the push", seq)
		}
	}
	summarySteps := `Array.from(document.querySelectorAll('[data-testid="summary"] dt')).find(dt => dt.textContent === 'Steps').nextElementSibling.textContent`
	if got, want := page.eval(summarySteps), fmt.Sprint(steps); got != want {
		t.Errorf("summary on B says %v steps; want %s", got, want)
	}
	for _, p := range []*teamTab{list, page} {
		if p.eval(`window.noReload === true`) != true {
			t.Errorf("%s reloaded; want the change shown in place", p.path)
		}
	}
}

// TestTeamBrowserShare: a session imported into a local store, secrets
// and all, is shared with `service share` under alice's token; bob opens
// the team server in a browser and finds it there, alice's, with the
// export's placeholders where the secrets were and the secrets nowhere,
// and finds it again by a word on the search page.
func TestTeamBrowserShare(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and a browser")
	}
	dsn := pgtest.DSN(t)
	bin := mustBuild(t)
	f := newLocalShareFixture(t)
	f.importLines(t, -1)
	f.writeToken(t, teamToken(t, dsn, "alice"))
	team := startTeamServer(t, bin, f.dir, dsn)
	f.mustShare(t, shareSessionID, "--to", team.base)

	st := mustOpenStore(t, f.db)
	sh, err := st.Share(context.Background(), shareSessionID, team.base)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(sh.Manifest) < 2 {
		t.Fatalf("share manifest = %+v; want both secrets masked", sh.Manifest)
	}
	local := localDetail(t, f.db)

	bob := signInProxy(t, team.base, "bob")
	br := startTeamBrowser(t)
	p := br.tab(t, bob)
	p.open("/?owner=alice")
	row := `[data-testid="session-row"][data-session-id="` + shareSessionID + `"]`
	if p.count(row) != 1 {
		t.Fatalf("bob's list of alice's sessions has no row of %s: %v", shareSessionID, p.texts(`[data-testid="session-row"]`))
	}
	if got := p.text(row + ` [data-testid="owner"]`); got != "by alice" {
		t.Errorf("the row's owner = %q; want by alice", got)
	}
	// Seen, not only there: a long title does not push it out of its cell.
	if p.eval(`(function(){ const o = document.querySelector(`+jsQuote(row+` [data-testid="owner"]`)+`).getBoundingClientRect(),
		c = document.querySelector(`+jsQuote(row+` .title-cell`)+`).getBoundingClientRect();
		return o.width > 0 && o.left >= c.left && o.right <= c.right })()`) != true {
		t.Error("the row's owner is cut off by its cell")
	}
	p.open("/?owner=bob")
	if p.count(row) != 0 {
		t.Error("bob's own sessions list alice's shared session")
	}

	p.open("/session?id=" + shareSessionID + "&turns=all")
	// Only the owner: the team server's host name is not where it was captured.
	if got := strings.Join(strings.Fields(p.text(`[data-testid="session-owner"]`)), " "); got != "alice" {
		t.Errorf("the session page's owner = %q; want alice alone", got)
	}
	if n := p.count(`[data-testid="delete-button"]`); n != 0 {
		t.Errorf("bob is offered a delete button on alice's session (%d); want it for the owner only", n)
	}
	if n := p.count(`details.step`); n != len(local.Steps) {
		t.Errorf("the team's session page shows %d steps; want the %d shared", n, len(local.Steps))
	}
	pageText := p.eval(`document.body.innerText`).(string)
	html := p.eval(`document.documentElement.outerHTML`).(string)
	for _, secret := range []string{shareAWSKey, shareGHToken} {
		if strings.Contains(pageText, secret) || strings.Contains(html, secret) {
			t.Errorf("the team's session page holds the secret %s…", secret[:6])
		}
	}
	for _, g := range sh.Manifest {
		if !strings.Contains(pageText, g.Placeholder) {
			t.Errorf("the team's session page does not show the placeholder %s (%s)", g.Placeholder, g.Rule)
		}
	}

	// The owner is offered the delete, and told it is for the team.
	mine := br.tab(t, signInProxy(t, team.base, "alice"))
	mine.open("/session?id=" + shareSessionID)
	if got := mine.text(`[data-testid="delete-button"]`); got != "Delete for the team…" {
		t.Errorf("alice's delete button on her session says %q; want Delete for the team…", got)
	}

	word := strings.TrimSuffix(strings.Trim(strings.Fields(shareFirstPrompt)[3], "`"), ".md") // JOKE
	p.open("/search?q=" + word)
	if n := p.count(`[data-testid="search-group"][data-session-id="` + shareSessionID + `"]`); n != 1 {
		t.Errorf("search for %q on the team server finds %d groups of the shared session; want 1 (page: %s)", word, n, p.text(`[data-testid="search-page"]`))
	}

	if dir := os.Getenv("SERVICE_SCREENSHOTS"); dir != "" {
		for _, look := range []struct {
			suffix        string
			width, height int64
			scheme        string
		}{{"-1280-light", 1280, 800, "light"}, {"-1280-dark", 1280, 800, "dark"}, {"-390-light", 390, 844, "light"}, {"-390-dark", 390, 844, "dark"}} {
			p.emulate(look.width, look.height, look.scheme)
			p.open("/")
			p.waitLive()
			p.shoot(dir, "team-list"+look.suffix)
			p.open("/session?id=" + shareSessionID)
			p.waitLive()
			p.shoot(dir, "team-session"+look.suffix)
		}
	}
}

// teamToken makes a push token for user with `team token add`.
func teamToken(t *testing.T, dsn, user string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"team", "token", "add", user, "--db", dsn}, &out, io.Discard); err != nil {
		t.Fatalf("team token add %s = %v", user, err)
	}
	return strings.TrimSpace(out.String())
}

// startTeamServer runs `service serve --team` of bin on dsn as a child
// process on a free loopback port, users named by X-Forwarded-User.
func startTeamServer(t *testing.T, bin, home, dsn string) *proc {
	t.Helper()
	port := freePort(t)
	p := &proc{base: fmt.Sprintf("http://127.0.0.1:%d", port), out: &syncBuffer{}}
	p.cmd = exec.Command(bin, "serve", "--team", "--db", dsn, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--auth-header", "X-Forwarded-User")
	p.cmd.Env = append(os.Environ(), "HOME="+home)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("serve --team on %s = %v; output:\n%s", p.base, err, p.out)
		}
	})
	waitListening(t, port, p.out)
	return p
}

// teamBatch is a v1.2 batch of session sid with turns from firstTurn on,
// `turns` of them, each a prompt then a command and a read; the step seqs
// follow from the turn numbers, so later batches add to earlier ones.
func teamBatch(sid string, firstTurn, turns int) map[string]any {
	const started = "2026-03-04T10:00:00Z"
	at := func(turn, k int) string {
		return time.Date(2026, 3, 4, 10, turn, k, 0, time.UTC).Format(time.RFC3339)
	}
	var ts, steps []any
	for n := firstTurn; n < firstTurn+turns; n++ {
		tid := fmt.Sprintf("t%d", n)
		ts = append(ts, map[string]any{"id": tid, "session_id": sid, "segment_index": 0, "actor_id": "root",
			"index": n, "started_at": at(n, 0), "step_ids": []any{}})
		for k, step := range []struct {
			typ     string
			payload map[string]any
		}{
			{"message", map[string]any{"role": "user", "text": fmt.Sprintf("turn %d of %s: check the parser", n, sid)}},
			{"command", map[string]any{"command": fmt.Sprintf("go test ./parser -run Case%d", n), "stdout": "ok", "exit_code": 0}},
			{"read", map[string]any{"path": fmt.Sprintf("parser/case%d.go", n)}},
		} {
			decision := "accepted"
			if step.typ == "message" {
				decision = "n/a"
			}
			seq := n*10 + k
			steps = append(steps, map[string]any{"id": fmt.Sprintf("s%d", seq), "session_id": sid, "segment_index": 0,
				"turn_id": tid, "actor_id": "root", "seq": seq, "at": at(n, k+1), "type": step.typ, "decision": decision,
				"outcome": "ok", "content_status": "inline", "channels": []any{}, "flags": []any{}, "payload": step.payload})
		}
	}
	return map[string]any{
		"schema_version": "1.2",
		"session": map[string]any{"id": sid, "agent": map[string]any{"kind": "claude-code", "version": "2.0.1"},
			"workspace": map[string]any{"root": "/src/parser"}, "started_at": started},
		"segments": []any{map[string]any{"index": 0, "start_reason": "start", "started_at": started, "source_files": []any{}}},
		"actors":   []any{map[string]any{"id": "root", "type": "root"}},
		"turns":    ts,
		"steps":    steps,
	}
}

// countsText is how the list shows the steps of batch b by type, in the
// store's order of types: "3 commands 3 messages 3 reads".
func countsText(b map[string]any) string {
	n := map[string]int{}
	for _, s := range b["steps"].([]any) {
		n[s.(map[string]any)["type"].(string)]++
	}
	var parts []string
	for _, typ := range store.StepTypes {
		if n[typ] > 0 {
			parts = append(parts, views.Plural(n[typ], typ))
		}
	}
	return strings.Join(parts, " ")
}

// firstPrompt is the text of the first step of batch b.
func firstPrompt(b map[string]any) string {
	return b["steps"].([]any)[0].(map[string]any)["payload"].(map[string]any)["text"].(string)
}

// mustPushJSON pushes batch b to base with token and wants status.
func mustPushJSON(t *testing.T, base, token string, b map[string]any, status int) {
	t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	code, answer, err := pushTo(base, token, body)
	if err != nil || code != status {
		t.Fatalf("push %s to %s = %d %s %v; want %d", b["session"].(map[string]any)["id"], base, code, answer, err, status)
	}
}

// teamBrowser is a headless Chromium for the team server's tests.
type teamBrowser struct{ ctx context.Context }

// startTeamBrowser starts Debian's Chromium with the options of the
// handlers' browser tests; without it the test is skipped, or fails when
// SERVICE_BROWSER_TESTS=required.
func startTeamBrowser(t *testing.T) *teamBrowser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if _, statErr := os.Stat("/usr/bin/chromium"); statErr == nil {
		path, err = "/usr/bin/chromium", nil
	}
	if err != nil {
		if os.Getenv("SERVICE_BROWSER_TESTS") == "required" {
			t.Fatal("no Chromium installed and SERVICE_BROWSER_TESTS=required")
		}
		t.Skip("no Chromium installed; set SERVICE_BROWSER_TESTS=required to fail instead")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return &teamBrowser{ctx: ctx}
}

// teamTab is a browser tab on a team server.
type teamTab struct {
	t          *testing.T
	ctx        context.Context
	base, path string
}

// tab opens a tab on base, a signInProxy's address for a signed-in user.
func (b *teamBrowser) tab(t *testing.T, base string) *teamTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return &teamTab{t: t, ctx: ctx, base: base}
}

// signInProxy is a sign-in proxy in front of the team server at target,
// as oauth2-proxy is: on a loopback port of its own, it passes every
// request on with X-Forwarded-User set to user, whatever the client sent.
// (The page's own headers, network.SetExtraHTTPHeaders, would not do: the
// app's event stream is opened by a shared worker, whose requests do not
// carry a page's extra headers.)
func signInProxy(t *testing.T, target, user string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Header.Set("X-Forwarded-User", user)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // not a page or stream the browser left
				t.Logf("sign-in proxy: %s %s: %v", r.Method, r.URL, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// do runs actions within a bound, failing the test on an error.
func (p *teamTab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// open loads path and waits for the app's scripts to have run.
func (p *teamTab) open(path string) {
	p.t.Helper()
	p.path = path
	p.do("open "+path, chromedp.Navigate(p.base+path))
	p.waitWithin(10*time.Second, path+" has loaded", `document.readyState === 'complete' && window.htmx !== undefined`)
}

// waitLive waits for the page's live pill to say live: its change
// stream is open.
func (p *teamTab) waitLive() {
	p.t.Helper()
	p.waitWithin(10*time.Second, p.path+" is live", `document.getElementById('live-pill').textContent === 'live'`)
}

// eval evaluates expr in the page.
func (p *teamTab) eval(expr string) any {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitWithin polls cond in the page until it holds, for at most d.
func (p *teamTab) waitWithin(d time.Duration, what, cond string) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(function(){ try { return (`+cond+`) } catch (e) { return false } })()`))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not true after %v (%s; last error %v)", what, d, cond, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text is the whitespace-normalized text of the first element matching
// sel, or "".
func (p *teamTab) text(sel string) string {
	p.t.Helper()
	s, _ := p.eval(`(function(){ const e = document.querySelector(` + jsQuote(sel) + `);
		return e ? e.textContent.replace(/\s+/g, ' ').trim() : '' })()`).(string)
	return s
}

// texts is the normalized text of every element matching sel.
func (p *teamTab) texts(sel string) []any {
	p.t.Helper()
	v, _ := p.eval(`Array.from(document.querySelectorAll(` + jsQuote(sel) + `), e => e.textContent.replace(/\s+/g, ' ').trim())`).([]any)
	return v
}

// count is how many elements match sel.
func (p *teamTab) count(sel string) int {
	p.t.Helper()
	n, _ := p.eval(`document.querySelectorAll(` + jsQuote(sel) + `).length`).(float64)
	return int(n)
}

// emulate sets the viewport and colour scheme, as the handlers'
// screenshots are taken.
func (p *teamTab) emulate(width, height int64, scheme string) {
	p.t.Helper()
	p.do(fmt.Sprintf("emulate %dx%d %s", width, height, scheme), chromedp.EmulateViewport(width, height),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			})
			return err
		}))
}

// shoot writes what the tab shows as dir/name.png.
func (p *teamTab) shoot(dir, name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// jsQuote quotes s as a JavaScript string literal.
func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
