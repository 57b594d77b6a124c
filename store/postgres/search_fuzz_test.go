package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// FuzzSearchMatchesSQLite: for any query, PostgreSQL's search answers as
// SQLite's does on the same batches (TestSearchMatchesSQLite's): the same
// error, or the same hits, snippets, matches and cursors on the first
// pages.
func FuzzSearchMatchesSQLite(f *testing.F) {
	for _, q := range searchQueries {
		f.Add(q)
	}
	for _, q := range []string{"修改", `"代碼"*`, "verdict:\"needs work\"", "path:\"a b\"", "x\u2060y", "ǅ ﬁ", "NEAR(a b)", "tool:WebFetch", `tool:"Task" status:failed`} {
		f.Add(q)
	}
	ctx := context.Background()
	lite, pg := searchPair(f)
	f.Fuzz(func(t *testing.T, q string) {
		after, liteAfter := "", ""
		for page := range 3 {
			want, wantErr := lite.Search(ctx, store.SearchQuery{Q: q, Limit: 7, After: liteAfter})
			got, gotErr := pg.Search(ctx, store.SearchQuery{Q: q, Limit: 7, After: after})
			if !sameError(gotErr, wantErr) {
				t.Fatalf("Search(%q) page %d error = %v; SQLite's is %v", q, page, gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Search(%q) page %d differs:\n%s", q, page, pageDiff(got, want))
			}
			if want.Next == "" {
				return
			}
			after, liteAfter = got.Next, want.Next
		}
	})
}

// FuzzListMatchesSQLite: for any filters and cursor, PostgreSQL's list
// answers as SQLite's does on the same sessions (every agent's samples,
// two generated sessions, verdicts of three states): the same error, or
// the same sessions, counts, chips and cursor.
func FuzzListMatchesSQLite(f *testing.F) {
	f.Add("claude-code", "", "", "", "", "", false, false, "", uint8(0), "")
	f.Add("", "alpha", "approved", "2026-01-01", "2026-12-01T00:00:00Z", "", true, false, "recorded", uint8(2), "")
	f.Add("", "/", "needs work", "", "", store.OwnerLocal, false, true, "not_recorded", uint8(1), "x")
	f.Add("codex", "a\x00", "\xff", "yesterday", "", "", false, false, "some", uint8(3), "1:gen-a")
	p := newPair(f)
	for _, b := range storetest.AgentSamples(f) {
		p.apply(f, b)
	}
	p.apply(f, gen("gen-a", 0, 20))
	p.apply(f, gen("gen-b", 0, 20))
	ctx := context.Background()
	for i, state := range []string{"approved", "needs work", "reviewed"} {
		for _, s := range []interface {
			List(context.Context, store.ListQuery) (store.SessionList, error)
			SetVerdict(context.Context, string, store.Verdict) error
		}{p.lite, p.pg} {
			l, err := s.List(ctx, store.ListQuery{Limit: 3})
			if err != nil || len(l.Sessions) < 3 {
				f.Fatalf("List = %d sessions, %v", len(l.Sessions), err)
			}
			if err := s.SetVerdict(ctx, l.Sessions[i].ID, store.Verdict{State: state}); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, agent, workspace, verdict, since, until, owner string, failed, flagged bool, cost string, limit uint8, after string) {
		q := store.ListQuery{Agent: agent, Workspace: workspace, Verdict: verdict, Since: since, Until: until, Owner: owner,
			Failed: failed, Flagged: flagged, Cost: cost, Limit: int(limit % 8), After: after}
		for page := range 3 {
			lite, errLite := p.lite.List(ctx, q)
			pg, errPG := p.pg.List(ctx, q)
			if errors.Is(errPG, store.ErrBadCursor) && !storable(q.After) {
				return // a cursor PostgreSQL could not have made is refused there alone (storable)
			}
			same(t, fmt.Sprintf("List(%+v) page %d", q, page), lite, pg, errLite, errPG)
			if t.Failed() || errLite != nil || lite.Next == "" {
				return
			}
			q.After = lite.Next
		}
	})
}

// FuzzUsageMatchesSQLite: for any groups, breakdown, period and filters,
// PostgreSQL's usage reports add up as SQLite's do on the same records
// (every agent's samples and records across midnight): the same error or
// rows.
func FuzzUsageMatchesSQLite(f *testing.F) {
	for _, g := range store.UsageGroups {
		f.Add(g, "", "", "", int64(0), int64(0), "", "", "", "")
		f.Add(g, store.UsageByAgent, store.UsageSortCost, strings.Join(store.UsageGroups, ","), int64(0), int64(0), "", "", "", "")
	}
	f.Add(store.UsageByDay, store.UsageByModel, "", "block,session", int64(1772409600), int64(1773014400), "claude-code", "claude-sonnet-4-5", "usage-extra", "")
	f.Add(store.UsageByProject, store.UsageByModel, store.UsageSortTokens, "day,session", int64(0), int64(0), "", "", "", "/tmp/ws-usage-extra")
	f.Add(store.UsageBySession, "", store.UsageSortCost, "session", int64(0), int64(0), "", "", "", "")
	f.Add("year", "project", "price", "fortnight", int64(-1), int64(1<<40), "\x00", "\xff", "no-such-session", "\x00")
	ctx := context.Background()
	lite, _ := mustOpenSQLite(f)
	pg := mustOpen(f)
	extra := usageBatch("usage-extra",
		usageRecord("x1", "claude-sonnet-4-5", "2026-03-01T23:30:00Z", 1200, 300, ptr(0.0123)),
		usageRecord("x2", "claude-sonnet-4-5", "2026-03-02T00:10:00Z", 800, 100, nil),
		usageRecord("x3", "no-such-model", "2026-03-02T01:00:00Z", 500, 50, nil))
	for _, b := range append(storetest.AgentSamples(f), extra) {
		mustApply(f, pg, b)
		if _, err := lite.Apply(ctx, b); err != nil {
			f.Fatalf("SQLite Apply(%s) = %v", b.Session.ID, err)
		}
	}
	f.Fuzz(func(t *testing.T, group, breakdown, sort, more string, since, until int64, agent, model, session, project string) {
		q := store.UsageQuery{Group: group, Breakdown: breakdown, Sort: sort, Agent: agent, Model: model, Project: project}
		if since != 0 {
			q.Since = time.Unix(since, 0).UTC()
		}
		if until != 0 {
			q.Until = time.Unix(until, 0).UTC()
		}
		if session != "" {
			q.Sessions = []string{session}
		}
		var groups []string
		if more != "" {
			groups = strings.Split(more, ",")
		}
		want, wantErr := lite.UsageReports(ctx, q, groups...)
		got, err := pg.UsageReports(ctx, q, groups...)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("UsageReports(%+v, %q) error = %v; SQLite's is %v", q, groups, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("UsageReports(%+v, %q) =\n %+v\nSQLite gives\n %+v", q, groups, got, want)
		}
	})
}

// FuzzDetailMatchesSQLite: for any narrowing of any session (every agent's
// samples and a generated session pushed twice), PostgreSQL's detail reads
// as SQLite's does: the same error, or the same session, turns, steps,
// heads, gaps (a window of each turn's steps, around a step) and report,
// and the same next and previous failed or flagged step from the seq.
// Since, a change stamp of each store's own, is left out.
func FuzzDetailMatchesSQLite(f *testing.F) {
	f.Add(uint8(0), 0, 0, int64(0), false, 0, false, 0, false)
	f.Add(uint8(1), 2, 4, int64(3), true, 40, false, 0, false)
	f.Add(uint8(2), -1, -5, int64(-1), true, -3, true, -2, true)
	f.Add(uint8(3), 1, 1000, int64(100000), false, 1, true, 1, false)
	f.Add(uint8(5), 0, 0, int64(30), false, 0, false, 3, true)   // a window of a sample's turn, around seq 30
	f.Add(uint8(5), 2, 0, int64(0), false, 100, false, 5, false) // its last two turns' windows
	p := newPair(f)
	for _, b := range storetest.AgentSamples(f) {
		p.apply(f, b)
	}
	for push := range 2 {
		p.apply(f, gen("gen-a", push, 60))
	}
	ctx := context.Background()
	l, err := p.lite.List(ctx, store.ListQuery{})
	if err != nil || len(l.Sessions) < 5 {
		f.Fatalf("List = %d sessions, %v", len(l.Sessions), err)
	}
	f.Fuzz(func(t *testing.T, session uint8, turns, before int, seq int64, bySeq bool, head int, noSteps bool, steps int, around bool) {
		id := l.Sessions[int(session)%len(l.Sessions)].ID
		q := store.DetailQuery{Turns: turns, Before: before, Head: head, NoSteps: noSteps, Steps: steps}
		if bySeq {
			q.Seq = &seq
		}
		if around {
			q.Around = seq
		}
		lite, errLite := p.lite.Detail(ctx, id, q)
		pg, errPG := p.pg.Detail(ctx, id, q)
		same(t, fmt.Sprintf("Detail(%s, %+v)", id, q), lite, pg, errLite, errPG)
		// The e and E keys' question from the same seq.
		type next struct {
			Seq int64
			OK  bool
		}
		for _, back := range []bool{false, true} {
			var lite, pg next
			var errLite, errPG error
			lite.Seq, lite.OK, errLite = p.lite.NextProblem(ctx, id, seq, back)
			pg.Seq, pg.OK, errPG = p.pg.NextProblem(ctx, id, seq, back)
			same(t, fmt.Sprintf("NextProblem(%s, %d, %v)", id, seq, back), lite, pg, errLite, errPG)
		}
	})
}
