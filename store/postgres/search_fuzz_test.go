package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

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
	for _, q := range []string{"修改", `"代碼"*`, "verdict:\"needs work\"", "path:\"a b\"", "x\u2060y", "ǅ ﬁ", "NEAR(a b)"} {
		f.Add(q)
	}
	ctx := context.Background()
	lite, _ := mustOpenSQLite(f)
	pg := mustOpen(f)
	for _, b := range searchData(f) {
		for _, s := range []searcher{lite, pg} {
			if _, err := s.Apply(ctx, b); err != nil {
				f.Fatalf("Apply(%s) = %v", b.Session.ID, err)
			}
		}
	}
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
