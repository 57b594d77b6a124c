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
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/internal/browsertest"
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
	br := browsertest.Start(t)
	list := br.Tab(t, lead)
	list.Open("/")
	waitLive(list)
	page := br.Tab(t, lead)
	page.Open("/session?id=" + watched)
	waitLive(page)
	// A mark on each page's window: gone if the page reloads.
	for _, p := range []*browsertest.Tab{list, page} {
		browsertest.Eval[any](p, `window.noReload = true`)
	}
	if n := list.Count(`[data-testid="session-row"]`); n != 1 {
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
	list.WaitForWithin(liveWait, "the new session's row on B", `document.querySelector('`+row+`') !== null`)
	if got, want := list.Text(row+` [data-testid="counts"]`), countsText(newer); got != want {
		t.Errorf("the new row's counts on B = %q; want %q, from the push", got, want)
	}
	if got, want := list.Text(row+` [data-testid="title"]`), firstPrompt(newer); got != want {
		t.Errorf("the new row's title on B = %q; want the pushed prompt %q", got, want)
	}
	if got, want := list.Text(`[data-testid="total"]`), "2 sessions"; !strings.HasPrefix(got, want) {
		t.Errorf("total on B = %q; want it to start with %q", got, want)
	}

	steps := len(first["steps"].([]any)) + len(more["steps"].([]any))
	turns := len(first["turns"].([]any)) + len(more["turns"].([]any))
	page.WaitForWithin(liveWait, "the pushed steps on the session page on B",
		fmt.Sprintf(`document.querySelectorAll('details.step').length === %d`, steps))
	if n := page.Count(`[data-testid="turn"]`); n != turns {
		t.Errorf("session page on B shows %d turns; want %d", n, turns)
	}
	for _, s := range more["steps"].([]any) {
		seq := s.(map[string]any)["seq"].(int)
		if page.Count(fmt.Sprintf(`#step-%d`, seq)) != 1 {
			t.Errorf("session page on B has no step %d of the push", seq)
		}
	}
	summarySteps := `Array.from(document.querySelectorAll('[data-testid="summary"] dt')).find(dt => dt.textContent === 'Steps').nextElementSibling.textContent`
	if got, want := browsertest.Eval[any](page, summarySteps), fmt.Sprint(steps); got != want {
		t.Errorf("summary on B says %v steps; want %s", got, want)
	}
	for _, p := range []*browsertest.Tab{list, page} {
		if browsertest.Eval[any](p, `window.noReload === true`) != true {
			t.Errorf("%s reloaded; want the change shown in place", browsertest.Eval[string](p, `location.pathname + location.search`))
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
	br := browsertest.Start(t)
	p := br.Tab(t, bob)
	p.Open("/?owner=alice")
	row := `[data-testid="session-row"][data-session-id="` + shareSessionID + `"]`
	if p.Count(row) != 1 {
		t.Fatalf("bob's list of alice's sessions has no row of %s: %v", shareSessionID, p.Texts(`[data-testid="session-row"]`))
	}
	if got := p.Text(row + ` [data-testid="owner"]`); got != "by alice" {
		t.Errorf("the row's owner = %q; want by alice", got)
	}
	// Seen, not only there: a long title does not push it out of its cell.
	if browsertest.Eval[any](p, `(function(){ const o = document.querySelector(`+browsertest.JSString(row+` [data-testid="owner"]`)+`).getBoundingClientRect(),
		c = document.querySelector(`+browsertest.JSString(row+` .title-cell`)+`).getBoundingClientRect();
		return o.width > 0 && o.left >= c.left && o.right <= c.right })()`) != true {
		t.Error("the row's owner is cut off by its cell")
	}
	p.Open("/?owner=bob")
	if p.Count(row) != 0 {
		t.Error("bob's own sessions list alice's shared session")
	}

	p.Open("/session?id=" + shareSessionID + "&turns=all")
	// Only the owner: the team server's host name is not where it was captured.
	if got := strings.Join(strings.Fields(p.Text(`[data-testid="session-owner"]`)), " "); got != "alice" {
		t.Errorf("the session page's owner = %q; want alice alone", got)
	}
	if n := p.Count(`[data-testid="delete-button"]`); n != 0 {
		t.Errorf("bob is offered a delete button on alice's session (%d); want it for the owner only", n)
	}
	if n := p.Count(`details.step`); n != len(local.Steps) {
		t.Errorf("the team's session page shows %d steps; want the %d shared", n, len(local.Steps))
	}
	pageText := browsertest.Eval[any](p, `document.body.innerText`).(string)
	html := browsertest.Eval[any](p, `document.documentElement.outerHTML`).(string)
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
	mine := br.Tab(t, signInProxy(t, team.base, "alice"))
	mine.Open("/session?id=" + shareSessionID)
	if got := mine.Text(`[data-testid="delete-button"]`); got != "Delete for the team…" {
		t.Errorf("alice's delete button on her session says %q; want Delete for the team…", got)
	}

	word := strings.TrimSuffix(strings.Trim(strings.Fields(shareFirstPrompt)[3], "`"), ".md") // JOKE
	p.Open("/search?q=" + word)
	if n := p.Count(`[data-testid="search-group"][data-session-id="` + shareSessionID + `"]`); n != 1 {
		t.Errorf("search for %q on the team server finds %d groups of the shared session; want 1 (page: %s)", word, n, p.Text(`[data-testid="search-page"]`))
	}

	if dir := os.Getenv("SERVICE_SCREENSHOTS"); dir != "" {
		for _, look := range []struct {
			suffix        string
			width, height int64
			scheme        string
		}{{"-1280-light", 1280, 800, "light"}, {"-1280-dark", 1280, 800, "dark"}, {"-390-light", 390, 844, "light"}, {"-390-dark", 390, 844, "dark"}} {
			p.Emulate(look.width, look.height, look.scheme)
			p.Open("/")
			waitLive(p)
			p.Shoot(dir, "team-list"+look.suffix)
			p.Open("/session?id=" + shareSessionID)
			waitLive(p)
			p.Shoot(dir, "team-session"+look.suffix)
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

// waitLive waits for the page's live pill to say live: its change
// stream is open.
func waitLive(p *browsertest.Tab) {
	p.T.Helper()
	p.WaitFor("the page is live", `document.getElementById('live-pill').textContent === 'live'`)
}
