package handlers

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/agentreview/service/store"
)

// browser and tab are internal/browsertest's (shared with cmd/service's
// team browser tests), with the helpers only these tests use.
type browser struct{ *browsertest.Browser }

type tab struct{ *browsertest.Tab }

// startBrowser starts headless Chromium for t and its subtests (see
// browsertest.Start).
// onTheList holds once the tab shows the session list, parsed whole: the
// section is there before its rows are, so a test that reads the rows as
// soon as the section shows may read none.
const onTheList = `location.pathname === '/' && document.readyState === 'complete'
	&& document.querySelector('[data-testid="session-list"]') !== null`

func startBrowser(t *testing.T) *browser { return &browser{browsertest.Start(t)} }

// newTab opens a tab on the server at base; the tab closes when t ends.
func (b *browser) newTab(t *testing.T, base string) *tab { return &tab{b.Tab(t, base)} }

// evalJS evaluates expr in the page and decodes its value as T.
func evalJS[T any](p *tab, expr string) T {
	p.T.Helper()
	return browsertest.Eval[T](p.Tab, expr)
}

// awaitJS evaluates expr, a promise, in the page and decodes what it
// resolves to as T.
func awaitJS[T any](p *tab, expr string) T {
	p.T.Helper()
	return browsertest.Await[T](p.Tab, expr)
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
	deadline := time.Now().Add(browsertest.WaitTimeout)
	for {
		var err error
		ln, err = net.Listen("tcp", r.addr)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			r.t.Fatalf("listen again on %s: %v", r.addr, err)
		}
		time.Sleep(browsertest.PollEvery)
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

// withProblems fails the steps of batch b of the seqs failed and flags
// those of the seqs flagged (a dangerous command), as an agent's push
// records them, and returns b.
func withProblems(b obj, failed, flagged []int) obj {
	for _, st := range b["steps"].(arr) {
		st := st.(obj)
		if slices.Contains(failed, st["seq"].(int)) {
			st["outcome"], st["error"] = "failed", obj{"type": "exit_code", "message": "exit status 1"}
		}
		if slices.Contains(flagged, st["seq"].(int)) {
			st["flags"] = arr{obj{"kind": "dangerous_command", "severity": "danger", "reason": "test"}}
		}
	}
	return b
}

// problemSeqs are the seqs of b's failed or flagged steps, in its order.
func problemSeqs(b obj) []int {
	var out []int
	for _, st := range b["steps"].(arr) {
		if st := st.(obj); st["outcome"] == "failed" || len(st["flags"].(arr)) > 0 {
			out = append(out, st["seq"].(int))
		}
	}
	return out
}
