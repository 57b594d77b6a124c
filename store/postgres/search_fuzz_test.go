package postgres

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentreview/service/store"
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
