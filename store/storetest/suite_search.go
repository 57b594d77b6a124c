package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentreview/service/store"
)

// hitKey names a hit: its session and step (seq 0: the session itself).
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

func sortedKeys(k []hitKey) []hitKey {
	k = slices.Clone(k)
	slices.SortFunc(k, func(a, b hitKey) int { return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Seq, b.Seq)) })
	return k
}

func mustSearch(t *testing.T, s store.Backend, q store.SearchQuery) store.SearchResult {
	t.Helper()
	r, err := s.Search(bg, q)
	if err != nil {
		t.Fatalf("Search(%+v) = %v", q, err)
	}
	return r
}

// Seqs of the steps searchBatch adds to the small batch's five.
const (
	seqReply   = 6
	seqGoTest  = 7
	searchSeqs = 7
)

// searchBatch is the small batch with a word of its own (ending in sid)
// in every field kind search looks at, an assistant reply and a second
// command.
func searchBatch(sid string) *store.Batch {
	b := smallBatch(sid)
	b.Session.Workspace = store.Workspace{Root: "/home/dev/wsroot" + sid, Repo: "github.com/acme/reporepo" + sid}
	b.Steps[0].Payload.Text = genPtr("Please fix promptword" + sid)
	p := &b.Steps[1].Payload
	p.Command, p.Stdout, p.Stderr = genPtr("rm -rf build_dir"+sid), genPtr("stdoutword"+sid), genPtr("stderrword"+sid)
	b.Steps[1].Flags[0].Reason = "flagreason" + sid
	p = &b.Steps[2].Payload
	p.Path, p.OldString, p.NewString = "handlers/auth"+sid+".go", genPtr("oldword"+sid), genPtr("newword"+sid)
	b.Steps[2].Error.Message = "errormessage" + sid
	b.Steps[3].Payload.Path = "store/readpath" + sid + ".go"
	b.Steps[4].Payload.ToolName, b.Steps[4].Payload.Raw = "ToolName"+sid, []byte(`{"nested":[{"deep":"rawvalue`+sid+`"}]}`)
	reply := stepOf(sid, seqReply, store.TypeMessage)
	reply.Payload.Role, reply.Payload.Text = "assistant", genPtr("Done: replyword"+sid+" is fixed.")
	test := stepOf(sid, seqGoTest, store.TypeCommand)
	test.Payload.Command, test.Flags = genPtr("go test ./handlers/..."), []store.Flag{}
	b.Steps = append(b.Steps, reply, test)
	return b
}

// A marker word in each field kind is found, in its session and step,
// and only there; code is found by its parts, paths and prefixes.
func testSearchFields(t *testing.T, s store.Backend) {
	x := searchBatch("x")
	thinking := stepOf("x", searchSeqs+1, store.TypeMessage)
	thinking.Payload.Role, thinking.Payload.Text = "thinking", genPtr("pondering")
	x.Steps = append(x.Steps, thinking)
	mustApply(t, s, x)
	mustApply(t, s, searchBatch("y"))
	for _, tc := range []struct {
		q    string
		want []hitKey
	}{
		{"wsrootx", []hitKey{{"x", 0}}},
		{"reporepox", []hitKey{{"x", 0}}},
		{"promptwordx", []hitKey{{"x", 1}}},
		{"replywordx", []hitKey{{"x", seqReply}}},
		{"build_dirx", []hitKey{{"x", 2}}},
		{"stdoutwordx", []hitKey{{"x", 2}}},
		{"stderrwordx", []hitKey{{"x", 2}}},
		{"flagreasonx", []hitKey{{"x", 2}}},
		{"dangerous_command", []hitKey{{"x", 2}, {"y", 2}}},
		{"oldwordx", []hitKey{{"x", 3}}},
		{"newwordx", []hitKey{{"x", 3}}},
		{"errormessagex", []hitKey{{"x", 3}}},
		{"tool_error", []hitKey{{"x", 3}, {"y", 3}}},
		{"readpathx.go", []hitKey{{"x", 4}}},
		{"toolnamex", []hitKey{{"x", 5}}},
		{"rawvaluex", []hitKey{{"x", 5}}},
		{"thinking pondering", []hitKey{{"x", searchSeqs + 1}}}, // thinking is marked as such
		// Code: parts, paths, phrases and prefixes.
		{"authx.go", []hitKey{{"x", 3}}},
		{"handlers/authx.go", []hitKey{{"x", 3}}},
		{"handlers/auth*", []hitKey{{"x", 3}, {"y", 3}}},
		{"authx*", []hitKey{{"x", 3}}},
		{`"go test"`, []hitKey{{"x", seqGoTest}, {"y", seqGoTest}}},
		{`"rm -rf"`, []hitKey{{"x", 2}, {"y", 2}}},
		{"build_dirx rm", []hitKey{{"x", 2}}},
		// Excluded words.
		{"dangerous_command -build_dirx", []hitKey{{"y", 2}}},
		{"tool_error -authx.go", []hitKey{{"y", 3}}},
		{"nosuchwordanywhere", []hitKey{}},
	} {
		t.Run(tc.q, func(t *testing.T) {
			got := sortedKeys(hitKeys(mustSearch(t, s, store.SearchQuery{Q: tc.q})))
			if want := sortedKeys(tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%q) = %v; want %v", tc.q, got, want)
			}
		})
	}
	// A hit tells its session and step, and where the word is in its snippet.
	r := mustSearch(t, s, store.SearchQuery{Q: "stdoutwordy"})
	if len(r.Hits) != 1 {
		t.Fatalf("Search(stdoutwordy) = %+v; want one hit", r.Hits)
	}
	h, b := r.Hits[0], searchBatch("y")
	if h.Type != store.TypeCommand || h.Status != b.Steps[1].Outcome || h.Agent != b.Session.Agent.Kind ||
		h.Title != firstLine(*b.Steps[0].Payload.Text) || h.StartedAt != b.Session.StartedAt {
		t.Errorf("hit = %+v; want a command, %s, of %s, titled %q, started %s", h, b.Steps[1].Outcome, b.Session.Agent.Kind, firstLine(*b.Steps[0].Payload.Text), b.Session.StartedAt)
	}
	if len(h.Matches) == 0 || h.Matches[0][1] > len(h.Snippet) || !strings.EqualFold(h.Snippet[h.Matches[0][0]:h.Matches[0][1]], "stdoutwordy") {
		t.Errorf("hit snippet %q matches %v; want a match on stdoutwordy", h.Snippet, h.Matches)
	}
	if h.Tool != b.Steps[1].Payload.ToolName {
		t.Errorf("hit tool = %q; want the command's %q", h.Tool, b.Steps[1].Payload.ToolName)
	}
	// A hit tells the tool its step called, found by words or by filters
	// alone; a session's own row has none.
	for _, q := range []string{"rawvaluey", "type:other", "wsrooty"} {
		r := mustSearch(t, s, store.SearchQuery{Q: q, Session: "y"})
		if len(r.Hits) != 1 {
			t.Fatalf("Search(%s) in session y = %+v; want one hit", q, r.Hits)
		}
		want := b.Steps[4].Payload.ToolName
		if r.Hits[0].Seq == 0 {
			want = ""
		}
		if r.Hits[0].Tool != want {
			t.Errorf("Search(%s) in session y: hit tool = %q; want %q", q, r.Hits[0].Tool, want)
		}
	}
}

// Each filter alone keeps the steps it names, newest session first and
// in seq order within a session; with words it narrows their hits.
func testSearchFilters(t *testing.T, s store.Backend) {
	a := smallBatch("a")
	b := smallBatch("b")
	b.Session.Agent.Kind, b.Session.StartedAt, b.Session.Workspace.Root = "claude-code", "2026-11-05T10:00:00Z", "/src/project-b"
	b.Steps[3].Payload.Path = "/src/project-b/README.md"
	b.Steps[4].Flags = []store.Flag{{Kind: "secret_in_output", Severity: "warn", Reason: "a key"}}
	b.Steps[1].Payload.Command = genPtr("go test ./handlers/...")
	c := smallBatch("c")
	c.Session.StartedAt = "2026-10-20T10:00:00Z"
	verdicts := map[string]string{"b": "needs_attention", "c": "needs work"} // a state of one's own, with a space
	notes := map[hitKey][]string{
		{"a", 2}: {"Flaky: it ran the suite twice", "second look"},
		{"b", 4}: {"check the KEY here"},
		{"b", 5}: {"Ürün adı"},            // case is ignored, not only ASCII's: note:ÜRÜN finds it
		{"c", 3}: {"Échec: İstanbul ΣΑΣ"}, // characters whose lower case differs in bytes (İ is two, its i one)
	}
	for _, x := range []*store.Batch{a, b, c} {
		mustApply(t, s, x)
		if v := verdicts[x.Session.ID]; v != "" {
			if err := s.SetVerdict(bg, x.Session.ID, store.Verdict{State: v, Reviewer: "ann"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k, texts := range notes {
		for _, text := range texts {
			if _, err := s.AddNote(bg, k.Session, store.NoteInput{Seq: k.Seq, Author: "ann", Text: text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// noted keeps a step with a note holding v, as note: reads it: case
	// ignored, letters of every script.
	noted := func(b *store.Batch, st store.Step, v string) bool {
		return slices.ContainsFunc(notes[hitKey{b.Session.ID, st.Seq}], func(n string) bool {
			return strings.Contains(strings.ToLower(n), strings.ToLower(v))
		})
	}
	newestFirst := []*store.Batch{a, b, c}
	slices.SortFunc(newestFirst, func(x, y *store.Batch) int {
		tx, _ := store.ParseTimestamp(x.Session.StartedAt)
		ty, _ := store.ParseTimestamp(y.Session.StartedAt)
		return ty.Compare(tx)
	})
	day := func(v string) time.Time { d, _ := time.Parse(time.DateOnly, v); return d }
	started := func(b *store.Batch) time.Time { t, _ := store.ParseTimestamp(b.Session.StartedAt); return t }
	hasFlag := func(st store.Step, kind string) bool {
		return slices.ContainsFunc(st.Flags, func(f store.Flag) bool { return f.Kind == kind })
	}
	for _, tc := range []struct {
		q    string
		keep func(b *store.Batch, st store.Step) bool
	}{
		{"agent:claude-code", func(b *store.Batch, st store.Step) bool { return b.Session.Agent.Kind == "claude-code" }},
		{"type:edit", func(b *store.Batch, st store.Step) bool { return st.Type == store.TypeEdit }},
		{"type:edit|read agent:testagent", func(b *store.Batch, st store.Step) bool {
			return (st.Type == store.TypeEdit || st.Type == store.TypeRead) && b.Session.Agent.Kind == "testagent"
		}},
		{"status:failed", func(b *store.Batch, st store.Step) bool { return st.Outcome == "failed" }},
		{"flag:dangerous_command", func(b *store.Batch, st store.Step) bool { return hasFlag(st, "dangerous_command") }},
		{"flag:*", func(b *store.Batch, st store.Step) bool { return len(st.Flags) > 0 }},
		{"path:ws/main", func(b *store.Batch, st store.Step) bool { return strings.Contains(st.Payload.Path, "ws/main") }},
		{"path:README", func(b *store.Batch, st store.Step) bool { return strings.Contains(st.Payload.Path, "README") }},
		{"tool:WebFetch", func(b *store.Batch, st store.Step) bool {
			return st.Type == store.TypeOther && st.Payload.ToolName == "WebFetch"
		}},
		{"tool:WebFetch status:failed", func(b *store.Batch, st store.Step) bool {
			return st.Type == store.TypeOther && st.Payload.ToolName == "WebFetch" && st.Outcome == "failed"
		}},
		{"tool:webfetch", func(b *store.Batch, st store.Step) bool { return false }}, // a tool is matched whole, as written
		{"tool:Web", func(b *store.Batch, st store.Step) bool { return false }},
		{`command:"go test ./..."`, func(b *store.Batch, st store.Step) bool {
			return st.Type == store.TypeCommand && *st.Payload.Command == "go test ./..."
		}},
		{`command:"go test ./handlers/..." type:command`, func(b *store.Batch, st store.Step) bool {
			return st.Type == store.TypeCommand && *st.Payload.Command == "go test ./handlers/..."
		}},
		{`command:"go test" status:ok`, func(b *store.Batch, st store.Step) bool { return false }}, // a command is matched whole
		{"workspace:project-b type:read", func(b *store.Batch, st store.Step) bool {
			return strings.Contains(b.Session.Workspace.Root, "project-b") && st.Type == store.TypeRead
		}},
		{"after:2026-11-01 type:command", func(b *store.Batch, st store.Step) bool {
			return !started(b).Before(day("2026-11-01")) && st.Type == store.TypeCommand
		}},
		{"before:2026-11-01 type:command", func(b *store.Batch, st store.Step) bool {
			return started(b).Before(day("2026-11-01")) && st.Type == store.TypeCommand
		}},
		{"verdict:needs_attention type:message", func(b *store.Batch, st store.Step) bool {
			return verdicts[b.Session.ID] == "needs_attention" && st.Type == store.TypeMessage
		}},
		{"verdict:none type:message", func(b *store.Batch, st store.Step) bool {
			return verdicts[b.Session.ID] == "" && st.Type == store.TypeMessage
		}},
		{"verdict:none", func(b *store.Batch, st store.Step) bool { return verdicts[b.Session.ID] == "" }},
		{`verdict:"needs work"`, func(b *store.Batch, st store.Step) bool { return verdicts[b.Session.ID] == "needs work" }},
		{`verdict:"needs work" type:command`, func(b *store.Batch, st store.Step) bool {
			return verdicts[b.Session.ID] == "needs work" && st.Type == store.TypeCommand
		}},
		{"verdict:needs", func(b *store.Batch, st store.Step) bool { return false }}, // a state is matched whole
		// With a word, the walk of the sessions binds the filter's value.
		{"test verdict:none", func(b *store.Batch, st store.Step) bool {
			return verdicts[b.Session.ID] == "" && (st.Seq == 1 || st.Seq == 2)
		}},
		{"test verdict:needs_attention", func(b *store.Batch, st store.Step) bool {
			return verdicts[b.Session.ID] == "needs_attention" && (st.Seq == 1 || st.Seq == 2)
		}},
		// "test" is in the prompt (Fix the failing test) and the command
		// (go test ./...) of the small batch; "failing" only in the prompt.
		{"test agent:testagent", func(b *store.Batch, st store.Step) bool {
			return b.Session.Agent.Kind == "testagent" && (st.Seq == 1 || st.Seq == 2)
		}},
		{"test -failing agent:testagent", func(b *store.Batch, st store.Step) bool {
			return b.Session.Agent.Kind == "testagent" && st.Seq == 2
		}},
		{`"go test" status:ok`, func(b *store.Batch, st store.Step) bool { return st.Seq == 2 }},
		{"-failing type:message", func(b *store.Batch, st store.Step) bool { return false }},
		{"note:*", func(b *store.Batch, st store.Step) bool { return noted(b, st, "") }},
		{"note:flaky", func(b *store.Batch, st store.Step) bool { return noted(b, st, "flaky") }},
		{"note:key", func(b *store.Batch, st store.Step) bool { return noted(b, st, "key") }},
		{`note:"the suite"`, func(b *store.Batch, st store.Step) bool { return noted(b, st, "the suite") }},
		{"note:ÜRÜN", func(b *store.Batch, st store.Step) bool { return noted(b, st, "ÜRÜN") }},
		{"note:Ürün", func(b *store.Batch, st store.Step) bool { return noted(b, st, "Ürün") }},
		{"note:échec", func(b *store.Batch, st store.Step) bool { return noted(b, st, "échec") }},
		{"note:istanbul", func(b *store.Batch, st store.Step) bool { return noted(b, st, "istanbul") }},
		{`note:"ÉCHEC: İSTANBUL σασ"`, func(b *store.Batch, st store.Step) bool { return noted(b, st, "ÉCHEC: İSTANBUL σασ") }},
		{"note:* type:read", func(b *store.Batch, st store.Step) bool { return noted(b, st, "") && st.Type == store.TypeRead }},
		{"note:nowhere", func(b *store.Batch, st store.Step) bool { return false }},
		{"test note:*", func(b *store.Batch, st store.Step) bool { return noted(b, st, "") && (st.Seq == 1 || st.Seq == 2) }},
	} {
		t.Run(tc.q, func(t *testing.T) {
			want := []hitKey{}
			for _, b := range newestFirst {
				for _, st := range mergeSteps(b) {
					if tc.keep(b, st) {
						want = append(want, hitKey{b.Session.ID, st.Seq})
					}
				}
			}
			if got := hitKeys(mustSearch(t, s, store.SearchQuery{Q: tc.q})); !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%q) = %v; want %v", tc.q, got, want)
			}
		})
	}
}

// A hit of filters alone shows the beginning of its step's text, as
// FTS5's snippet() does when nothing in it matched: the first
// snippetTokens (16) words, then … when there are more, and no matches.
func testSearchFiltersSnippet(t *testing.T, s store.Backend) {
	b := smallBatch("a")
	var words []string
	for i := range 30 {
		words = append(words, fmt.Sprintf("w%02d", i))
	}
	b.Steps[1].Payload.Command = genPtr(strings.Join(words, " "))
	mustApply(t, s, b)
	for _, tc := range []struct{ q, want string }{
		{"type:command", strings.Join(words[:16], " ") + "…"},
		{"type:message", "user\n" + *b.Steps[0].Payload.Text},
		{"type:read", b.Steps[3].Payload.Path},
	} {
		r := mustSearch(t, s, store.SearchQuery{Q: tc.q})
		if len(r.Hits) != 1 || r.Hits[0].Snippet != tc.want || r.Hits[0].Matches == nil || len(r.Hits[0].Matches) != 0 {
			t.Errorf("Search(%s) = %+v; want one hit with snippet %q and no matches", tc.q, r.Hits, tc.want)
		}
	}
	// A command's working folder comes after its output, not between it
	// and its line, so the snippet of filters alone shows line and output;
	// it is still searched: a word of it finds the command and shows it,
	// and excluding that word leaves the command out.
	c := smallBatch("b")
	cmd := c.Steps[1]
	mustApply(t, s, c)
	want := *cmd.Payload.Command + "\n" + *cmd.Payload.Stdout
	if r := mustSearch(t, s, store.SearchQuery{Q: "type:command", Session: "b"}); len(r.Hits) != 1 ||
		!strings.HasPrefix(r.Hits[0].Snippet, want) {
		t.Errorf("Search(type:command) in b = %+v; want the command, its snippet beginning %q (%s after it)", r.Hits, want, *cmd.Payload.Cwd)
	}
	folder := path.Base(*cmd.Payload.Cwd)
	if r := mustSearch(t, s, store.SearchQuery{Q: folder, Session: "b"}); !slices.ContainsFunc(r.Hits, func(h store.SearchHit) bool {
		return h.Seq == cmd.Seq && strings.Contains(h.Snippet, *cmd.Payload.Cwd)
	}) {
		t.Errorf("Search(%s) in b = %+v; want the command, its snippet showing %s", folder, r.Hits, *cmd.Payload.Cwd)
	}
	if r := mustSearch(t, s, store.SearchQuery{Q: "type:command -" + folder, Session: "b"}); len(r.Hits) != 0 {
		t.Errorf("Search(type:command -%s) in b = %+v; want none: its folder names %s", folder, r.Hits, folder)
	}
}

// A hit carries its step's error, as the step recorded it, its type and
// message each cut at a word's end within store.HitErrorChars characters: the reason a failed or rejected
// step did not do its work, which its first words seldom say. A step
// without an error has none, with words or with filters alone.
func testSearchHitErrors(t *testing.T, s store.Backend) {
	b := smallBatch("a")
	long := strings.Repeat("échoué ", 60) // 420 characters: the 200th within a word
	oneWord := strings.Repeat("ü", 250)   // no word's end to cut at
	b.Steps[1].Outcome, b.Steps[1].Error = "failed", &store.StepError{Type: "exit_code", Message: "Exit code 2"}
	b.Steps[2].Outcome, b.Steps[2].Error = "failed", &store.StepError{Type: "tool_error", Message: long}
	b.Steps[4].Outcome, b.Steps[4].Error = "failed", &store.StepError{Type: oneWord, Message: "no type this long is shown whole"}
	b.Steps[3].Outcome, b.Steps[3].Decision, b.Steps[3].Error = "not_run", "rejected", &store.StepError{Type: "rejected", Message: ""}
	mustApply(t, s, b)
	// want is the error a hit of st shows, computed from what was pushed.
	want := func(st store.Step) *store.StepError {
		if st.Error == nil {
			return nil
		}
		// cut keeps the words of s (separated by single spaces) that
		// fit, then …; a first word too long is cut within.
		cut := func(s string) string {
			if utf8.RuneCountInString(s) <= store.HitErrorChars {
				return s
			}
			var kept []string
			for _, w := range strings.Split(s, " ") {
				if utf8.RuneCountInString(strings.Join(append(kept, w), " ")) > store.HitErrorChars {
					break
				}
				kept = append(kept, w)
			}
			if len(kept) == 0 {
				return string([]rune(s)[:store.HitErrorChars]) + "…"
			}
			return strings.Join(kept, " ") + "…"
		}
		return &store.StepError{Type: cut(st.Error.Type), Message: cut(st.Error.Message)}
	}
	for _, q := range []string{"type:command|edit|read|message|other", "status:failed", "test", "main"} {
		r := mustSearch(t, s, store.SearchQuery{Q: q})
		if len(r.Hits) == 0 {
			t.Fatalf("Search(%s) found nothing", q)
		}
		for _, h := range r.Hits {
			if st := b.Steps[h.Seq-1]; !reflect.DeepEqual(h.Error, want(st)) {
				t.Errorf("Search(%s): hit #%d error = %+v; want %+v", q, h.Seq, h.Error, want(st))
			}
		}
	}
	if r := mustSearch(t, s, store.SearchQuery{Q: "status:failed type:edit"}); len(r.Hits) != 1 || r.Hits[0].Error == nil ||
		!strings.HasSuffix(r.Hits[0].Error.Message, "échoué…") || utf8.RuneCountInString(r.Hits[0].Error.Message) > store.HitErrorChars+1 {
		t.Errorf("Search(status:failed type:edit) = %+v; want the edit, its message cut at a word's end within %d characters, and …", r.Hits, store.HitErrorChars)
	}
}

// A tool's result that is JSON text in a string (Copilot CLI's web
// search, as MCP tools answer) is searched by its words: a word that
// begins a line of it is found, which its escaped text hid ("\nword" read
// as the word "nword"). The words are those of the real samples' web
// searches that only the decoded text has.
func testSearchJSONInAString(t *testing.T, s store.Backend) {
	var batches []*store.Batch
	for _, b := range SampleBatches(t) {
		if b.Session.Agent.Kind == "copilot-cli" {
			mustApply(t, s, b)
			batches = append(batches, b)
		}
	}
	checked := 0
	for _, b := range batches {
		for _, st := range b.Steps {
			if st.Type != store.TypeOther || !strings.HasSuffix(st.Payload.ToolName, "web_search") {
				continue
			}
			var raw struct{ Result struct{ Content, Log string } }
			var answer struct{ Text struct{ Value string } }
			text := ""
			if json.Unmarshal(st.Payload.Raw, &raw) == nil {
				text = cmp.Or(raw.Result.Content, raw.Result.Log)
			}
			if json.Unmarshal([]byte(text), &answer) != nil || answer.Text.Value == "" {
				continue
			}
			escaped := map[string]bool{}
			for _, w := range store.SearchTokens(text) {
				escaped[w.Term] = true
			}
			for _, w := range store.SearchTokens(answer.Text.Value) {
				if escaped[w.Term] || len(w.Term) < 3 || strings.IndexFunc(w.Term, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
					continue
				}
				r := mustSearch(t, s, store.SearchQuery{Q: w.Term, Session: b.Session.ID, Limit: store.MaxSearchLimit})
				if !slices.ContainsFunc(r.Hits, func(h store.SearchHit) bool {
					return h.Seq == st.Seq && strings.Contains(strings.ToLower(h.Snippet), w.Term)
				}) {
					t.Errorf("Search(%s) in %s = %v; want step %d, its snippet showing the word", w.Term, b.Session.ID, hitKeys(r), st.Seq)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no web search of the Copilot CLI samples has a word only its decoded text has")
	}
}

// Command output written for a terminal is searched as the terminal shows
// it: a word printed in colour, in a column or in a tool's recorded JSON,
// is found by itself, not glued to its code's "31m", and the snippet shows
// it without the code.
func testSearchColouredOutput(t *testing.T, s store.Backend) {
	sid := "colour"
	b := searchBatch(sid)
	b.Steps[1].Payload.Stdout = genPtr("--- \x1b[31;1mFAIL\x1b[0m: \x1b[1mfailword" + sid + "\x1b[22m (0.01s)")
	b.Steps[4].Payload.Raw = []byte(`{"stdout":"\u001b[2mrawword` + sid + `\u001B[22m"}`)
	mustApply(t, s, b)
	for _, c := range []struct {
		word string
		seq  int64
	}{{"failword" + sid, b.Steps[1].Seq}, {"rawword" + sid, b.Steps[4].Seq}} {
		r := mustSearch(t, s, store.SearchQuery{Q: c.word})
		if len(r.Hits) != 1 || r.Hits[0].Seq != c.seq {
			t.Errorf("Search(%s) = %v; want step %d", c.word, hitKeys(r), c.seq)
			continue
		}
		if sn := r.Hits[0].Snippet; !strings.Contains(sn, c.word) || strings.ContainsAny(sn, "\x1b") {
			t.Errorf("Search(%s): snippet %q; want the word, without a control sequence", c.word, sn)
		}
	}
	if r := mustSearch(t, s, store.SearchQuery{Q: "1mfailword" + sid}); len(r.Hits) != 0 {
		t.Errorf("Search(1mfailword%s) = %v; want no hit: the code's 1m is no part of the word", sid, hitKeys(r))
	}
}

// A malformed query or cursor is refused with the search's error.
func testSearchRefused(t *testing.T, s store.Backend) {
	mustApply(t, s, smallBatch("a"))
	for _, q := range []string{
		"", "   ", `"unclosed`, "-only", "type:shell", "verdict:\"two\nlines\"", "after:yesterday", "agent:", "***",
		strings.Repeat("a ", store.MaxQueryBytes), strings.Repeat("w ", store.MaxQueryTerms+1), "bad\xff",
	} {
		_, err := s.Search(bg, store.SearchQuery{Q: q})
		var inv *store.InvalidError
		if !errors.As(err, &inv) || inv.Error() != "invalid search query" || len(inv.Problems) == 0 || inv.Problems[0].Path != "q" {
			t.Errorf("Search(%.40q) = %v (%+v); want an InvalidError of the search query naming q", q, err, inv)
		}
	}
	// Search syntax inside words is searched as text.
	for _, q := range []string{"AND", "NEAR(a b)", `a"b`, "col:umn", "x^y", "{a b}"} {
		if _, err := s.Search(bg, store.SearchQuery{Q: q}); err != nil {
			t.Errorf("Search(%q) = %v; want nil", q, err)
		}
	}
	if _, err := s.Search(bg, store.SearchQuery{Q: "test", After: "nope"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("Search(after=nope) = %v; want ErrBadCursor", err)
	}
	// A search that found nothing in its time (store.SearchBudget) is
	// refused as too slow, and the next search is answered.
	defer func(budget time.Duration) { store.SearchBudget = budget }(store.SearchBudget)
	store.SearchBudget = time.Nanosecond
	for _, q := range []string{"test", "tes*", "type:command"} {
		_, err := s.Search(bg, store.SearchQuery{Q: q})
		var inv *store.InvalidError
		if !errors.As(err, &inv) || len(inv.Problems) == 0 || !strings.Contains(inv.Problems[0].Message, "took longer than 1ns") {
			t.Errorf("Search(%s) with no time = %v; want an InvalidError saying it took too long", q, err)
		}
	}
	store.SearchBudget = 5 * time.Second
	if r := mustSearch(t, s, store.SearchQuery{Q: "type:command"}); len(r.Hits) == 0 {
		t.Errorf("Search(type:command) after a search out of time found nothing")
	}
}

// Pages of hits, followed by Next, are the hits of one page, in order.
func testSearchPages(t *testing.T, s store.Backend) {
	for i, sid := range []string{"a", "b", "c"} {
		b := searchBatch(sid)
		b.Session.StartedAt = time.Date(2026, 1, 1+i, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)
		mustApply(t, s, b)
	}
	const q = "agent:testagent"
	whole := hitKeys(mustSearch(t, s, store.SearchQuery{Q: q, Limit: store.MaxSearchLimit}))
	if len(whole) != 3*searchSeqs {
		t.Fatalf("Search(%s) = %d hits; want %d, every step of the three sessions", q, len(whole), 3*searchSeqs)
	}
	// Newest session first (c, b, a), steps in seq order.
	want := []hitKey{}
	for _, sid := range []string{"c", "b", "a"} {
		for seq := int64(1); seq <= searchSeqs; seq++ {
			want = append(want, hitKey{sid, seq})
		}
	}
	if !reflect.DeepEqual(whole, want) {
		t.Errorf("Search(%s) = %v; want %v", q, whole, want)
	}
	for _, limit := range []int{1, 3, 7, 8} {
		var got []hitKey
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(whole) {
				t.Fatalf("Search(%s, limit %d) does not end", q, limit)
			}
			r := mustSearch(t, s, store.SearchQuery{Q: q, Limit: limit, After: after})
			if len(r.Hits) > limit {
				t.Errorf("Search(%s, limit %d) = %d hits", q, limit, len(r.Hits))
			}
			got = append(got, hitKeys(r)...)
			if after = r.Next; after == "" {
				break
			}
		}
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("Search(%s) in pages of %d = %v; want %v", q, limit, got, whole)
		}
	}
}

// Nothing of a deleted session is found.
func testSearchAfterDelete(t *testing.T, s store.Backend) {
	mustApply(t, s, searchBatch("x"))
	mustApply(t, s, searchBatch("y"))
	if got := hitKeys(mustSearch(t, s, store.SearchQuery{Q: "rawvaluex"})); len(got) != 1 {
		t.Fatalf("Search(rawvaluex) = %v; want one hit before the delete", got)
	}
	if err := s.Delete(bg, "x"); err != nil {
		t.Fatalf("Delete(x) = %v", err)
	}
	for _, q := range []string{"wsrootx", "promptwordx", "stdoutwordx", "rawvaluex", "authx.go", "flagreasonx", "agent:testagent -wsrooty"} {
		for _, h := range mustSearch(t, s, store.SearchQuery{Q: q}).Hits {
			if h.SessionID == "x" {
				t.Errorf("Search(%q) after Delete(x) found %+v", q, h)
			}
		}
	}
	if got := hitKeys(mustSearch(t, s, store.SearchQuery{Q: "rawvaluey"})); !reflect.DeepEqual(got, []hitKey{{"y", 5}}) {
		t.Errorf("Search(rawvaluey) after Delete(x) = %v; want [{y 5}]", got)
	}
}

// A search of one session (SearchQuery.Session) finds that session's
// hits and no other's, with words and with filters alone, page by page;
// any id works (no filter written in a query could spell this one), and
// an unknown id finds nothing.
func testSearchOneSession(t *testing.T, s store.Backend) {
	odd := "odd id -x:y*"
	sids := []string{"one", odd, "two"}
	for _, sid := range sids {
		mustApply(t, s, searchBatch(sid))
	}
	for _, q := range []string{"rm", "type:command", "rm type:command", "build*", "-nothing type:read"} {
		all := hitKeys(mustSearch(t, s, store.SearchQuery{Q: q, Limit: store.MaxSearchLimit}))
		for _, sid := range sids[:2] {
			want := []hitKey{}
			for _, k := range all {
				if k.Session == sid {
					want = append(want, k)
				}
			}
			if len(want) == 0 || len(want) == len(all) {
				t.Fatalf("Search(%s) found %v: want hits of %q and of others", q, all, sid)
			}
			got := []hitKey{}
			after := ""
			for range 2 * len(want) {
				r := mustSearch(t, s, store.SearchQuery{Q: q, Session: sid, Limit: 1, After: after})
				got = append(got, hitKeys(r)...)
				if after = r.Next; after == "" {
					break
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%s) of session %q, a hit a page, = %v; want %v", q, sid, got, want)
			}
		}
		if r := mustSearch(t, s, store.SearchQuery{Q: q, Session: "nope"}); len(r.Hits) != 0 {
			t.Errorf("Search(%s) of an unknown session = %v; want no hit", q, hitKeys(r))
		}
	}
	// A session whose only prompt is a task's is titled by it, as the list
	// titles it.
	task := searchBatch("task")
	task.Steps[0].Payload.Role = "task"
	mustApply(t, s, task)
	r := mustSearch(t, s, store.SearchQuery{Q: "type:message", Session: "task", Limit: 1})
	if want := mustDetail(t, s, "task").Summary.Title; want == "" || len(r.Hits) != 1 || r.Hits[0].Title != want {
		t.Errorf("Search(type:message in task) = %+v; want the summary's title %q", r.Hits, want)
	}
}

// Text in a script written without spaces (Chinese, Japanese, Korean) is
// found by any run of its characters, as a phrase of them, in order: the
// words of a prompt and of a command's output, and a workspace's name.
// Each hit's matches cover the run in its snippet.
func testSearchWithoutSpaces(t *testing.T, s store.Backend) {
	prompt, output, root := "請不要修改任何代碼，只要調查", "ビルドに失敗しました error", "/home/wei/專案"
	b := smallBatch("cjk")
	b.Session.Workspace.Root = root
	b.Steps[0].Payload.Text = genPtr(prompt)
	b.Steps[1].Payload.Stdout = genPtr(output)
	mustApply(t, s, b)
	mustApply(t, s, smallBatch("other"))
	for _, tc := range []struct {
		q    string
		in   []string // the texts it is in: a step's, or the session's own row ("")
		runs []string // what its matches cover
	}{
		{"修改", []string{prompt}, []string{"修改"}},
		{"代碼", []string{prompt}, []string{"代碼"}},
		{"不要修改任何", []string{prompt}, []string{"不要修改任何"}},
		{"失敗", []string{output}, []string{"失敗"}},
		{"失敗 error", []string{output}, []string{"失敗", "error"}},
		{"ビルド*", []string{output}, []string{"ビルド"}},
		{"專案", []string{""}, []string{"專案"}},
		{"修代", nil, nil},     // its characters, not in a row
		{"改修", nil, nil},     // nor in this order
		{"調查 -修改", nil, nil}, // in the same text as an excluded run
	} {
		t.Run(tc.q, func(t *testing.T) {
			r := mustSearch(t, s, store.SearchQuery{Q: tc.q})
			var got []string
			for _, h := range r.Hits {
				if h.SessionID != "cjk" {
					t.Errorf("hit of session %s: want only cjk's", h.SessionID)
					continue
				}
				switch {
				case h.Seq == 1:
					got = append(got, prompt)
				case h.Seq == 2:
					got = append(got, output)
				case h.Seq == 0:
					got = append(got, "")
				}
				for i, m := range h.Matches {
					if i >= len(tc.runs) || h.Snippet[m[0]:m[1]] != tc.runs[i] {
						t.Errorf("hit #%d: matches %v of %q; want %q", h.Seq, h.Matches, h.Snippet, tc.runs)
						break
					}
				}
				if strings.Contains(h.Snippet, "\u2060") {
					t.Errorf("hit #%d: snippet %q holds a joiner the index was given", h.Seq, h.Snippet)
				}
			}
			if !reflect.DeepEqual(got, tc.in) {
				t.Errorf("Search(%s) found %q; want %q", tc.q, got, tc.in)
			}
		})
	}
}

// The path: filter finds the steps that touched a file as Files touched
// counts them: the edits and reads with the path, and the commands whose
// line names it (store.CommandFiles: Codex writes a file with cat and a
// here-document and reads one with sed -n). Every file a command of the
// real samples names is searched in its session, by its whole path as
// Files touched links it and by its base name.
func testSearchPathOfCommands(t *testing.T, s store.Backend) {
	batches := AgentSamples(t)
	for _, b := range batches {
		mustApply(t, s, b)
	}
	commands := 0
	for _, b := range batches {
		steps := mergeSteps(b)
		named := map[string][]string{} // a command step's id: the files its line names
		var values []string
		for _, st := range steps {
			if st.Type != store.TypeCommand || st.Payload.Command == nil {
				continue
			}
			cwd := ""
			if st.Payload.Cwd != nil {
				cwd = *st.Payload.Cwd
			}
			for _, f := range store.CommandFiles(*st.Payload.Command, cwd) {
				named[st.ID] = append(named[st.ID], f.Path)
				values = append(values, f.Path, path.Base(f.Path))
			}
		}
		commands += len(named)
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			if strings.Contains(v, `"`) {
				continue // the query language cannot say it
			}
			want := []hitKey{}
			for _, st := range steps {
				touched := slices.ContainsFunc(named[st.ID], func(p string) bool { return strings.Contains(p, v) })
				if (st.Type == store.TypeEdit || st.Type == store.TypeRead) && strings.Contains(st.Payload.Path, v) || touched {
					want = append(want, hitKey{b.Session.ID, st.Seq})
				}
			}
			q := `path:"` + v + `"`
			r := mustSearch(t, s, store.SearchQuery{Q: q, Session: b.Session.ID, Limit: store.MaxSearchLimit})
			if got := hitKeys(r); !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%s) in %s (%s) = %v; want %v", q, b.Session.ID, b.Session.Agent.Kind, got, want)
			}
		}
	}
	if commands == 0 {
		t.Fatal("no command of the samples names a file")
	}
	t.Logf("%d commands of the samples name files", commands)
}

// A hit holds its step's first notes, oldest first (those a note: filter
// matches first), and how many it has; a hit of a step without notes
// holds none.
func testSearchHitNotes(t *testing.T, s store.Backend) {
	b := smallBatch("hn")
	mustApply(t, s, b)
	written := map[int64][]store.HitNote{}
	for i, seq := range []int64{2, 2, 4, 2, 2, 2} {
		n := store.HitNote{Author: fmt.Sprintf("reviewer %d", i), Text: fmt.Sprintf("note %d on step %d", i, seq)}
		if _, err := s.AddNote(bg, b.Session.ID, store.NoteInput{Seq: seq, Author: n.Author, Text: n.Text}); err != nil {
			t.Fatal(err)
		}
		written[seq] = append(written[seq], n)
	}
	for _, q := range []string{"note:*", "type:command|read|edit"} {
		r := mustSearch(t, s, store.SearchQuery{Q: q})
		seen := 0
		for _, h := range r.Hits {
			all := written[h.Seq]
			want := all[:min(len(all), store.MaxHitNotes)]
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(h.Notes, want) || h.NoteCount != len(all) {
				t.Errorf("Search(%q): step %d's notes = %v (%d); want %v (%d)", q, h.Seq, h.Notes, h.NoteCount, want, len(all))
			}
			if len(all) > 0 {
				seen++
			}
		}
		if seen != len(written) {
			t.Errorf("Search(%q) found %d of the %d steps with notes", q, seen, len(written))
		}
	}
	// A note: filter's value is marked in the notes shown, in either case.
	const value = "On Step 2"
	r := mustSearch(t, s, store.SearchQuery{Q: fmt.Sprintf("note:%q", value)})
	if len(r.Hits) != 1 || r.Hits[0].Seq != 2 {
		t.Fatalf("Search(note:%q) = %v; want step 2 alone", value, hitKeys(r))
	}
	for _, n := range r.Hits[0].Notes {
		i := strings.Index(strings.ToLower(n.Text), strings.ToLower(value))
		if want := [][2]int{{i, i + len(value)}}; i < 0 || !reflect.DeepEqual(n.Matches, want) {
			t.Errorf("Search(note:%q): note %q marked at %v; want %v", value, n.Text, n.Matches, want)
		}
	}
	// The notes a note: filter matches come first, so a step with more
	// notes than a hit holds shows the ones found, then the oldest.
	for _, values := range [][]string{{"NOTE 5"}, {"4 on step 2"}, {"note 5", "note 4"}, {"note 1 on", "ON STEP 2"}} {
		q := ""
		for _, v := range values {
			q += fmt.Sprintf("note:%q ", v)
		}
		r := mustSearch(t, s, store.SearchQuery{Q: q})
		var found, rest []string
		for _, n := range written[2] {
			matched := false
			for _, v := range values {
				matched = matched || strings.Contains(strings.ToLower(n.Text), strings.ToLower(v))
			}
			if matched {
				found = append(found, n.Text)
			} else {
				rest = append(rest, n.Text)
			}
		}
		want := append(found, rest...)[:store.MaxHitNotes]
		var got []string
		for _, h := range r.Hits {
			if h.Seq == 2 {
				for _, n := range h.Notes {
					got = append(got, n.Text)
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Search(%q): step 2's notes = %q; want %q", q, got, want)
		}
	}
}
