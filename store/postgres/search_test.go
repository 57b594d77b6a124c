package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// searchPair is a SQLite and a PostgreSQL store, each with searchData
// and a verdict on search-alice.
func searchPair(t testing.TB) (*store.Store, *Store) {
	ctx := context.Background()
	lite, _ := mustOpenSQLite(t)
	pg := mustOpen(t)
	for _, b := range searchData(t) {
		for _, s := range []searcher{lite, pg} {
			if _, err := s.Apply(ctx, b); err != nil {
				t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
			}
		}
	}
	for _, s := range []interface {
		SetVerdict(context.Context, string, store.Verdict) error
	}{lite, pg} {
		if err := s.SetVerdict(ctx, "search-alice", store.Verdict{State: "approved", Reviewer: "lead"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []interface {
		AddNote(context.Context, string, store.NoteInput) (store.Note, error)
	}{lite, pg} {
		for _, n := range []struct {
			session string
			seq     int64
			text    string
		}{{"search-code", 3, "Flaky: Ünïcode here"}, {"search-code", 3, "second"}, {"search-code", 3, "third"}, {"search-code", 3, "fourth"},
			{"search-code", 10, "the go test ran twice"}, {"search-alice", 1, "FLAKY too"}} {
			if _, err := s.AddNote(ctx, n.session, store.NoteInput{Seq: n.seq, Author: "ann", Text: n.text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return lite, pg
}

// searchData is what both backends hold for the search tests: the real
// samples of every agent, generated sessions of two owners, one with a
// verdict, and steps written for the query language's cases: code words,
// a phrase deep in a long output (more words than a tsvector has
// positions for), and a word more often than a tsvector keeps positions of.
func searchData(t testing.TB) []*store.Batch {
	t.Helper()
	batches := storetest.SampleBatches(t)
	code := storetest.Batch("search-code", 0, 40)
	set := func(i int, f func(p *store.Payload)) { f(&code.Steps[i].Payload) }
	for i := range code.Steps {
		st := &code.Steps[i]
		switch {
		case st.Type == "command" && i < 10:
			set(i, func(p *store.Payload) {
				p.Command = ptr("go test ./handlers/... -run TestAuth")
				p.Stdout = ptr("ok  \tgithub.com/acme/handlers\t0.2s\nauthorization checked: Crème brûlée")
			})
		case st.Type == "edit":
			set(i, func(p *store.Payload) {
				p.Path = "handlers/auth.go"
				p.NewString = ptr("func authorize(r *http.Request) error {}")
			})
		case st.Type == "read":
			set(i, func(p *store.Payload) { p.Path = "store/author.go" })
		case st.Type == "command":
			var long strings.Builder
			for w := range 17000 {
				fmt.Fprintf(&long, "word%d ", w%5000)
			}
			long.WriteString("deepphrase tail end.\n")
			for range 300 {
				long.WriteString("repeat filler ")
			}
			long.WriteString("repeat finale")
			set(i, func(p *store.Payload) { p.Command = ptr("make long"); p.Stdout = ptr(long.String()) })
		}
	}
	// Words whose tsvector would pass PostgreSQL's 1 MB: the row has none
	// and is checked in Go.
	var huge strings.Builder
	for w := range 100000 {
		fmt.Fprintf(&huge, "u%dv ", w)
	}
	huge.WriteString("hugeend marker")
	for i := range code.Steps {
		if code.Steps[i].Type == "message" {
			code.Steps[i].Payload.Text = ptr(huge.String())
			break
		}
	}
	alice := storetest.Batch("search-alice", 0, 30)
	alice.Owner = "alice"
	alice.Session.Workspace.Root = "/home/alice/projects/billing"
	return append(batches, code, alice, storetest.Batch("search-gen", 0, 60), storetest.Batch("search-gen", 1, 60))
}

// searchQueries cover every part of the query language: code words,
// phrases, prefixes, exclusions, each filter alone and with words, and
// malformed queries.
var searchQueries = []string{
	"auth.go", "handlers/auth.go", "go test", `"go test"`, "auth*", `"handlers auth"*`, "authorize",
	"JOKE.md", "creme brulee", "Crème", "deepphrase tail", `"hugeend marker"`, "u99999v", "u9999*", `"repeat finale"`, `"word4999 word0"`, "word12*",
	"test -auth", "go -test", "error -failed", "the", "file", "read", "bash", "git", "README",
	"agent:claude-code", "agent:codex go", "type:command", "type:edit|read auth", "status:failed", "status:failed -error",
	"flag:dangerous_command", "flag:failed", "path:handlers/", "path:auth go", "path:JOKE.md", "path:fixtures/ type:command", "workspace:billing", "workspace:/home",
	"verdict:approved", "verdict:approved the", "verdict:maybe", `verdict:"needs work" go`, "owner:alice", "owner:local go", "owner:nobody",
	"after:2026-01-01", "before:2026-01-01", "after:2025-01-01T00:00:00Z before:2027-01-01 test",
	"-test agent:claude-code", "billing -alice", "proj* -home", "alice*",
	"note:*", "note:flaky", "note:ünï", "note:ÜNÏ", "note:Ünï", `note:"go test"`, "note:* type:command", "go note:*", "note:nowhere",
	// malformed
	"", "   ", `"unclosed`, "-only", "...", "type:nope", "verdict:\"a\tb\"", "0\x00", "after:yesterday", "agent:", strings.Repeat("x ", 40),
	strings.Repeat("y", 1001), "\xff",
}

// Search on PostgreSQL gives what SQLite's gives for the same batches:
// the same hits (session, seq, type, status, title, snippet and match
// offsets) in the same pages with the same cursors, and the same errors.
func TestSearchMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	lite, pg := searchPair(t)
	// Both kinds of rows a search checks in Go are there.
	var noPositions, noWords int
	err := pg.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT exact AND doc IS NOT NULL), count(*) FILTER (WHERE doc IS NULL) FROM search_docs`).
		Scan(&noPositions, &noWords)
	if err != nil || noPositions == 0 || noWords == 0 {
		t.Fatalf("search_docs has %d rows without positions and %d without words (%v); want some of each", noPositions, noWords, err)
	}

	// Every way of a word search: every match read from the GIN index
	// first, and the walk of the sessions newest first (walkSessions), in
	// windows of every session, of one session and then every match from
	// the GIN index, and of one session, two, and so on.
	defer func(n, w, sp int) { rareHits, firstWindow, sparseHits = n, w, sp }(rareHits, firstWindow, sparseHits)
	for _, way := range []struct{ rare, window, sparse int }{
		{1 << 30, firstWindow, sparseHits}, {0, firstWindow, sparseHits}, {0, 1, 1 << 30}, {0, 1, 0},
	} {
		rareHits, firstWindow, sparseHits = way.rare, way.window, way.sparse
		compareSearches(t, ctx, lite, pg)
	}
	// A cursor that is not one is refused alike.
	for _, s := range []searcher{lite, pg} {
		if _, err := s.Search(ctx, store.SearchQuery{Q: "go", After: "1:2"}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("Search(after 1:2) = %v; want ErrBadCursor", err)
		}
	}
}

// compareSearches runs every query of searchQueries on both stores, every
// page, and reports where PostgreSQL's answer differs from SQLite's.
func compareSearches(t *testing.T, ctx context.Context, lite, pg searcher) {
	t.Helper()
	hits := 0
	for _, q := range searchQueries {
		for _, limit := range []int{0, 7} {
			want, wantErr := allPages(ctx, lite, q, limit)
			got, gotErr := allPages(ctx, pg, q, limit)
			if (wantErr != nil) != (gotErr != nil) || !sameError(gotErr, wantErr) {
				t.Errorf("Search(%q) error = %v; SQLite's is %v", q, gotErr, wantErr)
				continue
			}
			n := 0
			for _, p := range want {
				n += len(p.Hits)
			}
			hits += n
			if testing.Verbose() && limit == 0 {
				t.Logf("%q: %d hits", q, n)
			}
			if len(got) != len(want) {
				t.Errorf("Search(%q, limit %d) = %d pages; SQLite gives %d", q, limit, len(got), len(want))
			}
			for i := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("Search(%q, limit %d) page %d differs:\n%s", q, limit, i, pageDiff(got[i], want[i]))
					break
				}
			}
		}
	}
	if hits < 5000 {
		t.Errorf("the queries found only %d hits in all; they prove little", hits)
	}
}

// searcher is what these tests ask of both backends.
type searcher interface {
	Apply(ctx context.Context, b *store.Batch) (store.ApplyResult, error)
	Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
}

// allPages reads every page of a query, following Next.
func allPages(ctx context.Context, s searcher, q string, limit int) ([]store.SearchResult, error) {
	var pages []store.SearchResult
	after := ""
	for {
		r, err := s.Search(ctx, store.SearchQuery{Q: q, Limit: limit, After: after})
		if err != nil {
			return nil, err
		}
		pages = append(pages, r)
		if r.Next == "" || len(pages) > 200 {
			return pages, nil
		}
		after = r.Next
	}
}

func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	var g, w *store.InvalidError
	if errors.As(got, &g) != errors.As(want, &w) {
		return false
	}
	return got.Error() == want.Error() && (g == nil || reflect.DeepEqual(g.Problems, w.Problems))
}

// pageDiff names the first hit where two pages differ.
func pageDiff(got, want store.SearchResult) string {
	for i := range max(len(got.Hits), len(want.Hits)) {
		var g, w store.SearchHit
		if i < len(got.Hits) {
			g = got.Hits[i]
		}
		if i < len(want.Hits) {
			w = want.Hits[i]
		}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("hit %d:\n got  %+v\n want %+v", i, g, w)
		}
	}
	return fmt.Sprintf("next %q; SQLite's %q", got.Next, want.Next)
}

// A walk of the sessions (a word with many matches) stops between two
// windows once its page is out of time, as SQLite's does: with the hits
// of the sessions it searched, Partial, and a Next from which the pages
// go on to find every hit a search with time to spare finds, in order.
// Each walk here searches one session (its first window) before its clock
// is past the budget.
func TestSearchStopsAtItsBudget(t *testing.T) {
	ctx := context.Background()
	pg := mustOpen(t)
	const sessions = 5
	for i := range sessions {
		b := storetest.Batch(fmt.Sprintf("budget%d", i), 0, 20)
		if i%2 == 1 { // two starts: sessions sort by start, then by pk
			b.Session.StartedAt = "2026-01-01T10:00:00.000Z"
		}
		if i == 0 { // left out by workspace:widget, and so by its windows
			b.Session.Workspace.Root = "/home/dev/src/other"
		}
		if i != 2 { // one session without the word: a window with no hit
			for j := range b.Steps {
				p := &b.Steps[j].Payload
				switch b.Steps[j].Type {
				case "command":
					p.Stdout = ptr("budgetword found")
				case "read":
					p.Path = "/src/budgetword.go"
				}
			}
		}
		if _, err := pg.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	defer func(r, w, sp int) { rareHits, firstWindow, sparseHits = r, w, sp }(rareHits, firstWindow, sparseHits)
	rareHits, firstWindow, sparseHits = 0, 1, 0 // every word search walks, a session at a time
	// Each query and the sessions its windows hold.
	queries := map[string]int{"budgetword": sessions, "budgetw*": sessions, `"budgetword go"`: sessions,
		"budgetword type:read": sessions, "budgetword workspace:widget": sessions - 1}
	hitsOf := func(q string, limit int) (hits []string, partial int) {
		t.Helper()
		pages, err := allPages(ctx, pg, q, limit)
		if err != nil {
			t.Fatalf("Search(%s) = %v", q, err)
		}
		for _, p := range pages {
			for _, h := range p.Hits {
				hits = append(hits, fmt.Sprintf("%s#%d", h.SessionID, h.Seq))
			}
			if p.Partial {
				partial++
			}
		}
		return hits, partial
	}
	want := map[string][]string{}
	for q := range queries {
		if want[q], _ = hitsOf(q, 50); len(want[q]) == 0 {
			t.Fatalf("Search(%s) found nothing", q)
		}
	}
	defer func() { store.SearchClock = time.Now }()
	store.SearchClock = func() time.Time { return time.Now().Add(2 * store.SearchBudget) }
	for q, windows := range queries {
		for _, limit := range []int{1, 50} {
			got, partial := hitsOf(q, limit)
			if !reflect.DeepEqual(got, want[q]) {
				t.Errorf("Search(%s, limit %d) stopping at each window found %v; want %v", q, limit, got, want[q])
			}
			if limit == 50 && partial != windows-1 {
				t.Errorf("Search(%s) stopping at each window gave %d partial pages; want %d, one a session but the last", q, partial, windows-1)
			}
		}
	}
}

// The filters store.IsSessionFilter names are those whose condition here
// names no step column: walkSessions' windows leave out the sessions
// they do not keep.
func TestSessionFilters(t *testing.T) {
	for _, key := range append(slices.Clone(store.SearchFilterKeys), "session") {
		if got, want := store.IsSessionFilter(key), !strings.Contains(searchFilters[key], "st."); got != want {
			t.Errorf("store.IsSessionFilter(%s) = %v; its condition %q says %v", key, got, searchFilters[key], want)
		}
	}
}
