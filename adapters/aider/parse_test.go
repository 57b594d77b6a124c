package aider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// history writes lines as Aider does: each #### and > line ends with
// Aider's two-space line break.
func history(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "####") || strings.HasPrefix(l, ">") {
			l += "  "
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

const banner = "# aider chat started at 2025-03-10 14:02:11\n\n" +
	"> Aider v0.75.2  \n> Main model: gpt-4o with diff edit format  \n\n"

// mustWrite writes text to path, making its folder.
func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parseAt writes text as the history at path and parses each of its runs,
// in file order; Discover must report no problem.
func parseAt(t *testing.T, path, text string) []*adapters.Session {
	t.Helper()
	mustWrite(t, path, text)
	units, problems := Discover([]string{path})
	if len(problems) > 0 {
		t.Fatalf("Discover(%s) problems: %v", path, problems)
	}
	var out []*adapters.Session
	for _, u := range units {
		out = append(out, adapterstest.ParseUnit(t, Agent, u))
	}
	return out
}

// parseOne parses a history of one run.
func parseOne(t *testing.T, text string) *adapters.Session {
	t.Helper()
	sessions := parseAt(t, filepath.Join(t.TempDir(), HistoryFile), text)
	if len(sessions) != 1 {
		t.Fatalf("parsed %d sessions; want 1", len(sessions))
	}
	return sessions[0]
}

// steps are the session's steps, spilled ones too, in order.
func steps(s *adapters.Session) []store.Step {
	var out []store.Step
	s.Each(func(b *store.Batch) error { out = append(out, b.Steps...); return nil })
	return out
}

// outline is each step as id:type[:outcome], for edits and commands.
func outline(s *adapters.Session) string {
	var out []string
	for _, st := range steps(s) {
		o := st.ID + ":" + st.Type
		if st.Type == store.TypeMessage {
			o += ":" + st.Payload.Role
		} else {
			o += ":" + st.Outcome
		}
		out = append(out, o)
	}
	return strings.Join(out, " ")
}

func text(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestPrompts: consecutive #### lines are one prompt, a blank #### line
// inside it too; a blank line between #### lines makes two prompts; Aider's
// two-space line breaks are dropped.
func TestPrompts(t *testing.T) {
	s := parseOne(t, banner+history(
		"#### first line", "####", "#### third line",
		"",
		"#### /add a.py",
		"> Added a.py to the chat",
	))
	st := steps(s)
	if got, want := outline(s), "output-2:message:system prompt-5:message:user prompt-9:message:user output-10:message:system"; got != want {
		t.Fatalf("steps = %s; want %s", got, want)
	}
	if got := text(st[1].Payload.Text); got != "first line\n\nthird line" {
		t.Errorf("prompt text = %q; want the three lines", got)
	}
	if got := text(st[3].Payload.Text); got != "Added a.py to the chat" {
		t.Errorf("output text = %q; want it without Aider's line break", got)
	}
	if got := text(st[0].Payload.Text); got != "Aider v0.75.2\nMain model: gpt-4o with diff edit format" {
		t.Errorf("banner = %q", got)
	}
	h := s.Batches[0].Session
	if h.Agent.Kind != Kind || h.Agent.Version != "0.75.2" || h.StartedAt != "2025-03-10T14:02:11Z" || h.Source != "import:aider" || h.Metrics != nil {
		t.Errorf("header = %+v; want aider 0.75.2 started 2025-03-10T14:02:11Z (local time taken as UTC), no metrics", h)
	}
	if got := len(s.Batches[0].Turns); got != 3 {
		t.Errorf("turns = %d; want 3 (the banner's, and one per prompt)", got)
	}
}

// TestFailedEdits: a failure that names a block fails that edit, and "the
// other blocks were applied" makes the rest ok; a format error that names
// none fails every edit of the reply; the model's retry stays in the turn;
// a block cut off stays in the reply's text.
func TestFailedEdits(t *testing.T) {
	s := parseOne(t, banner+history(
		"#### rename f to g",
		"",
		"Here:",
		"",
		"a.py",
		"```python",
		"<<<<<<< SEARCH",
		"def f():",
		"=======",
		"def g():",
		">>>>>>> REPLACE",
		"```",
		"",
		"b.py",
		"```python",
		"<<<<<<< SEARCH",
		"    f()",
		"=======",
		"    g()",
		">>>>>>> REPLACE",
		"```",
		"",
		"Done.",
		"",
		"> Tokens: 1,000 sent, 20 received. Cost: $0.01 request, $0.01 session.",
		"> The LLM did not conform to the edit format.",
		"> # 1 SEARCH/REPLACE block failed to match!",
		">",
		"> ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in b.py",
		"> <<<<<<< SEARCH",
		">     f()",
		"> =======",
		">     g()",
		"> >>>>>>> REPLACE",
		">",
		"> # The other 1 SEARCH/REPLACE block were applied successfully.",
		"",
		"b.py",
		"<<<<<<< SEARCH",
		"\tf()",
		"=======",
		"\tg()",
		">>>>>>> REPLACE",
		"",
		"> Tokens: 1,100 sent, 10 received. Cost: $0.01 request, $0.02 session.",
		"> The LLM did not conform to the edit format.",
		"> Bad/missing filename.",
		"",
		"c.py",
		"```python",
		"<<<<<<< SEARCH",
		"x = 1",
		"",
		"#### /undo",
	))
	got, want := outline(s), "output-2:message:system prompt-5:message:user reply-7:message:assistant edit-11:edit:ok edit-20:edit:failed "+
		"output-30:message:system edit-43:edit:failed output-50:message:system reply-53:message:assistant prompt-58:message:user"
	if got != want {
		t.Fatalf("steps =\n%s\nwant\n%s", got, want)
	}
	st := steps(s)
	if st[2].Payload.Text == nil || *st[2].Payload.Text != "Here:\n\nDone." {
		t.Errorf("reply text = %q; want it without its blocks", text(st[2].Payload.Text))
	}
	if e := st[4].Error; e == nil || e.Type != "SearchReplaceNoExactMatch" || !strings.HasSuffix(e.Message, "lines in b.py") {
		t.Errorf("failed edit's error = %+v; want the SearchReplaceNoExactMatch of b.py", e)
	}
	if e := st[6].Error; e == nil || e.Type != "edit_format" || !strings.Contains(e.Message, "Bad/missing filename.") {
		t.Errorf("format error's edit error = %+v; want edit_format with Aider's message", e)
	}
	if p, o := st[3].Payload, st[3]; p.Path != filepath.Join(s.Batches[0].Session.Workspace.Root, "a.py") || text(p.OldString) != "def f():" || text(p.NewString) != "def g():" || *p.IsFullWrite || o.Decision != adapters.DecisionAuto {
		t.Errorf("edit = %+v %+v; want a.py in the workspace, def f(): -> def g():, auto", p, o)
	}
	if got := text(st[8].Payload.Text); !strings.Contains(got, "<<<<<<< SEARCH\nx = 1") {
		t.Errorf("interrupted reply = %q; want the cut block kept as text", got)
	}
	turns := map[string]bool{}
	for _, x := range st[1:9] {
		turns[x.TurnID] = true
	}
	if len(turns) != 1 {
		t.Errorf("the prompt, replies and retries are in turns %v; want one", turns)
	}
}

// TestNewFile: an empty SEARCH is how Aider creates a file, a full write;
// "Applied edit to" confirms it.
func TestNewFile(t *testing.T) {
	s := parseOne(t, banner+history(
		"#### add a readme",
		"",
		"README.md",
		"```",
		"<<<<<<< SEARCH",
		"=======",
		"# Demo",
		">>>>>>> REPLACE",
		"```",
		"",
		"> Applied edit to README.md",
		"> Commit 1a2b3c4 docs: Add README",
		"> You can use /undo to undo and discard each aider commit.",
	))
	if got, want := outline(s), "output-2:message:system prompt-5:message:user edit-9:edit:ok commit-16:other:ok"; got != want {
		t.Fatalf("steps = %s; want %s", got, want)
	}
	st := steps(s)
	if p := st[2].Payload; p.OldString != nil || text(p.NewString) != "# Demo" || !*p.IsFullWrite {
		t.Errorf("edit = %+v; want a full write of # Demo", p)
	}
	if p := st[3].Payload; p.ToolName != "git commit" || string(p.Raw) != `{"commit":"1a2b3c4","message":"docs: Add README"}` {
		t.Errorf("commit = %s %s", p.ToolName, p.Raw)
	}
	if s.Skipped["undo hint"] != 1 || s.Skipped["applied edit"] != 1 {
		t.Errorf("skipped = %v; want the undo hint and the applied edit line", s.Skipped)
	}
}

// TestRunCommand: /run and ! are a command step beside their prompt, with
// the output Aider logged for them; its question is a system message.
func TestRunCommand(t *testing.T) {
	s := parseOne(t, banner+history(
		"#### /run make test",
		"> Add the output to the chat?",
		"(Y)es/(n)o/message with instructions: y",
		"> FAIL: TestX",
		"> exit status 1",
		"",
		"#### !ls",
		"> a.py",
		"",
		"#### /run rm -rf /",
	))
	got, want := outline(s), "output-2:message:system prompt-5:message:user command-5:command:unknown output-6:message:system "+
		"prompt-11:message:user command-11:command:unknown prompt-14:message:user command-14:command:unknown"
	if got != want {
		t.Fatalf("steps =\n%s\nwant\n%s", got, want)
	}
	st := steps(s)
	if p := st[2].Payload; text(p.Command) != "make test" || text(p.Stdout) != "FAIL: TestX\nexit status 1" {
		t.Errorf("/run = %q, stdout %q", text(p.Command), text(p.Stdout))
	}
	if got := text(st[3].Payload.Text); got != "Add the output to the chat?\n(Y)es/(n)o/message with instructions: y" {
		t.Errorf("question = %q", got)
	}
	if p := st[5].Payload; text(p.Command) != "ls" || text(p.Stdout) != "a.py" {
		t.Errorf("! = %q, stdout %q", text(p.Command), text(p.Stdout))
	}
	if f := st[7].Flags; len(f) == 0 || f[0].Kind != adapters.FlagDangerousCommand {
		t.Errorf("rm -rf / flags = %v; want dangerous_command", f)
	}
}

// TestClear: /clear starts a segment, and the turns after it are in it.
func TestClear(t *testing.T) {
	s := parseOne(t, banner+history("#### hi", "", "Hello.", "", "#### /clear", "", "#### again"))
	b := s.Batches[0]
	if len(b.Segments) != 2 || b.Segments[1].StartReason != "clear" {
		t.Fatalf("segments = %+v; want start and clear", b.Segments)
	}
	for _, st := range b.Steps {
		want := int64(0)
		if st.ID == "prompt-9" || st.ID == "prompt-11" {
			want = 1
		}
		if st.SegmentIndex != want {
			t.Errorf("step %s in segment %d; want %d", st.ID, st.SegmentIndex, want)
		}
	}
}

// TestTokens: counts as Aider writes them (5,244; rounded 2.3k and 12k;
// cache items), the cost of the request, none when Aider priced none; the
// model of the banner.
func TestTokens(t *testing.T) {
	s := parseOne(t, banner+history(
		"#### a", "", "A.", "",
		"> Tokens: 2.3k sent, 12k cache write, 1.1k cache hit, 604 received. Cost: $0.0123 message, $1,234.50 session.",
		"", "#### b", "", "B.", "",
		"> Tokens: 5,244 sent, 10 received.",
	))
	var usage []store.UsageRecord
	for _, b := range s.Batches {
		usage = append(usage, b.Usage...)
	}
	if len(usage) != 2 {
		t.Fatalf("usage records = %d; want 2", len(usage))
	}
	u := usage[0]
	if u.Tokens.Input != 2300 || u.Tokens.CacheCreation != 12000 || u.Tokens.CacheRead != 1100 || u.Tokens.Output != 604 ||
		u.CostUSD == nil || *u.CostUSD != 0.0123 || u.Model != "gpt-4o" || u.ID != "tokens-9" || u.TurnID != "turn-prompt-5" {
		t.Errorf("usage = %+v; want 2300/12000/1100/604 tokens, $0.0123, gpt-4o, in the first prompt's turn", u)
	}
	if u := usage[1]; u.Tokens.Input != 5244 || u.Tokens.Output != 10 || u.CostUSD != nil {
		t.Errorf("usage = %+v; want 5244/10 tokens and no cost", u)
	}
	if s.Skipped["tokens"] != 2 {
		t.Errorf("skipped = %v; want the 2 Tokens lines", s.Skipped)
	}
}

// TestTruncatedRun: a last line without its newline is still being
// written: it is left out and the file marked incomplete; once whole, the
// run keeps its id and the seqs of its steps, and gains the new step.
func TestTruncatedRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	whole := banner + history("#### hi", "", "Hello, how can I", "help?")
	cut := strings.TrimSuffix(whole, "\n")
	s1 := parseAt(t, path, cut)[0]
	if len(s1.Incomplete) != 1 || s1.Incomplete[0] != path {
		t.Errorf("Incomplete = %v; want %s", s1.Incomplete, path)
	}
	if got := text(steps(s1)[2].Payload.Text); got != "Hello, how can I" {
		t.Errorf("reply = %q; want the whole lines only", got)
	}
	s2 := parseAt(t, path, whole)[0]
	if s2.ID != s1.ID || len(s2.Incomplete) != 0 {
		t.Fatalf("whole run = %s, incomplete %v; want %s, complete", s2.ID, s2.Incomplete, s1.ID)
	}
	seqs := func(s *adapters.Session) map[string]int64 {
		m := map[string]int64{}
		for _, st := range steps(s) {
			m[st.ID] = st.Seq
		}
		return m
	}
	for id, seq := range seqs(s1) {
		if seqs(s2)[id] != seq {
			t.Errorf("step %s seq %d after growing; was %d", id, seqs(s2)[id], seq)
		}
	}
	if got := text(steps(s2)[2].Payload.Text); got != "Hello, how can I\nhelp?" {
		t.Errorf("reply = %q", got)
	}
}

// TestCRLF: a history with Windows line endings makes the same session.
func TestCRLF(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	lf := banner + history("#### hi", "", "a.py", "```", "<<<<<<< SEARCH", "x", "=======", "y", ">>>>>>> REPLACE", "```", "", "> Applied edit to a.py")
	want := steps(parseAt(t, path, lf)[0])
	got := steps(parseAt(t, path, strings.ReplaceAll(lf, "\n", "\r\n"))[0])
	if len(got) != len(want) || len(got) != 3 {
		t.Fatalf("CRLF steps = %d; LF steps %d, want 3 (banner, prompt, edit)", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Outcome != w.Outcome || text(g.Payload.Text) != text(w.Payload.Text) ||
			text(g.Payload.OldString) != text(w.Payload.OldString) || text(g.Payload.NewString) != text(w.Payload.NewString) {
			t.Errorf("CRLF step %+v; LF %+v", g, w)
		}
	}
}

// TestEmpty: an empty history, one of blank lines and a run with only its
// header hold no session, and no problem.
func TestEmpty(t *testing.T) {
	for name, body := range map[string]string{"empty": "", "blank": "\n\n  \n", "header only": "\n# aider chat started at 2025-03-10 14:02:11\n\n"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), HistoryFile)
			mustWrite(t, path, body)
			units, problems := Discover([]string{path})
			if len(problems) > 0 {
				t.Fatalf("Discover problems: %v", problems)
			}
			for _, u := range units {
				if s := adapterstest.ParseUnit(t, Agent, u); len(s.Batches) > 0 || len(s.Problems) > 0 {
					t.Errorf("Parse = %d batches, problems %v; want none", len(s.Batches), s.Problems)
				}
			}
		})
	}
}

// TestHostileLine: a line longer than adapters.MaxLine is reported with
// its line number and skipped, the rest of the run is read, and each of
// Discover and Parse holds at most about MaxLine of it, not the line.
func TestHostileLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	mustWrite(t, path, banner+"#### "+strings.Repeat("x", adapters.MaxLine+1)+"\n\n"+history("#### after"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	units, problems := Discover([]string{path})
	if len(units) != 1 || len(problems) > 0 {
		t.Fatalf("Discover = %d units, %v; want 1", len(units), problems)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := Parse(units[0], []adapters.File{{Path: path, Body: f}})
	runtime.ReadMemStats(&after)
	if len(s.Problems) != 1 || s.Problems[0].Line != 6 ||
		!strings.Contains(s.Problems[0].Message, adapters.ErrLineTooLong.Error()) {
		t.Errorf("problems = %v; want line 6, %v", s.Problems, adapters.ErrLineTooLong)
	}
	if got, want := outline(s), "output-2:message:system prompt-7:message:user"; got != want {
		t.Errorf("steps = %s; want %s", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6*adapters.MaxLine {
		t.Errorf("Discover and Parse allocated %d MB; want at most about MaxLine (%d MB) each", alloc>>20, adapters.MaxLine>>20)
	}
}

// TestRunIDs: runs that started in the same second are two sessions; a
// history that grew names its runs as before; the same run in another
// repository is another session.
func TestRunIDs(t *testing.T) {
	dir := t.TempDir()
	run := banner + history("#### hi")
	ids := func(path, body string) []string {
		var out []string
		for _, s := range parseAt(t, path, body) {
			out = append(out, s.ID)
		}
		return out
	}
	a := ids(filepath.Join(dir, "a", HistoryFile), run+run)
	if len(a) != 2 || a[0] == a[1] || !strings.HasPrefix(a[0], "aider-20250310-140211-") {
		t.Fatalf("ids = %v; want two, named for their start", a)
	}
	grown := ids(filepath.Join(dir, "a", HistoryFile), run+run+history("", "Hello.")+run)
	if len(grown) != 3 || grown[0] != a[0] || grown[1] != a[1] {
		t.Errorf("ids after growing = %v; want %v and a new one", grown, a)
	}
	if b := ids(filepath.Join(dir, "b", HistoryFile), run); b[0] == a[0] {
		t.Errorf("the run in another repository has id %s too", b[0])
	}
}

// TestLongRuns: Parse finds a run after one larger than its read buffer,
// wherever the header falls in the buffer, with LF and CRLF line endings.
func TestLongRuns(t *testing.T) {
	dir := t.TempDir()
	for _, eol := range []string{"\n", "\r\n"} {
		for fill := 64<<10 - 250; fill < 64<<10; fill += 3 {
			first := banner + history("#### one", "", strings.Repeat("y", fill))
			second := strings.Replace(banner, "14:02:11", "15:00:00", 1) + history("#### two")
			body := strings.ReplaceAll(first+second, "\n", eol)
			sessions := parseAt(t, filepath.Join(dir, HistoryFile), body)
			if len(sessions) != 2 {
				t.Fatalf("fill %d: %d sessions; want 2", fill, len(sessions))
			}
			st := steps(sessions[1])
			if len(st) != 2 || text(st[1].Payload.Text) != "two" || !strings.Contains(sessions[1].ID, "-150000-") {
				t.Fatalf("fill %d %q: second run %s = %s; want its banner and prompt two", fill, eol, sessions[1].ID, outline(sessions[1]))
			}
		}
	}
}

// TestDiscover: histories are found by name in folders (not in
// node_modules); a file named on the command line is read when it starts
// with a run, whatever its name; a history named twice is read once.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	run := banner + history("#### hi")
	mustWrite(t, filepath.Join(dir, "repo", HistoryFile), run+run)
	mustWrite(t, filepath.Join(dir, "repo", "node_modules", "x", HistoryFile), run)
	mustWrite(t, filepath.Join(dir, "repo", "README.md"), "# Readme\n")
	mustWrite(t, filepath.Join(dir, "notes.md"), "\n"+run)
	units, problems := Discover([]string{dir, filepath.Join(dir, "notes.md"), filepath.Join(dir, "repo", "README.md"), filepath.Join(dir, "repo", HistoryFile)})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	var got []string
	for _, u := range units {
		rel, _ := filepath.Rel(dir, u.Paths[0])
		got = append(got, rel)
		if len(u.Stamps) != 1 || u.Stamps[0].Path != u.Paths[0]+"#"+u.ID || u.Stamps[0].Size == 0 {
			t.Errorf("unit %s stamps = %+v; want path#id with the run's size", u.ID, u.Stamps)
		}
	}
	if want := "repo/" + HistoryFile + " repo/" + HistoryFile + " notes.md"; strings.Join(got, " ") != want {
		t.Errorf("units in %v; want %s", got, want)
	}
}

// TestImportGrowingHistory imports a history through the store: a second
// run skips every session, and when the last run grows only it is read
// again, its steps keeping their seqs; a new run is a new session.
func TestImportGrowingHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "repo", HistoryFile)
	st, err := store.Open(ctx, filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	im := &adapters.Importer{Store: st}
	run := func(body, want string) {
		t.Helper()
		mustWrite(t, path, body)
		sum, err := im.Run(ctx, Agent, []string{filepath.Dir(path)})
		if err != nil || len(sum.Problems) > 0 {
			t.Fatalf("Run = %v, %v", err, sum.Problems)
		}
		if got := sum.String(); got != want {
			t.Errorf("Run =\n%s\nwant\n%s", got, want)
		}
	}
	first := banner + history("#### one", "", "One.", "", "> Tokens: 10 sent, 2 received. Cost: $0.01 request, $0.01 session.")
	second := strings.Replace(banner, "14:02:11", "15:00:00", 1) + history("#### two", "", "Two.")
	run(first+second, "imported 1 file: 2 sessions (2 new, 0 updated, 0 unchanged), 6 steps written")
	run(first+second, "imported 1 file: 2 sessions (0 new, 0 updated, 2 unchanged), 0 steps written")
	units, _ := Discover([]string{path})
	before, err := st.StepSeqs(ctx, units[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	run(first+second+history("", "#### three"), "imported 1 file: 2 sessions (0 new, 1 updated, 1 unchanged), 1 step written")
	after, err := st.StepSeqs(ctx, units[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	for id, seq := range before {
		if after[id] != seq {
			t.Errorf("step %s seq %d after growing; was %d", id, after[id], seq)
		}
	}
	if len(after) != len(before)+1 {
		t.Errorf("steps after growing = %v; want %v and the new prompt", after, before)
	}
	run(first+second+history("", "#### three")+first, "imported 1 file: 3 sessions (1 new, 0 updated, 2 unchanged), 3 steps written")
}

// TestReadFromTheRunsOffset: each run read from where Discover found it
// (Unit.Offset) is the run read from the start of the file, CRLF and a run
// starting twice in one second included; an offset that no longer falls on
// the run's header (the history was rewritten since) reads from the start.
func TestReadFromTheRunsOffset(t *testing.T) {
	second := strings.Replace(banner, "14:02:11", "15:00:00", 1)
	body := banner + history("#### one", "", "Done.") + second + history("#### two", "", "Also.") +
		second + history("#### three", "", "> Tokens: 1,200 sent, 80 received. Cost: $0.01 message, $0.02 session.")
	for _, eol := range []string{"\n", "\r\n"} {
		path := filepath.Join(t.TempDir(), HistoryFile)
		mustWrite(t, path, strings.ReplaceAll(body, "\n", eol))
		units, problems := Discover([]string{path})
		if len(problems) > 0 || len(units) != 3 {
			t.Fatalf("Discover = %d units, %v; want 3", len(units), problems)
		}
		for i, u := range units {
			if (i == 0) != (u.Offset == 0) {
				t.Errorf("run %d offset %d; want 0 for the first run only", i+1, u.Offset)
			}
			fromStart := u
			fromStart.Offset = 0
			stale := u
			stale.Offset = u.Offset + 3
			want := outline(adapterstest.ParseUnit(t, Agent, fromStart))
			for name, v := range map[string]adapters.Unit{"offset": u, "stale offset": stale} {
				s := adapterstest.ParseUnit(t, Agent, v)
				if got := outline(s); got != want || s.ID != u.ID {
					t.Errorf("%q run %d from its %s = %s %s; from the start %s %s", eol, i+1, name, s.ID, got, u.ID, want)
				}
			}
		}
	}
}

// countingFile is a history file that counts the bytes read from it.
type countingFile struct {
	*os.File
	read int64
}

func (c *countingFile) Read(b []byte) (int, error) {
	n, err := c.File.Read(b)
	c.read += int64(n)
	return n, err
}

// TestLastRunReadAlone: the last run of a long history is read from its
// offset, so parsing it reads about that run, not the runs before it (an
// import of every run reads the file about once, not once per run).
func TestLastRunReadAlone(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		b.WriteString(strings.Replace(banner, "14:02:11", fmt.Sprintf("%02d:%02d:%02d", i/3600, i/60%60, i%60), 1))
		b.WriteString(history("#### prompt "+fmt.Sprint(i), "", strings.Repeat("A reply line.\n", 40)))
	}
	path := filepath.Join(t.TempDir(), HistoryFile)
	mustWrite(t, path, b.String())
	units, problems := Discover([]string{path})
	if len(problems) > 0 || len(units) != 2000 {
		t.Fatalf("Discover = %d units, %v; want 2000", len(units), problems)
	}
	last := units[len(units)-1]
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cf := &countingFile{File: f}
	s := Agent.Parse(last, []adapters.File{{Path: path, Body: cf}})
	if s == nil || s.ID != last.ID || s.Steps == 0 {
		t.Fatalf("Parse(last run) = %+v; want its session", s)
	}
	if size := int64(b.Len()); cf.read > 256<<10 || cf.read*10 > size {
		t.Errorf("parsing the last run read %d of the history's %d bytes; want about that run", cf.read, size)
	}
}

// TestWholeFileEdits: in Aider's whole edit format a reply gives a file's
// name, then the whole file in a fenced block; Aider's "Applied edit to" it
// makes that block a full write, ok. A fenced block Aider applied nothing
// from stays text, and a file named in no block makes no edit.
func TestWholeFileEdits(t *testing.T) {
	whole := strings.Replace(banner, "with diff edit format", "with whole edit format", 1)
	s := parseOne(t, whole+history(
		"#### say hi, and show me the old greeting",
		"",
		"The old one was:",
		"",
		"old.py",
		"```python",
		"print('hello')",
		"```",
		"",
		"Here is the new file:",
		"",
		"hi.py",
		"```python",
		"print('hi')",
		"print('there')",
		"```",
		"",
		"> Applied edit to hi.py",
		"> Applied edit to missing.py",
	))
	var edits []store.Step
	for _, st := range steps(s) {
		if st.Type == store.TypeEdit {
			edits = append(edits, st)
		}
	}
	if len(edits) != 1 {
		t.Fatalf("steps = %s; want one edit, of hi.py", outline(s))
	}
	p := edits[0].Payload
	if !strings.HasSuffix(p.Path, "/hi.py") || !*p.IsFullWrite || text(p.NewString) != "print('hi')\nprint('there')\n" || p.OldString != nil ||
		edits[0].Outcome != "ok" || edits[0].Decision != "auto" {
		t.Errorf("edit = %+v %+v; want an ok full write of hi.py with its two lines", edits[0], p)
	}
	if s.Skipped["applied edit"] != 1 {
		t.Errorf("skipped = %v; want the one applied edit line read", s.Skipped)
	}
}
