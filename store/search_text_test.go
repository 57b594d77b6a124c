package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// mustMemFTS opens an in-memory SQLite with an FTS5 table t tokenized as
// the store's index (migration 008) and its instance vocabulary v.
func mustMemFTS(t *testing.T) *sqlite.Conn {
	t.Helper()
	conn, err := sqlite.OpenConn(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	err = sqlitex.ExecuteScript(conn, `CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
		CREATE VIRTUAL TABLE v USING fts5vocab(t, instance);`, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// ftsTerms inserts the texts as rows 1..n of t and returns the terms FTS5
// indexed for each, in order.
func ftsTerms(t *testing.T, conn *sqlite.Conn, texts []string) [][]string {
	t.Helper()
	end, err := sqlitex.ImmediateTransaction(conn)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if err := sqlitex.Execute(conn, `INSERT INTO t (rowid, body) VALUES (?, ?)`, &sqlitex.ExecOptions{Args: []any{i + 1, text}}); err != nil {
			t.Fatal(err)
		}
	}
	end(&err)
	out := make([][]string, len(texts))
	err = sqlitex.Execute(conn, `SELECT doc, term FROM v ORDER BY doc, offset`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error {
			d := st.ColumnInt(0) - 1
			out[d] = append(out[d], st.ColumnText(1))
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every code point is split and folded as FTS5's unicode61 tokenizer does
// it: each one between two letters, in rows of 512.
func TestSearchTokensMatchFTS5(t *testing.T) {
	conn := mustMemFTS(t)
	var texts []string
	var b strings.Builder
	n := 0
	for r := rune(1); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		b.WriteString(" a" + string(r) + "b")
		if n++; n%512 == 0 {
			texts = append(texts, b.String())
			b.Reset()
		}
	}
	texts = append(texts, b.String(), "Ünïcode ÆSIR Crème brûlée e\u0301 handlers/auth.go go-test_x ǅ ﬁ ß 日本語 x \u0301 y",
		"請不要修改任何代碼 abc修改def 修\u0301改 \u0301修 ｶﾀｶﾅ カタカナ ひらがな 한국어를 𠀀𠀁x ㄅㄆ ⺀ 修\u2060改 修\xff改 9修9")
	// FTS5 is given each text as the index is (FTSText).
	fts := make([]string, len(texts))
	for i, text := range texts {
		fts[i] = store.FTSText(text)
	}
	want := ftsTerms(t, conn, fts)
	bad := 0
	for i, text := range texts {
		got := store.SearchTerms(text)
		if strings.Join(got, " ") != strings.Join(want[i], " ") {
			for j := range min(len(got), len(want[i])) {
				if got[j] != want[i][j] && bad < 10 {
					t.Errorf("row %d: token %d = %q; FTS5 indexes %q", i, j, got[j], want[i][j])
					bad++
					break
				}
			}
			if len(got) != len(want[i]) {
				t.Errorf("row %d: %d tokens; FTS5 indexes %d", i, len(got), len(want[i]))
			}
		}
	}
}

// JSON's string values in document order, keys left out, as SQLite's
// json_tree gives them to search_step_docs.
func TestJSONStringsMatchSQLite(t *testing.T) {
	conn := mustMemFTS(t)
	deep := func(n int) string { return strings.Repeat("[", n) + `"deepword"` + strings.Repeat("]", n) }
	for _, j := range []string{
		`{"command":"go test ./...","cwd":"/src"}`,
		`{"a":{"b":["x",1,true,null,{"c":"y"}],"k":"v"},"k":"k2"}`,
		`{"dup":"one","dup":"two"}`,
		`{"esc":"tab\tnew\nline \u00e9 \"q\" \\ \/"}`,
		`{"keys":{"only":1}}`,
		`["a","b"]`,
		`"just a string"`,
		`{"x": 1.5e3, "y": [] , "z": {}}`,
		`not json at all`,
		`{"broken": "`,
		`{"a":1}{"b":2}`,
		`{"a":1} {"b":"2"}`,
		`1 2`,
		`  {"a" : "b" ,"c":[ "d" ]}  `,
		`{"a":"b"} x`,
		`{"a":"","b":"x","c":["",""]}`,
		`{"u":"\ud83d\ude00 \u00e9\u0000 end"}`,
		`[[["a"],["b",["c"]]],{"k":{"k":{"k":"v"}}}]`,
		`-1.5e-3`, `true`, `null`, `{}`, `[]`, `""`, ``, `   `,
		deep(999), deep(1000), deep(1001),
	} {
		var want *string
		err := sqlitex.Execute(conn, `SELECT CASE WHEN json_valid(?1) THEN (SELECT group_concat(value, ' ') FROM json_tree(?1) WHERE type = 'text') ELSE ?1 END`,
			&sqlitex.ExecOptions{Args: []any{j}, ResultFunc: func(st *sqlite.Stmt) error {
				if st.ColumnType(0) != sqlite.TypeNull {
					s := st.ColumnText(0)
					want = &s
				}
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		got := store.JSONStrings(&j, true)
		if fmt.Sprint(deref(got)) != fmt.Sprint(deref(want)) || (got == nil) != (want == nil) {
			t.Errorf("JSONStrings(%.60q) = %.80q; SQLite gives %.80q", j, deref(got), deref(want))
		}
	}
}

// A string value that is a JSON object or array itself is indexed by its
// string values in turn, up to maxNestedJSON levels; any other string,
// JSON without strings among them, is indexed as it is.
func TestJSONStringsInAString(t *testing.T) {
	// nest puts JSON text j in a string of an object n times.
	nest := func(j string, n int) string {
		for range n {
			q, _ := json.Marshal(j)
			j = `{"k":` + string(q) + `}`
		}
		return j
	}
	for _, tc := range []struct{ j, want string }{
		{nest(`{"text":{"value":"line one\nREADME second"}}`, 1), "line one\nREADME second"},
		{`{"a":"{\"k\":\"v\"}","b":"plain"}`, "v plain"},
		{`{"a":"  [\"x\", 1, \"y\"]\n"}`, "x y"},
		{`"{\"k\":\"top\"}"`, "top"},
		{`{"a":"[1, 2]"}`, "[1, 2]"},
		{`{"a":"{not json"}`, "{not json"},
		{`{"a":"{\"k\":\"v\"} trailing"}`, `{"k":"v"} trailing`},
		{`{"a":"{}"}`, "{}"},
		{nest(`{"deep":"word"}`, 4), "word"},
		{nest(`{"deep":"word"}`, 5), `{"deep":"word"}`},
	} {
		j := tc.j
		if got := store.JSONStrings(&j, false); got == nil || *got != tc.want {
			t.Errorf("JSONStrings(%s) = %q; want %q", tc.j, deref(got), tc.want)
		}
	}
}

// FuzzJSONStrings: any text, JSON or not, with strings that are JSON in
// turn, gives the strings search indexes (or none) without failing, at
// most three times its size (an invalid UTF-8 byte becomes U+FFFD), and the same
// again when made again (the maker kept for reuse holds nothing over).
func FuzzJSONStrings(f *testing.F) {
	for _, s := range []string{`{"a":"{\"b\":\"c\\nd\"}"}`, `["[\"x\"]", " {}"]`, `"[[[\"\\\"\"]]]"`, `{"a":"\xff"}`, `not json`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, j string) {
		got := store.JSONStrings(&j, true) // nil: JSON without strings
		if got != nil && len(*got) > 3*len(j)+1 {
			t.Fatalf("JSONStrings(%q) = %q; want at most three times its size", j, *got)
		}
		if again := store.JSONStrings(&j, true); deref(again) != deref(got) {
			t.Fatalf("JSONStrings(%q) = %q, then %q", j, deref(got), deref(again))
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<NULL>"
	}
	return *s
}

// mustSampleStore applies the real samples' batches and two generated
// ones to a new store and returns a read-only connection to its file.
func mustSampleStore(t *testing.T) (*sqlite.Conn, []*store.Batch) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpenPath(t, path)
	ctx := context.Background()
	batches := append(storetest.SampleBatches(t), storetest.Batch("gen-1", 0, 300), storetest.Batch("gen-1", 1, 300))
	for _, b := range batches {
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
		}
	}
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := store.RegisterSearchText(conn); err != nil {
		t.Fatal(err)
	}
	return conn, batches
}

// What the views index of every stored step and session of the real
// samples (and of generated batches) is the text of the step and session
// as the batch had them (storetest.SearchText, SessionSearchText): Postgres indexes
// the batch's, SQLite the stored columns', and the two must agree.
func TestSearchTextOfStoredRowsIsTheBatchs(t *testing.T) {
	conn, batches := mustSampleStore(t)
	// What Apply stored of each step, by session and step id: the last
	// batch's step wins, as it does in the store.
	applied := map[[2]string]string{}
	sessions, repos := map[string]string{}, map[string]string{}
	for _, b := range batches {
		for i := range b.Steps {
			applied[[2]string{b.Session.ID, b.Steps[i].ID}] = storetest.SearchText(t, &b.Steps[i])
		}
		if b.Session.Workspace.Repo != "" { // a batch without one keeps the stored repo
			repos[b.Session.ID] = b.Session.Workspace.Repo
		}
		repo := repos[b.Session.ID]
		sessions[b.Session.ID] = store.SessionSearchText(b.Session.Agent.Kind, b.Session.Workspace.Root, &repo)
	}
	steps := 0
	err := sqlitex.Execute(conn, `SELECT d.body, st.id, s.id
		FROM search_step_docs d JOIN steps st ON st.pk = d.step_pk JOIN sessions s ON s.pk = st.session_pk`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error {
			steps++
			if got, want := st.ColumnText(0), store.FTSText(applied[[2]string{st.ColumnText(2), st.ColumnText(1)}]); got != want {
				t.Errorf("step %s: search_step_docs has %.200q; FTSText(storetest.SearchText(step)) = %.200q", st.ColumnText(1), got, want)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if steps < 500 {
		t.Fatalf("only %d steps compared; the samples did not load", steps)
	}
	err = sqlitex.Execute(conn, `SELECT d.body, s.id FROM search_session_docs d JOIN sessions s ON s.pk = d.session_pk`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			if got, want := st.ColumnText(0), store.FTSText(sessions[st.ColumnText(1)]); got != want {
				t.Errorf("session %s: search_session_docs has %q; FTSText(SessionSearchText) = %q", st.ColumnText(1), got, want)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
}

// The Go snippet of a text is FTS5's snippet() of it, markers and all, for
// queries made of words of the text itself: single words, phrases of
// neighbours, prefixes, several phrases, and texts with sentences.
func TestSearchSnippetMatchesFTS5(t *testing.T) {
	var texts []string
	conn, _ := mustSampleStore(t)
	err := sqlitex.Execute(conn, `SELECT body FROM search_step_docs ORDER BY step_pk`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { texts = append(texts, st.ColumnText(0)); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	conn = mustMemFTS(t)
	texts = append(texts, "First sentence here. Second one: starts after a colon and goes on with many words to pass the window of sixteen tokens. Third.",
		"go test ./... go test again go test", "a b c a b c a b c a b c a b c a b c a b c a b c", "x", "  leading space. Then: more")
	ftsTerms(t, conn, texts) // loads rows 1..n
	r := rand.New(rand.NewPCG(7, 17))
	cases, wide := 0, 0
	for i, text := range texts {
		tokens := store.SearchTokens(text)
		if len(tokens) == 0 {
			continue
		}
		// A text most of whose words are one Chinese, Japanese or Korean
		// character shows three times as many.
		nCJK := 0
		for _, tok := range tokens {
			r, size := utf8.DecodeRuneInString(text[tok.Start:])
			if size == tok.End-tok.Start && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo) {
				nCJK++
			}
		}
		wantWindow := 16
		if 2*nCJK > len(tokens) {
			wantWindow, wide = 48, wide+1
		}
		for range 3 {
			var words []store.SearchPhrase
			for range 1 + r.IntN(3) {
				at := r.IntN(len(tokens))
				n := 1 + r.IntN(min(3, len(tokens)-at))
				p := store.SearchPhrase{Text: text[tokens[at].Start:tokens[at+n-1].End]}
				if r.IntN(4) == 0 {
					last := tokens[at+n-1]
					p.Text, p.Prefix = text[tokens[at].Start:last.Start+min(2, last.End-last.Start)], true
					if !utf8.ValidString(p.Text) {
						continue
					}
				}
				words = append(words, p)
			}
			if len(words) == 0 {
				continue
			}
			var match []string
			for _, w := range words {
				m := `"` + strings.ReplaceAll(w.Text, `"`, `""`) + `"`
				if w.Prefix {
					m += "*"
				}
				match = append(match, m)
			}
			got, window := store.MarkSnippet(text, words)
			if window != wantWindow {
				t.Errorf("snippet of %.80q: a window of %d words, want %d", text, window, wantWindow)
			}
			var want string
			found := false
			err = sqlitex.Execute(conn, `SELECT snippet(t, 0, ?, ?, '…', ?) FROM t WHERE t MATCH ? AND rowid = ?`, &sqlitex.ExecOptions{
				Args:       []any{store.Mark, store.MarkEnd, window, strings.Join(match, " AND "), i + 1},
				ResultFunc: func(st *sqlite.Stmt) error { want, found = st.ColumnText(0), true; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				t.Errorf("row %d does not match its own words %q", i+1, match)
				continue
			}
			cases++
			// The snippet leaves out the joiners FTSText put in the text.
			if want := strings.ReplaceAll(want, "\u2060", ""); got != want {
				t.Errorf("snippet of %.80q for %q:\n got  %q\n want %q", text, match, got, want)
			}
			if !store.MatchesText(text, words, nil) {
				t.Errorf("MatchesText(%.80q, %q) = false; FTS5 matches it", text, match)
			}
		}
	}
	if cases < 300 || wide < 5 {
		t.Fatalf("only %d snippets compared, of %d texts mostly of CJK characters", cases, wide)
	}
}

// A snippet is the same of a text with the joiners FTSText puts in it
// (SQLite's index, whose text the snippets are made of) as without them
// (PostgreSQL's): two words that touch are one match, not two, where a
// joiner stood between them (FuzzSearchMatchesSQLite found "修 改").
func TestSearchSnippetIgnoresJoiners(t *testing.T) {
	for _, tc := range []struct{ text, q, touching string }{
		{"請不要修改任何代碼 我希望你", "修 改", "修改"},
		{"修改v2 then 修改", "改 v2", "改v2"},
		{"x 代碼 y", "代碼", "代碼"},
	} {
		pq, err := store.ParseQuery(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		words := pq.Words
		joined := store.FTSText(tc.text)
		if joined == tc.text {
			t.Fatalf("FTSText(%q) put no joiner in it", tc.text)
		}
		snippet, matches := store.SearchSnippet(tc.text, words)
		if s, m := store.SearchSnippet(joined, words); s != snippet || !slices.Equal(m, matches) {
			t.Errorf("snippet of %q for %q with joiners %q %v; without %q %v", tc.text, tc.q, s, m, snippet, matches)
		}
		at := strings.Index(tc.text, tc.touching)
		if want := [2]int{at, at + len(tc.touching)}; len(matches) == 0 || matches[0] != want {
			t.Errorf("snippet of %q for %q matches %v; want %v (%q) first", tc.text, tc.q, matches, want, tc.touching)
		}
	}
}

// TestSearchSnippetOfManyMatches makes the snippet of an 8 MB text (the
// most a push may hold) that is one short sentence over and over, so every
// word is a match: FTS5's way of scoring, each match's window against
// every match, took 2.2 s for 117 KB of it and would take hours here.
// Every window scores the same, so the snippet is the text's first 16
// words, each marked. It allocates a small part of the text's size: the
// words are never all held (they were 32 bytes each, 4.6 times this
// text), nor more than snippetAnchors of the matches.
func TestSearchSnippetOfManyMatches(t *testing.T) {
	const sentence = "Retry. "
	text := strings.Repeat(sentence, 8<<20/len(sentence))
	var got string
	allocated := allocatedBy(func() { got, _ = store.MarkSnippet(text, []store.SearchPhrase{{Text: "retry"}}) })
	want := strings.Repeat(store.Mark+"Retry"+store.MarkEnd+". ", 15) + store.Mark + "Retry" + store.MarkEnd + "…"
	if got != want {
		t.Errorf("snippet = %q, want %q", got, want)
	}
	if allocated > uint64(len(text)/8) {
		t.Errorf("the snippet of a text of %d bytes allocated %d bytes, more than an eighth of its size", len(text), allocated)
	}
}

// allocatedBy is how many bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSearchSnippetIsBounded makes snippets of texts whose words, or what
// lies between them, are a megabyte long: each keeps the ends of such a
// stretch with … between, so a page of hits stays small. Snippets also
// drop the bytes that mark matches when a text has them, so a text cannot
// make a match of what the search did not find.
func TestSearchSnippetIsBounded(t *testing.T) {
	long := strings.Repeat("-", 1<<20)
	longWord := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, text string
		words      []store.SearchPhrase
		want       string
	}{
		{"a long gap", "hello " + long + " world", []store.SearchPhrase{{Text: "world"}},
			"hello " + long[:194] + "…" + long[:199] + " " + store.Mark + "world" + store.MarkEnd},
		{"a long word", "see " + longWord + " here", []store.SearchPhrase{{Text: "x", Prefix: true}}, ""},
		{"forged marks", "one " + store.Mark + "two" + store.MarkEnd + " three", []store.SearchPhrase{{Text: "three"}},
			"one two " + store.Mark + "three" + store.MarkEnd},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := store.MarkSnippet(c.text, c.words)
			if len(got) > 8<<10 {
				t.Errorf("snippet of %d bytes, want at most 8 KiB", len(got))
			}
			if c.want != "" && got != c.want {
				t.Errorf("snippet = %q, want %q", got, c.want)
			}
			snippet, matches := store.SearchSnippet(c.text, c.words)
			if len(matches) == 0 {
				t.Errorf("SearchSnippet(%.40q…) has no match", c.text)
			}
			for _, m := range matches {
				if w := snippet[m[0]:m[1]]; store.SearchTerms(w) == nil {
					t.Errorf("match %q has no word", w)
				}
			}
		})
	}
}

// BenchmarkSearchSnippet makes the snippet of every step of the agents'
// real samples for a common word, as a page of hits does for each of its
// rows (rowSnippets); most of its time is reading the words
// (eachSearchToken).
func BenchmarkSearchSnippet(b *testing.B) {
	var texts []string
	size := 0
	for _, batch := range storetest.AgentSamples(b) {
		for i := range batch.Steps {
			texts = append(texts, storetest.SearchText(b, &batch.Steps[i]))
			size += len(texts[len(texts)-1])
		}
	}
	words := []store.SearchPhrase{{Text: "the"}}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range texts {
			store.SearchSnippet(text, words)
		}
	}
}

// BenchmarkFTSText: what the index's text costs to look through for
// characters that are words of their own: 1 MB of a tool's English output
// (none: the text is given as it is), the same with a character that is
// not ASCII on each line, and 1 MB of it in Chinese.
func BenchmarkFTSText(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"english", "--- FAIL: TestImport (0.02s) handlers/auth.go:42: want 200, got 500\n"},
		{"english-not-ascii", "--- FAIL: TestImport (0.02s) handlers/auth.go:42 — want 200, got 500\n"},
		{"chinese", "請不要修改任何代碼，只要調查 README.md 的內容\n"},
	} {
		text := strings.Repeat(c.line, 1<<20/len(c.line))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				store.FTSText(text)
			}
		})
	}
}

// A step's working folder comes last in its searched text, not between a
// command's line and its output: for every step of the real samples, the
// text of the same step with no cwd, then the folder on a line of its own.
func TestTheFolderComesLast(t *testing.T) {
	folders := 0
	for _, b := range storetest.SampleBatches(t) {
		for _, st := range b.Steps {
			without := st
			without.Payload.Cwd = nil
			want := storetest.SearchText(t, &without)
			if st.Payload.Cwd != nil && *st.Payload.Cwd != "" {
				folders++
				want = strings.TrimPrefix(want+"\n"+*st.Payload.Cwd, "\n")
			}
			if got := storetest.SearchText(t, &st); got != want {
				t.Errorf("%s step %d: SearchText = %.80q…; want %.80q…", b.Session.ID, st.Seq, got, want)
			}
		}
	}
	if folders == 0 {
		t.Fatal("no sample step has a working folder")
	}
}
