package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
	"github.com/agentreview/service/store/postgres/pgtest"
)

// TestSecretsCommand lists, from a store file and from a team server's
// database, the sessions holding a secret and each secret once with the
// steps it is in: which sessions, rules, previews and steps, each computed
// from what was pushed (the value planted, where, and what the export's
// scan says of that value alone); a value only the generic rule matches
// only with --candidates; the list's filters, --session, --json, and
// refusals of a bad date or an unknown session.
func TestSecretsCommand(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		withHome(t)
		db := filepath.Join(t.TempDir(), "store.db")
		testSecretsCommand(t, db, func(ctx context.Context, b *store.Batch) (store.ApplyResult, error) {
			st, err := store.Open(ctx, db)
			if err != nil {
				return store.ApplyResult{}, err
			}
			defer st.Close()
			return st.Apply(ctx, b)
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		db := pgtest.DSN(t)
		st, err := postgres.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		testSecretsCommand(t, db, st.Apply)
	})
}

func testSecretsCommand(t *testing.T, db string, apply func(context.Context, *store.Batch) (store.ApplyResult, error)) {
	ctx := context.Background()
	token := "ghp_8fK2mQ9xL4tR7vZ1cW5nB3hJ6pY0sD2gA4eU" // a GitHub token: a definite secret
	key := "AKIA" + "Q4T7ZK2M8XW3NB5R"                  // an AWS access key id
	candidate := "Xk29fQ7vLp03Zt8mWq1Rb6Yc4Nd5Hs"       // random-looking, beside "api_key": a candidate
	// planted is each session's steps' stdout; "\x1b" in a title must not
	// reach the terminal.
	sessions := []struct {
		id, kind, started, title string
		stdout                   []string
	}{
		{"leak", "claude-code", "2026-03-02T10:00:00Z", "deploy \x1b[2J the app", []string{
			"pushed with " + token, "all good", "export AWS_ACCESS_KEY_ID=" + key + "\nagain " + token}},
		{"clean", "claude-code", "2026-03-01T10:00:00Z", "read the docs", []string{"nothing here", "nor here"}},
		{"maybe", "codex", "2026-02-28T10:00:00Z", "configure", []string{`api_key = "` + candidate + `"`}},
	}
	for _, s := range sessions {
		steps := []any{map[string]any{
			"id": s.id + "-prompt", "session_id": s.id, "segment_index": 0, "turn_id": "t1", "actor_id": "root",
			"seq": 0, "at": s.started, "type": "message", "decision": "none", "outcome": "ok",
			"content_status": "inline", "channels": []any{}, "flags": []any{},
			"payload": map[string]any{"role": "user", "text": s.title},
		}}
		for i, out := range s.stdout {
			steps = append(steps, map[string]any{
				"id": fmt.Sprintf("%s-%d", s.id, i), "session_id": s.id, "segment_index": 0, "turn_id": "t1", "actor_id": "root",
				"seq": i + 1, "at": s.started, "type": "command", "decision": "accepted", "outcome": "ok",
				"content_status": "inline", "channels": []any{}, "flags": []any{},
				"payload": map[string]any{"command": "run", "stdout": out},
			})
		}
		body, _ := json.Marshal(map[string]any{
			"schema_version": "1.2",
			"session":        map[string]any{"id": s.id, "agent": map[string]any{"kind": s.kind, "version": "1"}, "workspace": map[string]any{"root": "/w"}, "started_at": s.started},
			"segments":       []any{map[string]any{"index": 0, "start_reason": "start", "started_at": s.started, "source_files": []any{}}},
			"actors":         []any{map[string]any{"id": "root", "type": "root"}},
			"turns": []any{map[string]any{"id": "t1", "session_id": s.id, "segment_index": 0, "actor_id": "root", "index": 1, "started_at": s.started,
				"step_ids": []any{}}},
			"steps": steps,
		})
		b, err := store.ParseBatch(body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}

	// What the scan says of each value alone: its rule and preview.
	alone := func(text string) redact.Finding {
		m := redact.NewMasker("")
		m.Mask(text, "x")
		f := m.Findings()
		if len(f) != 1 {
			t.Fatalf("the scan finds %d values in %q; want 1", len(f), text)
		}
		return f[0]
	}
	tok, aws, cand := alone(token), alone("export AWS_ACCESS_KEY_ID="+key), alone(`api_key = "`+candidate+`"`)
	if tok.Confidence != redact.Definite || aws.Confidence != redact.Definite || cand.Confidence != redact.Candidate {
		t.Fatalf("confidences %s, %s, %s; the test wants two definite values and a candidate", tok.Confidence, aws.Confidence, cand.Confidence)
	}

	secrets := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"secrets", "--db", db}, args...), &out, &errOut)
		return out.String(), err
	}
	// The steps each value was planted in, as the listing names them.
	where := func(s int, value string) string {
		var at []string
		for i, out := range sessions[s].stdout {
			if strings.Contains(out, value) {
				at = append(at, fmt.Sprintf("step %d ", i+1))
			}
		}
		return strings.Join(at, "output, ") + "output" // the field stdout, in words
	}
	leakHead := "leak  2026-03-02T10:00:00Z  claude-code  " + strings.ReplaceAll(sessions[0].title, "\x1b[2J", "") + "\n" // the title without its control sequence
	tokLine := fmt.Sprintf("  %s  %s  %s\n", tok.Rule, tok.Preview, where(0, token))
	awsLine := fmt.Sprintf("  %s  %s  %s\n", aws.Rule, aws.Preview, where(0, key))
	candLine := fmt.Sprintf("  %s  %s  %s\n", cand.Rule, cand.Preview, where(2, candidate))
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, leakHead + tokLine + awsLine + "2 secrets in 1 of 3 sessions\n(1 possible secret only the generic rule matched not listed: --candidates lists them)\n"},
		{[]string{"--candidates"}, leakHead + tokLine + awsLine +
			"maybe  2026-02-28T10:00:00Z  codex  configure\n" + candLine + "2 secrets and 1 possible secret in 2 of 3 sessions\n"},
		{[]string{"--agent", "codex"}, "No secrets in 1 session\n(1 possible secret only the generic rule matched not listed: --candidates lists them)\n"},
		{[]string{"--until", "2026-03-02"}, "No secrets in 2 sessions\n(1 possible secret only the generic rule matched not listed: --candidates lists them)\n"},
		{[]string{"--session", "leak"}, leakHead + tokLine + awsLine + "2 secrets in 1 of 1 session\n"},
		{[]string{"--workspace", "/elsewhere"}, "No secrets in 0 sessions\n"},
	} {
		if out, err := secrets(c.args...); err != nil || out != c.want {
			t.Errorf("secrets %q = %v\n%s\nwant\n%s", c.args, err, out, c.want)
		}
	}
	if out, _ := secrets(); strings.Contains(out, token[4:]) || strings.Contains(out, key[4:]) {
		t.Errorf("the listing shows a whole secret:\n%s", out)
	}

	out, err := secrets("--json", "--candidates")
	var res struct {
		Sessions []struct {
			SessionID string `json:"session_id"`
			Agent     string `json:"agent"`
			Findings  []struct {
				Rule, Confidence string
				Where            []struct {
					Seq   *int64
					Field string
				}
			}
		}
		Scanned int
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("secrets --json = %v\n%s", err, out)
	}
	var got []string
	for _, s := range res.Sessions {
		for _, f := range s.Findings {
			for _, w := range f.Where {
				got = append(got, fmt.Sprintf("%s %s %s %d %s", s.SessionID, f.Rule, f.Confidence, *w.Seq, w.Field))
			}
		}
	}
	want := []string{
		fmt.Sprintf("leak %s definite 1 payload.stdout", tok.Rule), fmt.Sprintf("leak %s definite 3 payload.stdout", tok.Rule),
		fmt.Sprintf("leak %s definite 3 payload.stdout", aws.Rule), fmt.Sprintf("maybe %s candidate 1 payload.stdout", cand.Rule),
	}
	if res.Scanned != len(sessions) || !slices.Equal(got, want) {
		t.Errorf("secrets --json: %d scanned, places %q; want %d and %q", res.Scanned, got, len(sessions), want)
	}

	// --fail: status 1 once a value is listed, after the listing.
	for _, c := range []struct {
		args []string
		want string // the error; "" for none
	}{
		{[]string{"--fail"}, "2 secrets listed (--fail)"},
		{[]string{"--fail", "--agent", "codex"}, ""},
		{[]string{"--fail", "--agent", "codex", "--candidates"}, "1 possible secret listed (--fail)"},
		{[]string{"--fail", "--json", "--session", "leak"}, "2 secrets listed (--fail)"},
	} {
		out, err := secrets(c.args...)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) || !strings.Contains(out, "in ") && !strings.Contains(out, `"scanned"`) {
			t.Errorf("secrets %q = %v\n%s\nwant error %q after the listing", c.args, err, out, c.want)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--session", "nope"}, `no session "nope" in the store`},
		{[]string{"--since", "yesterday"}, "since"},
	} {
		if _, err := secrets(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("secrets %q = %v; want an error saying %q", c.args, err, c.want)
		}
	}
}
