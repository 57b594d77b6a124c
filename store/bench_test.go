package store_test

// Benchmarks of the write path without HTTP, and the floor they are
// measured against: the same rows inserted straight into SQLite with
// prepared statements. BenchmarkRawInsert5000, BenchmarkApply5000 and
// BenchmarkParseBatch5000 split the cost of handlers' BenchmarkIngest5000Gzip.
// docs/performance.md records the numbers; run them with
//
//	go test -run '^$' -bench . -benchmem -count 6 ./store/ ./handlers/
//
// The batch generator below is repeated in handlers/bench_test.go (test
// files cannot share code across packages); keep the two the same so the
// store and HTTP numbers measure the same rows.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

const benchSteps = 5000

// BenchmarkParseBatch5000 is decode and validate only: ParseBatch of one
// 5000-step body.
func BenchmarkParseBatch5000(b *testing.B) {
	body := benchBody(b, benchSessionID(0))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := store.ParseBatch(body); err != nil {
			b.Fatalf("ParseBatch = %v; want no error", err)
		}
	}
	benchReportSteps(b, benchSteps)
}

// BenchmarkApply5000 is Store.Apply of a parsed 5000-step batch: each
// iteration a new session, so every row is really inserted.
func BenchmarkApply5000(b *testing.B) {
	s := benchOpen(b)
	batch, err := store.ParseBatch(benchBody(b, benchSessionID(0)))
	if err != nil {
		b.Fatalf("ParseBatch = %v; want no error", err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		benchRename(batch, benchSessionID(i))
		b.StartTimer()
		res, err := s.Apply(ctx, batch)
		if err != nil || !res.Created || res.Steps != benchSteps {
			b.Fatalf("Apply = %+v, %v; want a created session of %d steps", res, err, benchSteps)
		}
	}
	benchReportSteps(b, benchSteps)
}

// BenchmarkRawInsert5000 inserts the rows BenchmarkApply5000 writes (same
// tables, columns and values, checked by TestRawInsertMatchesApply) with
// prepared statements bound by index in one BEGIN IMMEDIATE transaction, on
// a connection of its own with the store's pragmas. Every value is computed
// before the timer starts: this is the cost of SQLite alone.
func BenchmarkRawInsert5000(b *testing.B) {
	path := benchStorePath(b)
	batch, err := store.ParseBatch(benchBody(b, benchSessionID(0)))
	if err != nil {
		b.Fatalf("ParseBatch = %v; want no error", err)
	}
	rows := benchRows(b, batch)
	conn := benchRawConn(b, path)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rows.session.id = benchSessionID(i)
		if err := rows.insert(conn, time.Now().UnixMicro()); err != nil {
			b.Fatalf("raw insert = %v; want no error", err)
		}
	}
	benchReportSteps(b, benchSteps)
}

// TestRawInsertMatchesApply keeps the raw baseline honest: it must write
// exactly the rows Apply writes.
func TestRawInsertMatchesApply(t *testing.T) {
	dir := t.TempDir()
	applied, raw := filepath.Join(dir, "apply.db"), filepath.Join(dir, "raw.db")
	batch, err := store.ParseBatch(benchBody(t, benchSessionID(7)))
	if err != nil {
		t.Fatalf("ParseBatch = %v; want no error", err)
	}
	s, err := store.Open(context.Background(), applied)
	if err != nil {
		t.Fatalf("store.Open = %v", err)
	}
	defer s.Close()
	if _, err := s.Apply(context.Background(), batch); err != nil {
		t.Fatalf("Apply = %v; want no error", err)
	}

	s2, err := store.Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("store.Open = %v", err)
	}
	s2.Close()
	conn := benchRawConn(t, raw)
	rows := benchRows(t, batch)
	if err := rows.insert(conn, time.Now().UnixMicro()); err != nil {
		t.Fatalf("raw insert = %v; want no error", err)
	}

	for _, q := range benchTableQueries(t, applied) {
		got, want := strings.Split(benchDump(t, raw, q), "\n"), strings.Split(benchDump(t, applied, q), "\n")
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Errorf("%s: raw insert has %d rows, Apply %d; first difference at row %d:\nraw:   %.400s\napply: %.400s",
					q, len(got)-1, len(want)-1, i, strings.Join(got[min(i, len(got)-1):], "\n"), strings.Join(want[min(i, len(want)-1):], "\n"))
				break
			}
		}
	}
}

// benchTableQueries selects every column of every table but the change
// stamps (they are clock readings), so a column Apply starts writing that
// the raw insert does not shows up as a difference.
func benchTableQueries(t *testing.T, path string) []string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	var tables []string
	err = sqlitex.ExecuteTransient(conn, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error { tables = append(tables, st.ColumnText(0)); return nil }})
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var queries []string
	for _, table := range tables {
		var cols, order []string
		err := sqlitex.ExecuteTransient(conn, `SELECT name FROM pragma_table_info(?)`, &sqlitex.ExecOptions{
			Args: []any{table},
			ResultFunc: func(st *sqlite.Stmt) error {
				if name := st.ColumnText(0); name != "updated_at" && name != "deleted_at" {
					cols = append(cols, name)
					order = append(order, strconv.Itoa(len(cols)))
				}
				return nil
			}})
		if err != nil {
			t.Fatalf("columns of %s: %v", table, err)
		}
		queries = append(queries, fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(cols, ", "), table, strings.Join(order, ", ")))
	}
	return queries
}

func benchReportSteps(b *testing.B, steps int) {
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
}

func benchStorePath(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "store.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("store.Open(%s) = %v", path, err)
	}
	s.Close()
	return path
}

func benchOpen(tb testing.TB) *store.Store {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "store.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("store.Open(%s) = %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// benchRawConn opens path as the store's pool does (flags and pragmas of
// store.Open and its prepareConn).
func benchRawConn(tb testing.TB, path string) *sqlite.Conn {
	tb.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL|sqlite.OpenURI)
	if err != nil {
		tb.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	tb.Cleanup(func() { conn.Close() })
	for _, pragma := range []string{"foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL"} {
		if err := sqlitex.ExecuteTransient(conn, "PRAGMA "+pragma, nil); err != nil {
			tb.Fatalf("PRAGMA %s = %v", pragma, err)
		}
	}
	return conn
}

func benchDump(t *testing.T, path, query string) string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	var b strings.Builder
	err = sqlitex.ExecuteTransient(conn, query, &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
		for i := range st.ColumnCount() {
			if st.ColumnType(i) == sqlite.TypeNull {
				b.WriteString("NULL|")
			} else {
				fmt.Fprintf(&b, "%q|", st.ColumnText(i))
			}
		}
		b.WriteString("\n")
		return nil
	}})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return b.String()
}

// benchRename moves a parsed batch to another session id.
func benchRename(b *store.Batch, sid string) {
	b.Session.ID = sid
	for i := range b.Turns {
		b.Turns[i].SessionID = sid
	}
	for i := range b.Steps {
		b.Steps[i].SessionID = sid
	}
}

// benchNull is a TEXT value or NULL.
type benchNull struct {
	s  string
	ok bool
}

func benchNullText(s string) benchNull { return benchNull{s, s != ""} }

func benchNullPtr(s *string) benchNull {
	if s == nil {
		return benchNull{}
	}
	return benchNull{*s, true}
}

func benchBind(st *sqlite.Stmt, i int, v benchNull) {
	if v.ok {
		st.BindText(i, v.s)
	} else {
		st.BindNull(i)
	}
}

// benchRawRows are the column values Apply writes for a new session, computed
// ahead: the store's column mapping (apply.go insertSession, upsertSegment,
// upsertActor, upsertTurn, splitStep) done by hand.
type benchRawRows struct {
	session struct {
		id, kind, version, root, started, source, owner, capturedOn string
		format, repo, ended, metrics                                benchNull
		startedNS                                                   int64
	}
	segments []store.Segment
	files    []string
	actors   []store.Actor
	turns    []store.Turn
	steps    []benchRawStep
}

type benchRawStep struct {
	st                                      *store.Step
	role, errorJSON                         benchNull
	channels, flags, payload                string
	stdout, stderr, text, oldStr, newString benchNull
}

func benchRows(tb testing.TB, b *store.Batch) *benchRawRows {
	tb.Helper()
	must := func(v []byte, err error) string {
		if err != nil {
			tb.Fatalf("json.Marshal = %v", err)
		}
		return string(v)
	}
	r := &benchRawRows{}
	h := &b.Session
	s := &r.session
	s.id, s.kind, s.version, s.root, s.started = h.ID, h.Agent.Kind, h.Agent.Version, h.Workspace.Root, h.StartedAt
	s.format, s.repo, s.ended = benchNullText(h.Agent.FormatVersion), benchNullText(h.Workspace.Repo), benchNullText(h.EndedAt)
	s.source = h.Source
	if s.source == "" {
		s.source = "push:" + h.Agent.Kind
	}
	if h.Metrics != nil {
		s.metrics = benchNullText(must(json.Marshal(h.Metrics)))
	}
	started, _ := store.ParseTimestamp(h.StartedAt)
	s.startedNS = started.UnixNano()
	s.owner = store.OwnerLocal
	s.capturedOn, _ = os.Hostname()
	r.segments, r.actors, r.turns = b.Segments, b.Actors, b.Turns
	for _, g := range b.Segments {
		r.files = append(r.files, must(json.Marshal(g.SourceFiles)))
	}
	for i := range b.Steps {
		st := &b.Steps[i]
		p := st.Payload
		rs := benchRawStep{st: st, role: benchNullText(p.Role),
			stdout: benchNullPtr(p.Stdout), stderr: benchNullPtr(p.Stderr), text: benchNullPtr(p.Text),
			oldStr: benchNullPtr(p.OldString), newString: benchNullPtr(p.NewString)}
		p.Role, p.Stdout, p.Stderr, p.Text, p.OldString, p.NewString = "", nil, nil, nil, nil, nil
		rs.payload = must(json.Marshal(p))
		if st.Error != nil {
			rs.errorJSON = benchNull{must(json.Marshal(st.Error)), true}
		}
		rs.channels = must(json.Marshal(st.Channels))
		rs.flags = must(json.Marshal(st.Flags))
		r.steps = append(r.steps, rs)
	}
	return r
}

// insert writes the rows as a new session in one BEGIN IMMEDIATE
// transaction.
func (r *benchRawRows) insert(conn *sqlite.Conn, stamp int64) (err error) {
	end, err := sqlitex.ImmediateTransaction(conn)
	if err != nil {
		return err
	}
	defer end(&err)

	s := &r.session
	st := conn.Prep(`INSERT INTO sessions (id, agent_kind, agent_version, agent_format_version,
		workspace_root, workspace_repo, started_at, started_ns, ended_at, source, metrics, owner_id, captured_on, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	st.BindText(1, s.id)
	st.BindText(2, s.kind)
	st.BindText(3, s.version)
	benchBind(st, 4, s.format)
	st.BindText(5, s.root)
	benchBind(st, 6, s.repo)
	st.BindText(7, s.started)
	st.BindInt64(8, s.startedNS)
	benchBind(st, 9, s.ended)
	st.BindText(10, s.source)
	benchBind(st, 11, s.metrics)
	st.BindText(12, s.owner)
	st.BindText(13, s.capturedOn)
	st.BindInt64(14, stamp)
	if _, err := st.Step(); err != nil {
		return err
	}
	pk := conn.LastInsertRowID()

	st = conn.Prep(`INSERT INTO segments (session_pk, idx, start_reason, started_at, ended_at, source_files)
		VALUES (?, ?, ?, ?, ?, ?)`)
	for i, g := range r.segments {
		st.BindInt64(1, pk)
		st.BindInt64(2, g.Index)
		st.BindText(3, g.StartReason)
		st.BindText(4, g.StartedAt)
		benchBind(st, 5, benchNullText(g.EndedAt))
		st.BindText(6, r.files[i])
		if err := benchStep(st); err != nil {
			return err
		}
	}
	st = conn.Prep(`INSERT INTO actors (session_pk, id, parent_id, type, label) VALUES (?, ?, ?, ?, ?)`)
	for _, a := range r.actors {
		st.BindInt64(1, pk)
		st.BindText(2, a.ID)
		benchBind(st, 3, benchNullText(a.ParentID))
		st.BindText(4, a.Type)
		benchBind(st, 5, benchNullText(a.Label))
		if err := benchStep(st); err != nil {
			return err
		}
	}
	st = conn.Prep(`INSERT INTO turns (session_pk, id, segment_index, actor_id, idx, prompt_id, mode, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	for _, t := range r.turns {
		st.BindInt64(1, pk)
		st.BindText(2, t.ID)
		st.BindInt64(3, t.SegmentIndex)
		st.BindText(4, t.ActorID)
		st.BindInt64(5, t.Index)
		benchBind(st, 6, benchNullText(t.PromptID))
		benchBind(st, 7, benchNullText(t.Mode))
		st.BindText(8, t.StartedAt)
		st.BindInt64(9, stamp)
		if err := benchStep(st); err != nil {
			return err
		}
	}
	st = conn.Prep(`INSERT INTO steps (session_pk, id, seq, segment_index, turn_id, actor_id, at, type,
		decision, outcome, content_status, role, flag_count, error, channels, flags, updated_at, payload,
		stdout, stderr, text, old_string, new_string)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	for i := range r.steps {
		rs := &r.steps[i]
		s := rs.st
		st.BindInt64(1, pk)
		st.BindText(2, s.ID)
		st.BindInt64(3, s.Seq)
		st.BindInt64(4, s.SegmentIndex)
		st.BindText(5, s.TurnID)
		st.BindText(6, s.ActorID)
		st.BindText(7, s.At)
		st.BindText(8, s.Type)
		st.BindText(9, s.Decision)
		st.BindText(10, s.Outcome)
		st.BindText(11, s.ContentStatus)
		benchBind(st, 12, rs.role)
		st.BindInt64(13, int64(len(s.Flags)))
		benchBind(st, 14, rs.errorJSON)
		st.BindText(15, rs.channels)
		st.BindText(16, rs.flags)
		st.BindInt64(17, stamp)
		st.BindText(18, rs.payload)
		benchBind(st, 19, rs.stdout)
		benchBind(st, 20, rs.stderr)
		benchBind(st, 21, rs.text)
		benchBind(st, 22, rs.oldStr)
		benchBind(st, 23, rs.newString)
		if err := benchStep(st); err != nil {
			return err
		}
	}
	return nil
}

// benchStep runs an INSERT and makes the statement ready for the next row.
func benchStep(st *sqlite.Stmt) error {
	if _, err := st.Step(); err != nil {
		return err
	}
	return st.Reset()
}

// ---- realistic batches (same generator as handlers/bench_test.go) ----

// benchSessionID is a UUID-shaped session id, unique per n.
func benchSessionID(n int) string {
	return fmt.Sprintf("5e55104e-0000-4000-8000-%012d", n)
}

// benchBody is the JSON of a 5000-step batch of a new session.
func benchBody(tb testing.TB, sid string) []byte {
	tb.Helper()
	body, err := json.Marshal(genBatch(sid, 0, benchSteps))
	if err != nil {
		tb.Fatalf("json.Marshal = %v", err)
	}
	return body
}

// genBatch is push number push of a session, each push carrying n steps:
// seq push*n+1 .. push*n+n, a turn for every 20 steps, and on the first
// push the segment and both actors. Contents are pseudo-random but the
// same for the same (push, n): a mix of the five step types with command
// output of a few hundred bytes to 4 KB, edits of code, prompts and
// replies, failures with errors and flags, and some reference-only steps.
func genBatch(sid string, push, n int) *store.Batch {
	const stepsPerTurn = 20
	r := rand.New(rand.NewPCG(uint64(push), uint64(n)))
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	ts := func(seq int) string {
		return start.Add(time.Duration(seq) * 1700 * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
	}
	b := &store.Batch{
		SchemaVersion: store.SchemaVersion,
		Session: store.SessionHeader{
			ID:        sid,
			Agent:     store.Agent{Kind: "claude-code", Version: "2.1.14", FormatVersion: "1"},
			Workspace: store.Workspace{Root: "/home/dev/src/widget", Repo: "github.com/acme/widget"},
			StartedAt: ts(0),
			Metrics: &store.Metrics{CostUSD: 0.0123 * float64(push*n+n), APIRequests: int64(push*n/4 + 1),
				Tokens: store.Tokens{Input: int64(1200 * (push + 1)), Output: int64(800 * (push + 1)), CacheRead: 40000, CacheCreation: 5200}},
		},
	}
	const root, sub = "agent-root", "agent-task-1"
	if push == 0 {
		b.Segments = []store.Segment{{Index: 0, StartReason: "start", StartedAt: ts(0),
			SourceFiles: []string{"/home/dev/.claude/projects/-home-dev-src-widget/" + sid + ".jsonl"}}}
		b.Actors = []store.Actor{{ID: root, Type: "root", Label: "main"}, {ID: sub, ParentID: root, Type: "subagent", Label: "Task: explore tests"}}
	}
	var turn store.Turn
	for i := range n {
		seq := push*n + i + 1
		if i%stepsPerTurn == 0 {
			actor := root
			if r.IntN(10) == 0 {
				actor = sub
			}
			turn = store.Turn{ID: genUUID(r), SessionID: sid, SegmentIndex: 0, ActorID: actor,
				Index: int64(seq/stepsPerTurn + 1), PromptID: genUUID(r), StartedAt: ts(seq), StepIDs: []string{}}
			if r.IntN(4) == 0 {
				turn.Mode = "plan"
			}
			b.Turns = append(b.Turns, turn)
		}
		st := store.Step{ID: "toolu_" + genToken(r, 24), SessionID: sid, SegmentIndex: 0, TurnID: turn.ID,
			ActorID: turn.ActorID, Seq: int64(seq), At: ts(seq), Decision: "accepted", Outcome: "ok",
			ContentStatus: store.ContentInline, Channels: []string{"hook"}, Flags: []store.Flag{}}
		if r.IntN(3) == 0 {
			st.Channels = append(st.Channels, "otel")
		}
		p := &st.Payload
		switch k := r.IntN(100); {
		case i%stepsPerTurn == 0: // each turn opens with the user's prompt
			st.Type, st.Decision, st.ID = store.TypeMessage, "n/a", "msg_"+genToken(r, 24)
			p.Role, p.Text = "user", genPtr(genProse(r, 80+r.IntN(600)))
		case k < 30:
			st.Type = store.TypeCommand
			p.Command = genPtr(genCommand(r))
			p.Cwd = genPtr("/home/dev/src/widget")
			switch {
			case r.IntN(20) == 0:
				st.ContentStatus, p.Command, p.Cwd = store.ContentReferenceOnly, nil, nil
				p.OutputRef = genPtr("otel:tool_result/" + genUUID(r))
			case r.IntN(8) == 0:
				st.Outcome = "failed"
				p.ExitCode = genPtr(int64(1 + r.IntN(2)))
				p.Stdout = genPtr(genLines(r, 200+r.IntN(1500), genOutputLine))
				p.Stderr = genPtr(genLines(r, 100+r.IntN(800), genErrorLine))
				st.Error = &store.StepError{Type: "tool_error", Message: "Command failed with exit code 1"}
				st.Flags = append(st.Flags, store.Flag{Kind: "failed", Severity: "warn", Reason: "exit code 1"})
			default:
				p.Stdout = genPtr(genLines(r, 300+r.IntN(3000), genOutputLine))
				p.ExitCode = genPtr(int64(0))
			}
			if r.IntN(50) == 0 {
				st.Flags = append(st.Flags, store.Flag{Kind: "dangerous_command", Severity: "danger", Reason: "removes files recursively"})
			}
		case k < 50:
			st.Type = store.TypeEdit
			p.Path = genPath(r)
			full := r.IntN(10) == 0
			p.IsFullWrite = &full
			if full {
				p.NewString = genPtr(genLines(r, 600+r.IntN(2400), genCodeLine))
			} else {
				old := genLines(r, 80+r.IntN(700), genCodeLine)
				p.OldString = genPtr(old)
				p.NewString = genPtr(old + genLines(r, 40+r.IntN(300), genCodeLine))
			}
			if r.IntN(3) == 0 {
				p.StructuredPatch = json.RawMessage(fmt.Sprintf(
					`[{"oldStart":%d,"oldLines":4,"newStart":%d,"newLines":6,"lines":[" \tif err != nil {","-\t\treturn err","+\t\treturn fmt.Errorf(\"parse: %%w\", err)"," \t}"]}]`,
					10+r.IntN(300), 10+r.IntN(300)))
			}
			if r.IntN(30) == 0 {
				st.Decision, st.Outcome = "rejected", "failed"
				st.Flags = append(st.Flags, store.Flag{Kind: "rejected", Severity: "info", Reason: "the user rejected the edit"})
			}
		case k < 68:
			st.Type = store.TypeRead
			p.Path = genPath(r)
			if r.IntN(10) < 7 {
				from := int64(1 + r.IntN(400))
				p.Range = &[2]int64{from, from + int64(20+r.IntN(200))}
			}
		case k < 90:
			st.Type, st.Decision, st.ID = store.TypeMessage, "n/a", "msg_"+genToken(r, 24)
			p.Role = "assistant"
			if r.IntN(6) == 0 {
				p.Role = "thinking"
			}
			if r.IntN(30) == 0 {
				st.ContentStatus = store.ContentReferenceOnly
				p.TextRef = genPtr("otel:api_response/" + genUUID(r))
			} else {
				p.Text = genPtr(genProse(r, 60+r.IntN(1500)))
			}
		default:
			st.Type = store.TypeOther
			tools := []string{"Grep", "Glob", "WebFetch", "TodoWrite", "Task"}
			p.ToolName = tools[r.IntN(len(tools))]
			p.Raw = json.RawMessage(fmt.Sprintf(`{"pattern":%q,"path":"/home/dev/src/widget","output_mode":"content","-n":true,"head_limit":%d}`,
				genWords(r, 2+r.IntN(3)), 20+r.IntN(100)))
		}
		b.Steps = append(b.Steps, st)
	}
	return b
}

func genPtr[T any](v T) *T { return &v }

func genUUID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1))
}

func genToken(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

var (
	genVocab = strings.Fields(`the a to of and in is it that for this test file function error value
		return we should can I will need let me check now run build fix update change add remove config
		handler store session step batch parse json request response timeout context query index row
		table column cache token output input path module package import type struct field method
		because so then first next also instead here there which when if not but with from by on`)
	genIdents = strings.Fields(`ctx err req resp conn stmt batch step session cfg buf opts id name
		count total items result parser store handler writer reader token path line col`)
	genPkgs = strings.Fields(`internal/parser internal/store cmd/widget api/v1 pkg/render internal/auth
		internal/queue web/static pkg/config internal/metrics`)
)

func genWords(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = genVocab[r.IntN(len(genVocab))]
	}
	return strings.Join(w, " ")
}

func genProse(r *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		s := genWords(r, 6+r.IntN(14))
		b.WriteString(strings.ToUpper(s[:1]) + s[1:] + ". ")
		if r.IntN(5) == 0 {
			fmt.Fprintf(&b, "See `%s.%s` in %s.\n\n", genIdents[r.IntN(len(genIdents))], genIdents[r.IntN(len(genIdents))], genPath(r))
		}
	}
	return b.String()
}

func genPath(r *rand.Rand) string {
	return fmt.Sprintf("/home/dev/src/widget/%s/%s.go", genPkgs[r.IntN(len(genPkgs))], genIdents[r.IntN(len(genIdents))])
}

func genCommand(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return "go test ./" + genPkgs[r.IntN(len(genPkgs))] + "/... -run Test" + strings.ToUpper(genIdents[r.IntN(len(genIdents))][:1]) + genIdents[r.IntN(len(genIdents))][1:]
	case 1:
		return "git diff --stat HEAD~1 && git status --short"
	case 2:
		return "rg -n '" + genIdents[r.IntN(len(genIdents))] + "' --type go " + genPkgs[r.IntN(len(genPkgs))]
	case 3:
		return "ls -la " + genPkgs[r.IntN(len(genPkgs))]
	case 4:
		return "go build ./... && go vet ./..."
	}
	return "npm run lint -- --fix web/static"
}

func genLines(r *rand.Rand, size int, line func(*rand.Rand) string) string {
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(line(r))
		b.WriteByte('\n')
	}
	return b.String()
}

func genOutputLine(r *rand.Rand) string {
	id := genIdents[r.IntN(len(genIdents))]
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("ok  \tgithub.com/acme/widget/%s\t%.3fs", genPkgs[r.IntN(len(genPkgs))], r.Float64()*3)
	case 1:
		return fmt.Sprintf("=== RUN   Test%s/%s_%d", strings.ToUpper(id[:1])+id[1:], genIdents[r.IntN(len(genIdents))], r.IntN(40))
	case 2:
		return fmt.Sprintf("--- PASS: Test%s (%.2fs)", strings.ToUpper(id[:1])+id[1:], r.Float64())
	case 3:
		return fmt.Sprintf("-rw-r--r--  1 dev dev %6d Jan  2 10:%02d %s.go", r.IntN(40000), r.IntN(60), id)
	case 4:
		return fmt.Sprintf("%s:%d:%d: %s", genPath(r), 1+r.IntN(900), 1+r.IntN(80), genWords(r, 5+r.IntN(6)))
	}
	return fmt.Sprintf(" %s | %3d %s", genPath(r), r.IntN(120), strings.Repeat("+", 1+r.IntN(30)))
}

func genErrorLine(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return fmt.Sprintf("--- FAIL: Test%d (0.%02ds)", r.IntN(1000), r.IntN(100))
	}
	return fmt.Sprintf("%s:%d:%d: undefined: %s", genPath(r), 1+r.IntN(900), 1+r.IntN(80), genIdents[r.IntN(len(genIdents))])
}

func genCodeLine(r *rand.Rand) string {
	a, c := genIdents[r.IntN(len(genIdents))], genIdents[r.IntN(len(genIdents))]
	switch r.IntN(7) {
	case 0:
		return fmt.Sprintf("func (s *%s) %s(ctx context.Context, %s string) error {", strings.ToUpper(a[:1])+a[1:], strings.ToUpper(c[:1])+c[1:], a)
	case 1:
		return fmt.Sprintf("\tif err := %s.%s(ctx); err != nil {", a, strings.ToUpper(c[:1])+c[1:])
	case 2:
		return fmt.Sprintf("\t\treturn fmt.Errorf(\"%s %s: %%w\", err)", a, c)
	case 3:
		return "\t}"
	case 4:
		return fmt.Sprintf("\t%s := make([]%s, 0, len(%s))", a, "string", c)
	case 5:
		return fmt.Sprintf("\t// %s", genWords(r, 4+r.IntN(8)))
	}
	return fmt.Sprintf("\tfor _, %s := range %s.%s {", a, c, "items")
}
