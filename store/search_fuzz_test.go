package store_test

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/agentreview/service/store"
)

// FuzzSearch checks that any query, however hostile, is either answered
// or refused as the query language says (ParseQuery's problems, 400), and
// never passed to SQLite as syntax it fails on: what ParseQuery accepts,
// Search answers, with each match inside its snippet and a next page that
// can be asked for.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{
		"auth.go", "handlers/auth.go", `"go test"`, "auth*", `"handlers auth"*`, "test -failing",
		"agent:claude-code", "type:edit|read", "status:failed", "flag:*", "path:handlers/", "tool:WebFetch", "workspace:wsroot",
		"after:2026-01-01 before:2027-01-01", "verdict:none", `verdict:"needs work" test`, `path:"a b"*`,
		`-verdict:"x y"`, `agent:"`, `"unclosed`, "AND OR NOT ( ) NEAR(", "col:umn", "x^y", "{a b}", `a"b`,
		"-only", "***", "rm -rf", "écrit* Crème", "\x00", "bad\xff",
	} {
		f.Add(q)
	}
	ctx := context.Background()
	s := mustOpen(f)
	for _, sid := range []string{"a", "b"} {
		mustApply(f, s, searchBatch(sid))
	}
	if err := s.SetVerdict(ctx, "b", store.Verdict{State: "needs work"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_, parseErr := store.ParseQuery(q)
		r, err := s.Search(ctx, store.SearchQuery{Q: q, Limit: 2})
		if parseErr != nil {
			var inv *store.InvalidError
			if !errors.As(err, &inv) || inv.Error() != "invalid search query" || len(inv.Problems) == 0 || inv.Problems[0].Path != "q" {
				t.Fatalf("Search(%q) = %v; ParseQuery refused it (%v), so want an InvalidError of the search query", q, err, parseErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("Search(%q) = %v; ParseQuery accepted it, so want an answer", q, err)
		}
		for _, h := range r.Hits {
			checkMatches(t, q, h)
		}
		if r.Next != "" {
			if _, err := s.Search(ctx, store.SearchQuery{Q: q, Limit: 2, After: r.Next}); err != nil {
				t.Fatalf("Search(%q) after %q = %v; want the next page", q, r.Next, err)
			}
		}
	})
}

// checkMatches fails t unless each of h's matches is a non-empty range of
// its snippet, on rune boundaries, in order and apart.
func checkMatches(t *testing.T, q string, h store.SearchHit) {
	t.Helper()
	end := 0
	for _, m := range h.Matches {
		if m[0] < end || m[1] <= m[0] || m[1] > len(h.Snippet) ||
			!utf8.RuneStart(h.Snippet[m[0]]) || (m[1] < len(h.Snippet) && !utf8.RuneStart(h.Snippet[m[1]])) {
			t.Fatalf("Search(%q): hit %s#%d has matches %v, not ranges in order of its snippet %q", q, h.SessionID, h.Seq, h.Matches, h.Snippet)
		}
		end = m[1]
	}
}
