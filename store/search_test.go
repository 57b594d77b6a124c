package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

type hitKey struct {
	Session string
	Seq     int64
}

func hitKeys(r store.SearchResult) []hitKey {
	keys := []hitKey{}
	for _, h := range r.Hits {
		keys = append(keys, hitKey{h.SessionID, h.Seq})
	}
	return keys
}

func mustSearch(t *testing.T, s *store.Store, q string) store.SearchResult {
	t.Helper()
	r, err := s.Search(context.Background(), store.SearchQuery{Q: q})
	if err != nil {
		t.Fatalf("Search(%q) = %v", q, err)
	}
	return r
}

// searchBatch is newBatch with a word of its own in every indexed field.
func searchBatch(sid string) obj {
	b := newBatch(sid)
	set(b, "session.workspace.root", "/home/dev/wsroot"+sid)
	set(b, "session.workspace.repo", "github.com/acme/reporepo"+sid)
	set(b, "steps[0].payload.text", "Please fix promptword"+sid)
	set(b, "steps[1].payload.command", "rm -rf build_dir"+sid)
	set(b, "steps[1].payload.stdout", "stdoutword"+sid)
	set(b, "steps[1].payload.stderr", "stderrword"+sid)
	set(b, "steps[1].flags[0].reason", "flagreason"+sid)
	set(b, "steps[2].payload.path", "handlers/auth"+sid+".go")
	set(b, "steps[2].payload.old_string", "oldword"+sid)
	set(b, "steps[2].payload.new_string", "newword"+sid)
	set(b, "steps[2].error.message", "errormessage"+sid)
	set(b, "steps[3].payload.path", "store/readpath"+sid+".go")
	set(b, "steps[4].payload.tool_name", "ToolName"+sid)
	set(b, "steps[4].payload.raw", obj{"nested": arr{obj{"deep": "rawvalue" + sid}}})
	return b
}

func TestSearchSnippet(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	set(b, "steps[1].payload.stdout", "before <script>alert(1)</script> the needle after")
	mustApply(t, s, b)
	r := mustSearch(t, s, "needle")
	if len(r.Hits) != 1 {
		t.Fatalf("Search(needle) = %+v; want one hit", r.Hits)
	}
	h := r.Hits[0]
	if h.Seq != 2 || h.Type != "command" || h.Status != "ok" || h.Agent != "testagent" || h.Title != "Fix the failing test" {
		t.Errorf("hit = %+v; want seq 2, command, ok, testagent, titled", h)
	}
	if len(h.Matches) != 1 || h.Snippet[h.Matches[0][0]:h.Matches[0][1]] != "needle" {
		t.Errorf("hit snippet %q matches %v; want one match on needle", h.Snippet, h.Matches)
	}
	if !strings.Contains(h.Snippet, "<script>") {
		t.Errorf("snippet %q; want the text as stored (escaping is the view's)", h.Snippet)
	}
	if h.Role != "" {
		t.Errorf("command hit's role = %q; want none", h.Role)
	}
	// A message's hit has its role, as the step's payload gives it.
	steps := b["steps"].([]any)
	prompt := steps[0].(obj)["payload"].(obj)
	word := strings.Fields(prompt["text"].(string))[0]
	i := slices.IndexFunc(mustSearch(t, s, word).Hits, func(h store.SearchHit) bool { return h.Seq == 1 })
	if i < 0 {
		t.Fatalf("Search(%q) does not find step 1", word)
	}
	if h := mustSearch(t, s, word).Hits[i]; h.Role != prompt["role"] {
		t.Errorf("hit of step 1 (%q) role = %q; want %q", word, h.Role, prompt["role"])
	}
}

func TestSearchFilters(t *testing.T) {
	s := mustOpen(t)
	a := newBatch("a")
	mustApply(t, s, a)
	b := newBatch("b")
	set(b, "session.agent.kind", "claude-code")
	set(b, "session.started_at", "2026-11-05T10:00:00Z")
	set(b, "session.workspace.root", "/src/project-b")
	mustApply(t, s, b)
	if err := s.SetVerdict(context.Background(), "b", store.Verdict{State: "needs_attention", Reviewer: "ann"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		want []hitKey
	}{
		{"agent:claude-code", []hitKey{{"b", 1}, {"b", 2}, {"b", 3}, {"b", 4}, {"b", 5}}},
		{"type:edit", []hitKey{{"b", 3}, {"a", 3}}},
		{"type:edit|read agent:testagent", []hitKey{{"a", 3}, {"a", 4}}},
		{"status:failed", []hitKey{{"b", 3}, {"a", 3}}},
		{"flag:dangerous_command", []hitKey{{"b", 2}, {"a", 2}}},
		{"path:ws/main", []hitKey{{"b", 3}, {"b", 4}, {"a", 3}, {"a", 4}}},
		{"workspace:project-b type:read", []hitKey{{"b", 4}}},
		{"after:2026-11-01 type:command", []hitKey{{"b", 2}}},
		{"before:2026-11-01 type:command", []hitKey{{"a", 2}}},
		{"verdict:needs_attention type:message", []hitKey{{"b", 1}}},
		{"test agent:testagent", []hitKey{{"a", 1}, {"a", 2}}},
		{"test -failing agent:testagent", []hitKey{{"a", 2}}},
		{"testagent", []hitKey{{"a", 0}}},
		// A session's own row (agent, workspace root, repo): a prefix of
		// b's root, and words of it with a word of the row excluded, with
		// and without a prefix (matched in Go, and by the index).
		{"project*", []hitKey{{"b", 0}}},
		{"project* -src", []hitKey{}},
		{"project -src", []hitKey{}},
		{"testagent -tmp", []hitKey{}},
		{"testagent -tm*", []hitKey{}},
		{"-failing type:message", []hitKey{}},
		{`"go test" status:ok`, []hitKey{{"b", 2}, {"a", 2}}},
	} {
		t.Run(tc.q, func(t *testing.T) {
			got := hitKeys(mustSearch(t, s, tc.q))
			if tc.want == nil {
				tc.want = []hitKey{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Search(%q) = %v; want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestSearchPages(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustApply(t, s, newBatch("b"))
	var all []hitKey
	after := ""
	for range 10 {
		r, err := s.Search(context.Background(), store.SearchQuery{Q: "agent:testagent", Limit: 3, After: after})
		if err != nil {
			t.Fatalf("Search(page after %q) = %v", after, err)
		}
		all = append(all, hitKeys(r)...)
		if after = r.Next; after == "" {
			break
		}
	}
	whole := hitKeys(mustSearch(t, s, "agent:testagent"))
	if len(whole) != 10 || !reflect.DeepEqual(all, whole) {
		t.Errorf("pages of 3 = %v; want the 10 hits of one page %v", all, whole)
	}
}

func TestSearchMalformed(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	for _, tc := range []struct{ q, problem string }{
		{"", "is empty"},
		{"   ", "is empty"},
		{`"unclosed`, "never closed"},
		{"-only", "only excluded"},
		{"type:shell", `"shell" is not a step type`},
		{"verdict:" + strings.Repeat("x", store.MaxStateChars+1), "longer than 64 characters"},
		{"verdict:\"two\nlines\"", "must be one line"},
		{`verdict:"unclosed`, "never closed"},
		{"after:yesterday", `"yesterday" is not a date`},
		{"agent:", "has no value"},
		{"***", `"***" has no letters or digits`},
		{`-"--"*`, `"-\"--\"*" has no letters or digits`},
		{`AND OR NOT ( ) NEAR(`, "no letters or digits"},
		{strings.Repeat("a ", 600), "longer than"},
		{strings.Repeat("w ", 40), "at most 32"},
		{"bad\xff", "not valid UTF-8"},
		{"0\x00", "has a NUL character"},
	} {
		t.Run(tc.q, func(t *testing.T) {
			_, err := s.Search(context.Background(), store.SearchQuery{Q: tc.q})
			var inv *store.InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 || !strings.Contains(inv.Problems[0].Message, tc.problem) {
				t.Fatalf("Search(%q) = %v (%+v); want an InvalidError saying %q", tc.q, err, inv, tc.problem)
			}
		})
	}
	// FTS5 keywords and syntax inside words are searched as text.
	for _, q := range []string{"AND", "NEAR(a b)", `a"b`, "col:umn", "x^y", "{a b}"} {
		if _, err := s.Search(context.Background(), store.SearchQuery{Q: q}); err != nil {
			t.Errorf("Search(%q) = %v; want nil", q, err)
		}
	}
	if _, err := s.Search(context.Background(), store.SearchQuery{Q: "test", After: "nope"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("Search(after=nope) = %v; want ErrBadCursor", err)
	}
}

func TestReindex(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, searchBatch("x"))
	before := mustSearch(t, s, "rawvaluex")
	n, err := s.Reindex(context.Background())
	if err != nil {
		t.Fatalf("Reindex() = %v", err)
	}
	if n != 6 { // one session row and five steps
		t.Errorf("Reindex() indexed %d rows; want 6", n)
	}
	if after := mustSearch(t, s, "rawvaluex"); !reflect.DeepEqual(after, before) || len(after.Hits) != 1 {
		t.Errorf("Search after Reindex = %+v; want %+v", after, before)
	}
}

// An upsert that changes a step replaces its text in the index.
func TestSearchFollowsUpdates(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	set(b, "steps[1].payload.stdout", "firstversion")
	mustApply(t, s, b)
	mustSearch(t, s, "firstversion") // the index holds the first version
	set(b, "steps[1].payload.stdout", "secondversion")
	mustApply(t, s, b)
	if got := hitKeys(mustSearch(t, s, "firstversion")); len(got) != 0 {
		t.Errorf("Search(firstversion) after rewrite = %v; want none", got)
	}
	if got := hitKeys(mustSearch(t, s, "secondversion")); !reflect.DeepEqual(got, []hitKey{{"a", 2}}) {
		t.Errorf("Search(secondversion) = %v; want [{a 2}]", got)
	}
}

// A store made before the index (5 migrations) gets it built from what it
// holds when a build with migration 006 opens it.
func TestSearchMigrationIndexesAnOldStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	if err := store.CreateAtVersion(ctx, path, 5); err != nil {
		t.Fatal(err)
	}
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.ExecuteScript(conn, `
		INSERT INTO sessions (pk, id, agent_kind, agent_version, workspace_root, started_at, started_ns, source, owner_id, captured_on, updated_at)
		  VALUES (1, 'old', 'testagent', '1', '/src/oldworkspace', '2026-01-02T10:00:00Z', 0, 'push:testagent', 'local', 'host', 1);
		INSERT INTO steps (session_pk, id, seq, segment_index, turn_id, actor_id, at, type, decision, outcome, content_status,
		  flag_count, channels, flags, updated_at, payload, stdout)
		  VALUES (1, 'old-s1', 1, 0, 't', 'r', '2026-01-02T10:00:01Z', 'command', 'accepted', 'ok', 'inline',
		  0, '[]', '[]', 1, '{"command":"make oldbuild"}', 'oldoutput');`, nil)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpenPath(t, path)
	for q, want := range map[string][]hitKey{
		"oldbuild": {{"old", 1}}, "oldoutput": {{"old", 1}}, "oldworkspace": {{"old", 0}},
	} {
		if got := hitKeys(mustSearch(t, s, q)); !reflect.DeepEqual(got, want) {
			t.Errorf("Search(%q) after migrating = %v; want %v", q, got, want)
		}
	}
}

// Tool input nested deeper than SQLite's JSON functions go is still
// stored and indexed (as its text), never a failed push, and its step is
// still counted by its tool and found by tool: (the tool is a column of
// its own, not read from the payload).
func TestSearchDeepToolInput(t *testing.T) {
	s := mustOpen(t)
	var raw any = "deepword"
	for range 5000 {
		raw = obj{"k": raw}
	}
	b := newBatch("a")
	set(b, "steps[4].payload.raw", raw)
	mustApply(t, s, b)
	if got := hitKeys(mustSearch(t, s, "deepword")); !reflect.DeepEqual(got, []hitKey{{"a", 5}}) {
		t.Errorf("Search(deepword) = %v; want [{a 5}]", got)
	}
	tool := b["steps"].([]any)[4].(obj)["payload"].(obj)["tool_name"].(string)
	if got := hitKeys(mustSearch(t, s, "tool:"+tool)); !reflect.DeepEqual(got, []hitKey{{"a", 5}}) {
		t.Errorf("Search(tool:%s) = %v; want [{a 5}]", tool, got)
	}
	if got, want := mustDetail(t, s, "a").Report.Tools, []store.ToolUse{{Tool: tool, Calls: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the report's tools = %+v; want %+v", got, want)
	}
	// command: reads a command's payload, never the deep one beside it.
	command := b["steps"].([]any)[1].(obj)["payload"].(obj)["command"].(string)
	if got := hitKeys(mustSearch(t, s, `command:"`+command+`"`)); !reflect.DeepEqual(got, []hitKey{{"a", 2}}) {
		t.Errorf("Search(command:%q) = %v; want [{a 2}]", command, got)
	}
}

// A word search walks the sessions newest first a few at a time (reading
// only the index rows of their steps): its pages are in the order of one
// sort of every hit, whatever order the sessions were made and pushed in,
// across batches of sessions whose rows interleave.
func TestSearchWalksSessionsInOrder(t *testing.T) {
	s := mustOpen(t)
	// Made in one order, started in another (w1 and w3 at the same time).
	starts := []string{"2026-01-05", "2026-01-09", "2026-01-01", "2026-01-09", "2026-01-03", "2026-01-07", "2026-01-02", "2026-01-08", "2026-01-06"}
	type sess struct {
		id    string
		start string
		made  int
	}
	var all []sess
	rest := map[string]arr{}
	for i, day := range starts {
		sid := fmt.Sprintf("w%d", i)
		b := newBatch(sid)
		set(b, "session.started_at", day+"T00:00:00Z")
		set(b, "steps[1].payload.stdout", "walkword")
		set(b, "steps[3].payload.path", "/src/walkword.go")
		if i%3 == 0 {
			set(b, "session.workspace.root", "/src/walkword")
		}
		steps := b["steps"].(arr)
		b["steps"] = steps[:3]
		mustApply(t, s, b)
		rest[sid] = steps[3:]
		all = append(all, sess{sid, day, i})
	}
	mustSearch(t, s, "walkword") // the first steps are indexed
	// The rest of each session's steps, pushed later in reverse: every
	// session's rows now span those of the sessions made after it.
	for i := len(all) - 1; i >= 0; i-- {
		b := stepsBatch(all[i].id, rest[all[i].id][0].(obj), rest[all[i].id][1].(obj))
		set(b, "session.started_at", all[i].start+"T00:00:00Z")
		if all[i].made%3 == 0 {
			set(b, "session.workspace.root", "/src/walkword")
		}
		mustApply(t, s, b)
	}
	slices.SortFunc(all, func(a, b sess) int {
		if c := strings.Compare(b.start, a.start); c != 0 {
			return c
		}
		return b.made - a.made
	})
	// A word, and a filter alone (a page query of its own, filterPageSQL).
	want := map[string][]hitKey{}
	for _, se := range all {
		if se.made%3 == 0 {
			want["walkword"] = append(want["walkword"], hitKey{se.id, 0})
		}
		want["walkword"] = append(want["walkword"], hitKey{se.id, 2}, hitKey{se.id, 4})
		want["path:/src/walkword.go"] = append(want["path:/src/walkword.go"], hitKey{se.id, 4})
	}
	for q, want := range want {
		for _, limit := range []int{1, 2, 5, 50} {
			var got []hitKey
			after := ""
			for range 50 {
				r, err := s.Search(context.Background(), store.SearchQuery{Q: q, Limit: limit, After: after})
				if err != nil {
					t.Fatalf("Search(%s, limit %d, after %q) = %v", q, limit, after, err)
				}
				got = append(got, hitKeys(r)...)
				if after = r.Next; after == "" {
					break
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%s) in pages of %d = %v; want %v", q, limit, got, want)
			}
		}
	}
}

// owner: finds only the sessions of that owner_id (a team server's user).
func TestSearchOwnerFilter(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	for _, sid := range []string{"own-a", "own-b", "own-c"} {
		b := storetest.Batch(sid, 0, 5)
		if sid == "own-b" {
			b.Owner = "alice"
		}
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{"owner:alice": "own-b", "owner:" + store.OwnerLocal + " agent:nobody": ""} {
		var got []string
		for _, h := range mustSearch(t, s, q).Hits {
			if !slices.Contains(got, h.SessionID) {
				got = append(got, h.SessionID)
			}
		}
		if strings.Join(got, ",") != want {
			t.Errorf("Search(%q) finds sessions %q; want %q", q, got, want)
		}
	}
	if got := len(mustSearch(t, s, "owner:"+store.OwnerLocal).Hits); got != 10 {
		t.Errorf("Search(owner:%s) = %d hits; want the 10 steps of own-a and own-c", store.OwnerLocal, got)
	}
}

// searchAll follows a query's Next cursors to its end and returns every
// hit and how many of the pages were partial.
func searchAll(t *testing.T, s *store.Store, q string, limit int) (hits []hitKey, partial int) {
	t.Helper()
	after := ""
	for range 100 {
		r, err := s.Search(context.Background(), store.SearchQuery{Q: q, Limit: limit, After: after})
		if err != nil {
			t.Fatalf("Search(%s, after %q) = %v", q, after, err)
		}
		hits = append(hits, hitKeys(r)...)
		if r.Partial {
			partial++
			if r.Next == "" {
				t.Fatalf("Search(%s, after %q) is partial with no Next", q, after)
			}
		}
		if after = r.Next; after == "" {
			return hits, partial
		}
	}
	t.Fatalf("Search(%s) gave 100 pages and a Next", q)
	return nil, 0
}

// A page that runs out of its time stops with the hits of the sessions it
// searched, Partial, and a Next from which the pages go on to find every
// hit a search with time to spare finds, in the same order; each walk here
// searches one session (its first batch) before its clock is past the
// budget. A search that searched no session in its budget is refused with
// a message that says so, and the store answers the next search.
func TestSearchStopsAtItsBudget(t *testing.T) {
	s := mustOpen(t)
	days := []string{"2026-01-05", "2026-01-09", "2026-01-01", "2026-01-09", "2026-01-03"}
	for i, day := range days {
		b := newBatch(fmt.Sprintf("budget%d", i))
		set(b, "session.started_at", day+"T00:00:00Z")
		if i != 2 { // one session without the word: a batch with no hit
			set(b, "steps[1].payload.stdout", "budgetword")
			set(b, "steps[3].payload.path", "/src/budgetword.go")
		}
		mustApply(t, s, b)
	}
	// Each query and the sessions its walk visits: after: keeps three.
	queries := map[string]int{"budgetword": len(days), "budgetw*": len(days), `"budgetword go"`: len(days),
		"budgetword type:read": len(days), "budgetword after:2026-01-04": 3}
	want := map[string][]hitKey{}
	for q := range queries {
		if want[q], _ = searchAll(t, s, q, 50); len(want[q]) == 0 {
			t.Fatalf("Search(%s) found nothing", q)
		}
	}
	budget := store.SearchBudget
	defer func() { store.SearchClock, store.SearchBudget = time.Now, budget }()
	store.SearchClock = func() time.Time { return time.Now().Add(2 * store.SearchBudget) }
	for q, walked := range queries {
		for _, limit := range []int{1, 50} {
			got, partial := searchAll(t, s, q, limit)
			if !reflect.DeepEqual(got, want[q]) {
				t.Errorf("Search(%s, limit %d) stopping at each batch found %v; want %v", q, limit, got, want[q])
			}
			if limit == 50 && (partial < walked-1 || partial > walked) {
				t.Errorf("Search(%s) stopping at each batch gave %d partial pages; want one a session it walks (%d), or but the last", q, partial, walked)
			}
		}
	}
	store.SearchClock = time.Now

	store.SearchBudget = time.Nanosecond
	for _, q := range []string{"budgetword", "type:read"} {
		_, err := s.Search(context.Background(), store.SearchQuery{Q: q})
		var inv *store.InvalidError
		if !errors.As(err, &inv) || len(inv.Problems) == 0 || !strings.Contains(inv.Problems[0].Message, "took longer than 1ns") {
			t.Errorf("Search(%s) with no time = %v; want an InvalidError saying it took too long", q, err)
		}
	}
	store.SearchBudget = budget
	if got, _ := searchAll(t, s, "budgetword", 50); !reflect.DeepEqual(got, want["budgetword"]) {
		t.Errorf("Search(budgetword) after a stopped search = %v; want %v", got, want["budgetword"])
	}
}

// TestSnippetPastRole: a message's snippet goes on past the role its text
// begins with, the matches moved with it, unless a match is in the role or
// the snippet does not begin with it.
func TestSnippetPastRole(t *testing.T) {
	for _, c := range []struct {
		role, snippet string
		matches       [][2]int
		want          string
		wantMatches   [][2]int
	}{
		{"", "rm -rf build", [][2]int{{0, 2}}, "rm -rf build", [][2]int{{0, 2}}},
		{"assistant", "assistant\nFixed the parser", [][2]int{{16, 19}}, "Fixed the parser", [][2]int{{6, 9}}},
		{"thinking", "thinking\nPlanning the fix", [][2]int{{0, 8}, {18, 21}}, "thinking\nPlanning the fix", [][2]int{{0, 8}, {18, 21}}},
		{"user", "…the change is in parse.go", [][2]int{{20, 25}}, "…the change is in parse.go", [][2]int{{20, 25}}},
		{"user", "username\nx", nil, "username\nx", nil},
	} {
		h := store.SearchHit{Role: c.role, Snippet: c.snippet, Matches: c.matches}
		got, matches := h.SnippetPastRole()
		if got != c.want || !reflect.DeepEqual(matches, c.wantMatches) && len(matches)+len(c.wantMatches) > 0 {
			t.Errorf("%q of %q, %v = %q, %v; want %q, %v", c.snippet, c.role, c.matches, got, matches, c.want, c.wantMatches)
		}
		for i, m := range matches {
			if was := c.matches[i]; got[m[0]:m[1]] != c.snippet[was[0]:was[1]] {
				t.Errorf("%q: match %v reads %q; want %q, as before", c.snippet, m, got[m[0]:m[1]], c.snippet[was[0]:was[1]])
			}
		}
	}
}

// TestSnippetWithoutWords: the snippet of a hit of filters alone is its
// text's first 16 words, with what follows the last of them when the text
// ends there, or … when more words follow.
func TestSnippetWithoutWords(t *testing.T) {
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", i)
		}
		return w
	}
	for _, c := range []struct{ text, want string }{
		{"", ""},
		{"go test ./...", "go test ./..."},
		{strings.Join(words(16), " ") + ".", strings.Join(words(16), " ") + "."},
		{strings.Join(words(17), " "), strings.Join(words(16), " ") + "…"},
		{"user\nFix the failing test", "user\nFix the failing test"},
		{strings.Join(words(1<<18), " "), strings.Join(words(16), " ") + "…"},
	} {
		got, matches := store.SearchSnippet(c.text, nil)
		if got != c.want || len(matches) != 0 {
			t.Errorf("SearchSnippet(%.40q, no words) = %q, %v; want %q and no matches", c.text, got, matches, c.want)
		}
	}
}

// Migration 021 fills the files of the command steps stored before it,
// so path: finds them in an old store as in a new one: a file written by
// a here-document, one read by sed in a folder cd named, one removed; a
// line that names no file stays NULL.
func TestSearchMigrationFindsOldCommandsFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	if err := store.CreateAtVersion(ctx, path, 20); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"cat <<'EOF' > notes/plan.md\nstep one\nEOF",
		"cd handlers && sed -n 1,40p auth.go",
		"rm -f /tmp/build.log",
		"go test ./...",
	}
	const cwd = "/src/app"
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.ExecuteScript(conn, `
		INSERT INTO sessions (pk, id, agent_kind, agent_version, workspace_root, started_at, started_ns, source, owner_id, captured_on, updated_at)
		  VALUES (1, 'old', 'testagent', '1', '/src/app', '2026-01-02T10:00:00Z', 0, 'push:testagent', 'local', 'host', 1);`, nil)
	for i, line := range lines {
		if err != nil {
			break
		}
		payload, _ := json.Marshal(map[string]string{"command": line, "cwd": cwd})
		err = sqlitex.Execute(conn, `INSERT INTO steps (session_pk, id, seq, segment_index, turn_id, actor_id, at, type, decision,
			  outcome, content_status, flag_count, channels, flags, updated_at, payload)
			VALUES (1, ?, ?, 0, 't', 'r', '2026-01-02T10:00:01Z', 'command', 'accepted', 'ok', 'inline', 0, '[]', '[]', 1, ?)`,
			&sqlitex.ExecOptions{Args: []any{fmt.Sprint("s", i+1), i + 1, string(payload)}})
	}
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpenPath(t, path)
	checked := 0
	for i, line := range lines {
		for _, f := range store.CommandFiles(line, cwd) {
			for _, v := range []string{f.Path, filepath.Base(f.Path)} {
				want := []hitKey{}
				for j, other := range lines {
					if slices.ContainsFunc(store.CommandFiles(other, cwd), func(g store.CommandFile) bool { return strings.Contains(g.Path, v) }) {
						want = append(want, hitKey{"old", int64(j + 1)})
					}
				}
				if got := hitKeys(mustSearch(t, s, `path:"`+v+`"`)); !reflect.DeepEqual(got, want) {
					t.Errorf("Search(path:%s) after migrating, line %d = %v; want %v", v, i+1, got, want)
				}
				checked++
			}
		}
	}
	if checked != 6 {
		t.Errorf("searched %d paths; want 6, two of each of the three lines that name a file", checked)
	}
	// The row of the line that names no file keeps its NULL.
	ro, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var nulls []int64
	err = sqlitex.Execute(ro, `SELECT seq FROM steps WHERE command_files IS NULL`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { nulls = append(nulls, st.ColumnInt64(0)); return nil }})
	if err != nil || !reflect.DeepEqual(nulls, []int64{4}) {
		t.Errorf("steps without command files = %v, %v; want step 4 (go test ./...)", nulls, err)
	}
}

// noteMatches marks every place of each value (folded, as NoteValues
// gives them), case aside, joining overlapping places, at the bytes of the
// text itself where a character's lower case has more or fewer.
func TestNoteMatches(t *testing.T) {
	for _, tc := range []struct {
		text   string
		values []string
		want   [][2]int
	}{
		{"Flaky, flaky, FLAKY", []string{"flaky"}, [][2]int{{0, 5}, {7, 12}, {14, 19}}},
		{"abcd", []string{"bc", "ab"}, [][2]int{{0, 3}}},
		{"abcd", []string{"cd", "ab"}, [][2]int{{0, 2}, {2, 4}}},
		{"Ürün ürün", []string{"ürün"}, [][2]int{{0, 6}, {7, 13}}},
		{"İstanbul, İSTANBUL", []string{"istanbul"}, [][2]int{{0, 9}, {11, 20}}}, // İ is two bytes, its i one
		{"xȺy Ⱥ", []string{"ⱥy"}, [][2]int{{1, 4}}},                              // Ⱥ is two bytes, its ⱥ three
		{"aaa", []string{"aa"}, [][2]int{{0, 2}}},
		{"note", nil, nil},
		{"note", []string{""}, nil},
	} {
		if got := store.NoteMatches(tc.text, tc.values); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NoteMatches(%q, %q) = %v; want %v", tc.text, tc.values, got, tc.want)
		}
	}
}
