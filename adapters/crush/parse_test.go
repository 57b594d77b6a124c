package crush

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// schema is Crush's tables as its migrations up to 2025-08 make them (the
// columns the adapter reads; goose's table with one migration applied).
const schema = `
CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL);
INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1), (20250627000000, 1);
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL, message_count INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
  updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL, parts TEXT NOT NULL default '[]',
  model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
  is_summary_message INTEGER DEFAULT 0 NOT NULL);`

// crushDB is a Crush database being written by a test.
type crushDB struct {
	t    *testing.T
	path string
	conn *sqlite.Conn
}

func newDB(t *testing.T) *crushDB {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project", ".crush")
	path := filepath.Join(dir, dbName)
	if err := mkdir(dir); err != nil {
		t.Fatal(err)
	}
	conn, err := sqlite.OpenConn(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := sqlitex.ExecuteScript(conn, schema, nil); err != nil {
		t.Fatal(err)
	}
	return &crushDB{t, path, conn}
}

func (d *crushDB) exec(sql string, args ...any) {
	d.t.Helper()
	if err := sqlitex.Execute(d.conn, sql, &sqlitex.ExecOptions{Args: args}); err != nil {
		d.t.Fatalf("%s: %v", sql, err)
	}
}

func (d *crushDB) session(id, parent string, cost float64, at int64) {
	d.t.Helper()
	var p any
	if parent != "" {
		p = parent
	}
	d.exec(`INSERT INTO sessions (id, parent_session_id, title, cost, created_at, updated_at) VALUES (?, ?, 't', ?, ?, ?)`, id, p, cost, at, at)
}

// message adds a message whose parts are given as {type, data} pairs.
func (d *crushDB) message(id, sid, role string, at int64, parts ...any) {
	d.t.Helper()
	var list []map[string]any
	for i := 0; i+1 < len(parts); i += 2 {
		list = append(list, map[string]any{"type": parts[i], "data": parts[i+1]})
	}
	b, _ := json.Marshal(list)
	d.exec(`INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, updated_at, finished_at) VALUES (?, ?, ?, ?, 'gpt-5', 'openai', ?, ?, ?)`,
		id, sid, role, string(b), at, at, at)
}

// toolCall is a tool_call part's data; its input the JSON of in.
func toolCall(id, name string, in map[string]any) map[string]any {
	b, _ := json.Marshal(in)
	return map[string]any{"id": id, "name": name, "input": string(b), "finished": true}
}

func toolResult(id, content string, isError bool, metadata string) map[string]any {
	return map[string]any{"tool_call_id": id, "content": content, "is_error": isError, "metadata": metadata}
}

func text(s string) map[string]any { return map[string]any{"text": s} }

// only parses the database's one unit.
func only(t *testing.T, db string) (*adapters.Session, []*store.Batch) {
	t.Helper()
	units, problems := Discover([]string{db})
	if len(problems) > 0 || len(units) != 1 {
		t.Fatalf("Discover = %d units, problems %v; want 1", len(units), problems)
	}
	s := adapterstest.ParseUnit(t, Agent, units[0])
	var batches []*store.Batch
	if err := s.Each(func(b *store.Batch) error { batches = append(batches, b); return nil }); err != nil {
		t.Fatal(err)
	}
	return s, batches
}

func stepsByID(batches []*store.Batch) map[string]store.Step {
	out := map[string]store.Step{}
	for _, b := range batches {
		for _, st := range b.Steps {
			out[st.ID] = st
		}
	}
	return out
}

// TestSubagentsUnderTheirCall: a session run by Crush's agent tool (its id
// the message's and the call's, joined by $$) is no unit of its own; its
// steps are a subagent's, in the turn of the call that ran it; a title
// session makes no step.
func TestSubagentsUnderTheirCall(t *testing.T) {
	d := newDB(t)
	d.session("main", "", 0.5, 1754709000)
	d.session("m2$$call_agent", "main", 0.2, 1754709010)
	d.session("title-main", "main", 0.01, 1754709001)
	d.message("m1", "main", "user", 1754709000, "text", text("find the config loader"))
	d.message("t1", "title-main", "user", 1754709001, "text", text("Generate a title for: find the config loader"))
	d.message("t2", "title-main", "assistant", 1754709002, "text", text("Config loader"))
	d.message("m2", "main", "assistant", 1754709005, "text", text("Asking an agent."), "tool_call", toolCall("call_agent", "agent", map[string]any{"prompt": "where is config loaded?"}))
	d.message("c1", "m2$$call_agent", "user", 1754709010, "text", text("where is config loaded?"))
	d.message("c2", "m2$$call_agent", "assistant", 1754709011, "tool_call", toolCall("call_view", "view", map[string]any{"file_path": "/p/config.go"}))
	d.message("c3", "m2$$call_agent", "tool", 1754709012, "tool_result", toolResult("call_view", "<file>...</file>", false, ""))
	d.message("c4", "m2$$call_agent", "assistant", 1754709013, "text", text("In config.go."), "tool_call", toolCall("call_inner", "agent", map[string]any{"prompt": "check it"}))
	d.session("c4$$call_inner", "m2$$call_agent", 0.1, 1754709014)
	d.message("i1", "c4$$call_inner", "assistant", 1754709015, "text", text("Checked."))
	d.message("c5", "m2$$call_agent", "tool", 1754709016, "tool_result", toolResult("call_inner", "Checked.", false, ""))
	d.message("m3", "main", "tool", 1754709020, "tool_result", toolResult("call_agent", "In config.go.", false, ""))
	_, batches := only(t, d.path)
	steps := stepsByID(batches)
	if len(steps) != 8 {
		t.Errorf("%d steps; want 8 (the session's prompt, reply and agent call; the subagent's prompt, view, reply and agent call; its subagent's reply)", len(steps))
	}
	var actors []store.Actor
	for _, b := range batches {
		actors = append(actors, b.Actors...)
	}
	var sub, inner *store.Actor
	for i := range actors {
		switch actors[i].ID {
		case "m2$$call_agent":
			sub = &actors[i]
		case "c4$$call_inner":
			inner = &actors[i]
		}
		if strings.HasPrefix(actors[i].ID, "title-") {
			t.Errorf("actor %+v: a title session makes none", actors[i])
		}
	}
	if sub == nil || sub.ParentID != adapters.RootActor {
		t.Fatalf("actors %+v; want the agent's session under the root actor", actors)
	}
	if inner == nil || inner.ParentID != sub.ID {
		t.Errorf("actors %+v; want the inner agent's session under the agent that ran it", actors)
	}
	agentCall := steps["call_agent"]
	for _, id := range []string{"c1", "call_view", "c4#0", "call_inner"} {
		st, ok := steps[id]
		if !ok || st.ActorID != sub.ID || st.TurnID != agentCall.TurnID {
			t.Errorf("step %s = %+v; want the subagent's, in the agent call's turn %s", id, st, agentCall.TurnID)
		}
	}
	if st := steps["c1"]; st.Payload.Role != "task" {
		t.Errorf("the subagent's prompt = %+v; want role task, what its caller asked", st)
	}
	if st := steps["call_view"]; st.Type != store.TypeRead || st.Payload.Path != "/p/config.go" || st.Outcome != adapters.OutcomeOK {
		t.Errorf("the subagent's view = %+v; want an ok read of /p/config.go", st)
	}
	if m := batches[0].Session.Metrics; m == nil || m.CostUSD != 0.5 {
		t.Errorf("metrics %+v; want the session row's cost 0.5 (Crush adds its subagents' into it)", m)
	}
}

// TestToolsAndOutcomes maps each kind of tool call and result.
func TestToolsAndOutcomes(t *testing.T) {
	d := newDB(t)
	d.session("s", "", 0, 1754709000)
	d.message("u1", "s", "user", 1754709000, "text", text("fix it"),
		"binary", map[string]any{"path": "shot.png", "mime_type": "image/png", "data": []byte("\x89PNG")},
		"shell_command", map[string]any{"command": "git status", "output": "clean", "exit_code": 0})
	d.message("a1", "s", "assistant", 1754709001,
		"reasoning", map[string]any{"thinking": "Look first."},
		"tool_call", toolCall("c_bash", "bash", map[string]any{"command": "go test ./...", "working_dir": "/p"}),
		"tool_call", toolCall("c_deny", "bash", map[string]any{"command": "rm -rf /tmp/x"}),
		"tool_call", toolCall("c_multi", "multiedit", map[string]any{"file_path": "/p/a.go", "edits": []map[string]any{
			{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}}}),
		"tool_call", toolCall("c_write", "write", map[string]any{"file_path": "/p/new.go", "content": "package p\n"}),
		"tool_call", toolCall("c_view", "view", map[string]any{"file_path": "/p/a.go", "offset": 10, "limit": 5}),
		"tool_call", toolCall("c_grep", "grep", map[string]any{"pattern": "TODO"}),
		"finish", map[string]any{"reason": "tool_use"})
	d.message("r1", "s", "tool", 1754709002,
		"tool_result", toolResult("c_bash", "FAIL\nExit code 1\n\n<cwd>/p</cwd>", false, `{"output":"FAIL"}`),
		"tool_result", toolResult("c_deny", "Permission denied", true, ""),
		"tool_result", toolResult("c_multi", "<result>edited</result>", false, `{"additions":2,"removals":2}`),
		"tool_result", toolResult("c_write", "<result>written</result>", false, `{"diff":"--- a/new.go\n+++ b/new.go\n@@ -0,0 +1 @@\n+package p\n"}`),
		"tool_result", toolResult("c_view", "File not found: /p/a.go", true, ""),
		"tool_result", toolResult("c_grep", "Found 2 matches", false, `{"number_of_matches":2}`))
	d.message("a2", "s", "assistant", 1754709003, "finish", map[string]any{"reason": "error", "message": "API Error", "details": "400 Bad Request"})
	_, batches := only(t, d.path)
	steps := stepsByID(batches)

	if st := steps["u1#images"]; st.Type != store.TypeOther || !strings.Contains(string(st.Payload.Raw), "data:image/png;base64,") {
		t.Errorf("the attached image = %+v; want a pasted-images step with its data: URI", st)
	}
	if st := steps["u1#2"]; st.Type != store.TypeCommand || *st.Payload.Command != "git status" || *st.Payload.Stdout != "clean" {
		t.Errorf("the shell-mode command = %+v", st)
	}
	if st := steps["a1#0"]; st.Payload.Role != "thinking" || *st.Payload.Text != "Look first." {
		t.Errorf("the reasoning = %+v; want a thinking message", st)
	}
	bash := steps["c_bash"]
	if bash.Type != store.TypeCommand || bash.Outcome != adapters.OutcomeFailed || bash.Payload.ExitCode == nil || *bash.Payload.ExitCode != 1 ||
		*bash.Payload.Stdout != "FAIL\nExit code 1" || *bash.Payload.Cwd != "/p" {
		t.Errorf("the failing command = %+v; want failed, exit code 1, its output without the <cwd> tag", bash)
	}
	if st := steps["c_deny"]; st.Decision != adapters.DecisionRejected || st.Outcome != adapters.OutcomeNotRun || st.Payload.Stdout != nil {
		t.Errorf("the denied command = %+v; want rejected, not run, no output", st)
	}
	for _, id := range []string{"c_multi", "c_multi#1"} {
		if st := steps[id]; st.Type != store.TypeEdit || st.Payload.Path != "/p/a.go" || st.Outcome != adapters.OutcomeOK {
			t.Errorf("multiedit step %s = %+v; want an ok edit of /p/a.go", id, st)
		}
	}
	if st := steps["c_multi#1"]; *st.Payload.OldString != "c" || *st.Payload.NewString != "d" {
		t.Errorf("the second change = %+v", st)
	}
	if st := steps["c_write"]; !*st.Payload.IsFullWrite || *st.Payload.NewString != "package p\n" || !strings.Contains(string(st.Payload.StructuredPatch), "+package p") {
		t.Errorf("the write = %+v; want a full write with its diff", st)
	}
	if st := steps["c_view"]; st.Type != store.TypeRead || st.Payload.Range == nil || *st.Payload.Range != [2]int64{11, 15} ||
		st.Outcome != adapters.OutcomeFailed || st.Error.Message != "File not found: /p/a.go" {
		t.Errorf("the failed view = %+v; want a failed read of lines 11-15", st)
	}
	var raw struct {
		Input    map[string]any `json:"input"`
		Result   string         `json:"result"`
		Metadata map[string]any `json:"metadata"`
	}
	if st := steps["c_grep"]; json.Unmarshal(st.Payload.Raw, &raw) != nil || raw.Input["pattern"] != "TODO" || raw.Result != "Found 2 matches" || raw.Metadata["number_of_matches"] != 2.0 {
		t.Errorf("the grep = %s; want its input, result and metadata", st.Payload.Raw)
	}
	if st := steps["a2#0"]; st.Payload.Role != "system" || !strings.Contains(*st.Payload.Text, "API Error") || !strings.Contains(*st.Payload.Text, "400 Bad Request") ||
		st.Outcome != adapters.OutcomeFailed || st.Error == nil || st.Error.Type != "api_error" || st.Error.Message != "API Error\n400 Bad Request" {
		t.Errorf("the failed reply = %+v; want a failed system message with the error", st)
	}
}

// TestTimesInMilliseconds: a database whose times are milliseconds, as the
// schema's comments say, gives the same times as one in seconds.
func TestTimesInMilliseconds(t *testing.T) {
	var got []string
	for _, scale := range []int64{1, 1000} {
		d := newDB(t)
		d.session("s", "", 0, 1754709000*scale)
		d.message("u", "s", "user", 1754709000*scale, "text", text("hi"))
		d.message("a", "s", "assistant", 1754709061*scale, "text", text("hello"))
		_, batches := only(t, d.path)
		got = append(got, batches[0].Session.StartedAt+" "+stepsByID(batches)["a#0"].At)
	}
	if got[0] != got[1] || !strings.HasPrefix(got[0], "2025-08-09T03:10:00") {
		t.Errorf("times in seconds %q, in milliseconds %q; want the same, from 2025-08-09T03:10:00Z", got[0], got[1])
	}
}

// TestBadRowsAndCycles: a message whose parts are not JSON is reported and
// skipped, the rest kept; sessions whose parents form a cycle are no unit
// and do not hang the listing.
func TestBadRowsAndCycles(t *testing.T) {
	d := newDB(t)
	d.session("s", "", 0, 1754709000)
	d.message("u", "s", "user", 1754709000, "text", text("hi"))
	d.exec(`INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES ('bad', 's', 'assistant', '{not json', 1754709001, 1754709001)`)
	d.message("a", "s", "assistant", 1754709002, "text", text("hello"))
	d.session("x", "y", 0, 1754709000)
	d.session("y", "x", 0, 1754709000)
	s, batches := only(t, d.path)
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Message, "message bad") {
		t.Errorf("problems %v; want the bad row named", s.Problems)
	}
	if n := len(stepsByID(batches)); n != 2 {
		t.Errorf("%d steps; want the 2 of the good rows", n)
	}
}

// TestReimportKeepsSteps: importing again after Crush added messages
// writes the session again with its earlier steps' numbers; importing an
// unchanged database writes nothing.
func TestReimportKeepsSteps(t *testing.T) {
	ctx := context.Background()
	d := newDB(t)
	d.session("s", "", 0.1, 1754709000)
	d.message("u", "s", "user", 1754709000, "text", text("hi"))
	d.message("a", "s", "assistant", 1754709001, "text", text("hello"), "tool_call", toolCall("c1", "ls", map[string]any{"path": "/p"}))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	im := &adapters.Importer{Store: st}
	for i, want := range []string{"1 new", "1 unchanged"} {
		sum, err := im.Run(ctx, Agent, []string{d.path})
		if err != nil || !strings.Contains(sum.String(), want) {
			t.Fatalf("import %d = %s, %v; want %s", i+1, sum, err, want)
		}
	}
	before, err := st.Detail(ctx, "s", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	d.message("r", "s", "tool", 1754709002, "tool_result", toolResult("c1", "a.go", false, ""))
	d.exec(`UPDATE sessions SET cost = 0.3, updated_at = 1754709003 WHERE id = 's'`)
	sum, err := im.Run(ctx, Agent, []string{d.path})
	if err != nil || !strings.Contains(sum.String(), "1 updated") {
		t.Fatalf("import after a change = %s, %v; want 1 updated", sum, err)
	}
	after, err := st.Detail(ctx, "s", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[string]int64{}
	for _, s := range after.Steps {
		seqs[s.ID] = s.Seq
	}
	for _, s := range before.Steps {
		if seqs[s.ID] != s.Seq {
			t.Errorf("step %s moved from seq %d to %d", s.ID, s.Seq, seqs[s.ID])
		}
	}
	if after.Metrics == nil || after.Metrics.CostUSD != 0.3 {
		t.Errorf("metrics %+v; want the new cost 0.3", after.Metrics)
	}
	for _, s := range after.Steps {
		if s.ID == "c1" && s.Outcome != adapters.OutcomeOK {
			t.Errorf("the call after its result came = %+v; want ok", s)
		}
	}
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o700) }

// TestSummaryStartsASegment: Crush's summary of a session (a message
// marked is_summary_message, or, in files before that column, the message
// the session's summary_message_id names) starts a compaction segment and
// a turn holding the summary; what follows is in that segment.
func TestSummaryStartsASegment(t *testing.T) {
	for _, marked := range []string{"is_summary_message", "summary_message_id"} {
		t.Run(marked, func(t *testing.T) {
			d := newDB(t)
			d.session("s", "", 0, 1754709000)
			d.message("u1", "s", "user", 1754709000, "text", text("build it"))
			d.message("a1", "s", "assistant", 1754709001, "text", text("Built."))
			d.message("sum", "s", "assistant", 1754709100, "text", text("Summary: the build works."))
			if marked == "is_summary_message" {
				d.exec(`UPDATE messages SET is_summary_message = 1 WHERE id = 'sum'`)
			} else {
				d.exec(`UPDATE sessions SET summary_message_id = 'sum'`)
			}
			d.message("u2", "s", "user", 1754709200, "text", text("now test it"))
			_, batches := only(t, d.path)
			steps := stepsByID(batches)
			b := batches[0]
			if len(b.Segments) != 2 || b.Segments[1].StartReason != "compaction" {
				t.Fatalf("segments %+v; want the start and a compaction", b.Segments)
			}
			if st := steps["sum#0"]; st.SegmentIndex != 1 || st.TurnID != "turn-sum" || st.Payload.Role != "assistant" {
				t.Errorf("the summary = %+v; want it in the compaction segment, in its own turn", st)
			}
			if st := steps["u2"]; st.SegmentIndex != 1 {
				t.Errorf("the prompt after the summary = %+v; want it in the compaction segment", st)
			}
			if st := steps["a1#0"]; st.SegmentIndex != 0 {
				t.Errorf("the reply before the summary = %+v; want it in the first segment", st)
			}
		})
	}
}

// TestSpilledSessionsMatchInMemory: each session of the real sample read
// with its steps in memory and read through a spill (adapters.SpillAfter
// 0: its messages handed on one at a time, its finished steps spilled)
// gives the same records.
func TestSpilledSessionsMatchInMemory(t *testing.T) {
	units, problems := Discover([]string{sampleDB(t)})
	if len(problems) > 0 || len(units) == 0 {
		t.Fatalf("%d units, problems %v", len(units), problems)
	}
	records := func(s *adapters.Session) string {
		var all []*store.Batch
		if err := s.Each(func(b *store.Batch) error { all = append(all, b); return nil }); err != nil {
			t.Fatal(err)
		}
		var steps []store.Step
		var turns []store.Turn
		for _, b := range all {
			steps, turns = append(steps, b.Steps...), append(turns, b.Turns...)
		}
		j, _ := json.Marshal([]any{all[0].Session, turns, steps})
		return string(j)
	}
	was := adapters.SpillAfter
	defer func() { adapters.SpillAfter = was }()
	for _, u := range units {
		adapters.SpillAfter = was
		mem := adapterstest.ParseUnit(t, Agent, u)
		if mem.Spilled != nil {
			t.Fatalf("%s: spilled below adapters.SpillAfter", u.ID)
		}
		adapters.SpillAfter = 0
		sp := adapterstest.ParseUnit(t, Agent, u)
		if sp.Spilled == nil || len(sp.Spilled.Steps) == 0 {
			t.Errorf("%s: nothing went through the spill", u.ID)
		}
		if records(sp) != records(mem) {
			t.Errorf("%s: the session read through a spill differs from the one read in memory", u.ID)
		}
		sp.Close()
	}
}

// TestFailedReadWritesNothing: a database whose messages cannot be read
// gives the problem and no batch, not a session of its rows alone.
func TestFailedReadWritesNothing(t *testing.T) {
	d := newDB(t)
	d.session("s", "", 0.5, 1754709000)
	d.message("u", "s", "user", 1754709000, "text", text("hi"))
	units, _ := Discover([]string{d.path})
	d.exec(`DROP TABLE messages`)
	s := adapterstest.ParseUnit(t, Agent, units[0])
	if len(s.Batches) != 0 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Message, "session s") {
		t.Errorf("Parse = %d batches, problems %v; want none and the read's problem", len(s.Batches), s.Problems)
	}
}
