package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentreview/service/store"
)

// demoSession builds one example session step by step.
type demoSession struct {
	b    *store.Batch
	at   time.Time
	turn string
	seq  int64
}

func newDemoSession(id, kind, version, root string, start time.Time, metrics *store.Metrics) *demoSession {
	ts := start.UTC().Format(time.RFC3339)
	return &demoSession{
		at: start,
		b: &store.Batch{
			SchemaVersion: store.SchemaVersion,
			Session: store.SessionHeader{
				ID: id, Agent: store.Agent{Kind: kind, Version: version}, Workspace: store.Workspace{Root: root},
				StartedAt: ts, Source: "demo", Metrics: metrics,
			},
			Segments: []store.Segment{{Index: 0, StartReason: "start", StartedAt: ts, SourceFiles: []string{}}},
			Actors:   []store.Actor{{ID: "main", Type: "root", Label: "main"}},
		},
	}
}

func (d *demoSession) tick(s int) string {
	d.at = d.at.Add(time.Duration(s) * time.Second)
	return d.at.UTC().Format(time.RFC3339)
}

// prompt starts a turn with the user's prompt.
func (d *demoSession) prompt(mode, text string) {
	d.turn = fmt.Sprintf("turn-%d", len(d.b.Turns)+1)
	d.b.Turns = append(d.b.Turns, store.Turn{
		ID: d.turn, SessionID: d.b.Session.ID, ActorID: "main", Index: int64(len(d.b.Turns) + 1),
		Mode: mode, StartedAt: d.tick(20), StepIDs: []string{},
	})
	d.step(store.TypeMessage, "n/a", "ok", store.Payload{Role: "user", Text: &text})
}

func (d *demoSession) step(typ, decision, outcome string, p store.Payload, opts ...func(*store.Step)) {
	d.seq++
	st := store.Step{
		ID: fmt.Sprintf("%s-step-%d", d.b.Session.ID, d.seq), SessionID: d.b.Session.ID, TurnID: d.turn, ActorID: "main",
		Seq: d.seq, At: d.tick(7), Type: typ, Decision: decision, Outcome: outcome,
		ContentStatus: store.ContentInline, Channels: []string{"transcript"}, Flags: []store.Flag{}, Payload: p,
	}
	for _, o := range opts {
		o(&st)
	}
	d.b.Steps = append(d.b.Steps, st)
}

func (d *demoSession) say(text string) {
	d.step(store.TypeMessage, "n/a", "ok", store.Payload{Role: "assistant", Text: &text})
}

func (d *demoSession) think(text string) {
	d.step(store.TypeMessage, "n/a", "ok", store.Payload{Role: "thinking", Text: &text})
}

func (d *demoSession) run(cmd, stdout string, code int64, opts ...func(*store.Step)) {
	cwd, empty := d.b.Session.Workspace.Root, ""
	outcome := "ok"
	if code != 0 {
		outcome = "failed"
		opts = append([]func(*store.Step){failed("exit_code", fmt.Sprintf("exit status %d", code))}, opts...)
	}
	d.step(store.TypeCommand, "accepted", outcome, store.Payload{Command: &cmd, Cwd: &cwd, Stdout: &stdout, Stderr: &empty, ExitCode: &code}, opts...)
}

func (d *demoSession) read(path string, from, to int64) {
	d.step(store.TypeRead, "auto", "ok", store.Payload{Path: d.b.Session.Workspace.Root + "/" + path, Range: &[2]int64{from, to}})
}

func (d *demoSession) edit(path, old, new string, opts ...func(*store.Step)) {
	full := false
	d.step(store.TypeEdit, "accepted", "ok", store.Payload{Path: d.b.Session.Workspace.Root + "/" + path, OldString: &old, NewString: &new, IsFullWrite: &full}, opts...)
}

func (d *demoSession) write(path, content string) {
	full := true
	d.step(store.TypeEdit, "accepted", "ok", store.Payload{Path: d.b.Session.Workspace.Root + "/" + path, NewString: &content, IsFullWrite: &full})
}

func (d *demoSession) tool(name string, raw any) {
	b, _ := json.Marshal(raw)
	d.step(store.TypeOther, "auto", "ok", store.Payload{ToolName: name, Raw: b})
}

func failed(typ, msg string) func(*store.Step) {
	return func(s *store.Step) {
		s.Outcome = "failed"
		s.Error = &store.StepError{Type: typ, Message: msg}
	}
}

func flagged(kind, severity, reason string) func(*store.Step) {
	return func(s *store.Step) {
		s.Flags = append(s.Flags, store.Flag{Kind: kind, Severity: severity, Reason: reason})
	}
}

func rejected(s *store.Step) {
	s.Decision = "rejected"
	s.Outcome = "not_run"
	s.Error = &store.StepError{Type: "rejected", Message: "The user doesn't want to proceed with this tool use."}
}

// demoSessions returns the example sessions of the demo, started before now.
func demoSessions(now time.Time) []*store.Batch {
	return []*store.Batch{rateLimiter(now), clineRefactor(now), codexFix(now), unrecorded(now),
		geminiDocs(now),
		copilotResearch(now),
		opencodeDocs(now),
		crushMigration(now),
		qwenFix(now),
		aiderTypo(now),
	}
}

// rateLimiter is a long Claude Code session: many turns, failing and fixed
// tests, diffs, a long test log, a rejected command and a flagged one.
func rateLimiter(now time.Time) *store.Batch {
	d := newDemoSession("demo-ratelimit-4c1e", "claude-code", "2.1.39", "/home/dev/src/orders-api", now.Add(-3*time.Hour),
		&store.Metrics{CostUSD: 3.8127, APIRequests: 118, Tokens: store.Tokens{Input: 412803, Output: 38211, CacheRead: 2910442, CacheCreation: 120330}})
	d.b.Session.Workspace.Repo = "github.com/example/orders-api"
	d.prompt("default", "Add per-client rate limiting to the orders API: 100 requests a minute, answered with 429 and a Retry-After header.")
	d.think("The router is in internal/http/router.go. A token bucket per API key, kept in memory, is enough for one instance.")
	d.read("internal/http/router.go", 1, 120)
	d.run("go test ./...", "ok  \texample.com/orders-api/internal/http\t0.412s\nok  \texample.com/orders-api/internal/store\t1.205s\n", 0)
	d.write("internal/http/ratelimit.go", "package http\n\nimport (\n\t\"net/http\"\n\t\"strconv\"\n\t\"sync\"\n\t\"time\"\n)\n\n// limiter is a token bucket per API key.\ntype limiter struct {\n\tmu      sync.Mutex\n\trate    float64\n\tburst   float64\n\tbuckets map[string]*bucket\n}\n\ntype bucket struct {\n\ttokens float64\n\tlast   time.Time\n}\n")
	d.edit("internal/http/router.go", "\tr.Use(logging)\n", "\tr.Use(logging)\n\tr.Use(rateLimit(newLimiter(100, time.Minute)))\n")
	log := strings.Repeat("=== RUN   TestRateLimit/burst\n    ratelimit_test.go:41: request 101: got 200, want 429\n", 1400)
	d.run("go test ./internal/http/ -run TestRateLimit -v", log+"--- FAIL: TestRateLimit (0.02s)\nFAIL\n", 1)
	d.say("The limiter refills before checking, so the 101st request still passes. I will take the token first, then refill.")
	d.edit("internal/http/ratelimit.go", "\tb.refill(now)\n\tif b.tokens < 1 {\n", "\tif b.tokens < 1 {\n\t\tb.refill(now)\n\t}\n\tif b.tokens < 1 {\n")
	d.run("go test ./internal/http/ -run TestRateLimit", "ok  \texample.com/orders-api/internal/http\t0.031s\n", 0)
	d.run("rm -rf /tmp/orders-cache && go clean -testcache", "", 0, flagged("dangerous_command", "warn", "rm -rf outside the workspace"))
	d.run("git push origin main", "", 1, rejected)
	d.say("Rate limiting is in place: 100 requests a minute per API key, 429 with Retry-After beyond that. I did not push: you declined it.")
	for i := 2; i <= 36; i++ {
		d.prompt("default", fmt.Sprintf("Review pass %d: check %s for edge cases and add a test if one is missing.", i, []string{"the refill arithmetic", "concurrent requests", "clock skew", "the Retry-After value"}[i%4]))
		d.read("internal/http/ratelimit_test.go", int64(i*10), int64(i*10+40))
		if i%5 == 0 {
			d.edit("internal/http/ratelimit_test.go", "}\n", fmt.Sprintf("}\n\nfunc TestRateLimitCase%d(t *testing.T) {\n\tl := newLimiter(1, time.Second)\n\tif !l.allow(\"k\", time.Unix(%d, 0)) {\n\t\tt.Fatal(\"first request refused\")\n\t}\n}\n", i, i))
			d.run("go test ./internal/http/", "ok  \texample.com/orders-api/internal/http\t0.044s\n", 0)
		}
		if i%7 == 0 {
			d.tool("WebFetch", map[string]any{"url": "https://datatracker.ietf.org/doc/html/rfc6585#section-4", "prompt": "What must a 429 response carry?"})
		}
		d.say(fmt.Sprintf("Pass %d done: nothing to change.", i))
	}
	return d.b
}

// clineRefactor is a Cline session in plan and act modes, with reported
// cost, a failed edit and a secret printed by a command.
func clineRefactor(now time.Time) *store.Batch {
	d := newDemoSession("demo-cline-91f0", "cline", "3.58.0", "/home/dev/src/billing-ui", now.Add(-26*time.Hour),
		&store.Metrics{CostUSD: 0.6412, APIRequests: 14, Tokens: store.Tokens{Input: 98211, Output: 7310}})
	d.prompt("plan", "The invoice table re-renders on every keystroke in the search box. Plan a fix.")
	d.read("src/components/InvoiceTable.tsx", 1, 210)
	d.say("Plan: memoise the filtered rows with useMemo keyed on the query and the invoices, and debounce the search input by 200 ms.")
	d.prompt("act", "Go ahead.")
	d.edit("src/components/InvoiceTable.tsx", "const rows = invoices.filter(matches(query))", "const rows = useMemo(() => invoices.filter(matches(query)), [invoices, query])",
		failed("edit_error", "old_string not found in file"))
	d.read("src/components/InvoiceTable.tsx", 40, 60)
	d.edit("src/components/InvoiceTable.tsx", "  const rows = invoices.filter(matches(query));\n", "  const rows = useMemo(\n    () => invoices.filter(matches(query)),\n    [invoices, query],\n  );\n")
	d.run("npm test -- InvoiceTable", "PASS src/components/InvoiceTable.test.tsx\n  ✓ filters by customer (31 ms)\n  ✓ does not re-render rows on unrelated state (12 ms)\n", 0)
	d.run("printenv | grep STRIPE", "STRIPE_SECRET_KEY=sk_live_"+"51HxDemoKeyNotReal0123456789abcdefghijklmnopqrstuvwxyzABCD\n", 0,
		flagged("secret_in_output", "danger", "output contains a secret (stripe-key)"))
	d.say("Done: rows are memoised and the input is debounced. Note: the last command printed a live Stripe key; rotate it.")
	end := d.tick(30)
	d.b.Session.EndedAt = end
	d.b.Segments[0].EndedAt = end
	return d.b
}

// codexFix is a short Codex session; Codex reports no cost.
func codexFix(now time.Time) *store.Batch {
	d := newDemoSession("demo-codex-2b77", "codex", "0.89.0", "/home/dev/src/cli-tool", now.Add(-50*time.Hour), nil)
	d.prompt("", "Fix the panic when the config file is empty.")
	d.run("rg -n \"yaml.Unmarshal\" .", "internal/config/load.go:31:\tif err := yaml.Unmarshal(b, &cfg); err != nil {\n", 0)
	d.edit("internal/config/load.go", "\tif err := yaml.Unmarshal(b, &cfg); err != nil {\n", "\tif len(bytes.TrimSpace(b)) == 0 {\n\t\treturn Default(), nil\n\t}\n\tif err := yaml.Unmarshal(b, &cfg); err != nil {\n")
	d.run("go test ./internal/config/", "ok  \texample.com/cli-tool/internal/config\t0.009s\n", 0)
	d.say("An empty config file now gives the defaults instead of a nil map panic.")
	d.b.Session.EndedAt = d.tick(10)
	return d.b
}

// unrecorded is a Claude Code session captured while the capture process
// was stopped: no cost, and content that arrived only by reference.
func unrecorded(now time.Time) *store.Batch {
	d := newDemoSession("demo-unrecorded-77aa", "claude-code", "2.1.38", "/home/dev/src/docs-site", now.Add(-75*time.Hour), nil)
	d.prompt("plan", "Why does the docs build take four minutes?")
	ref := "otel:tool_result/toolu_01HdemoRef"
	d.step(store.TypeCommand, "accepted", "ok", store.Payload{OutputRef: &ref}, func(s *store.Step) {
		s.ContentStatus, s.Channels = store.ContentReferenceOnly, []string{"otel"}
	})
	d.say("Most of the time goes into image optimisation, which runs on every build; caching its output would cut the build to under a minute.")
	return d.b
}
