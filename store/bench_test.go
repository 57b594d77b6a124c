package store_test

// Benchmarks of the write path without HTTP, and the floor they are
// measured against: the same rows inserted straight into SQLite with
// prepared statements. BenchmarkRawInsert5000, BenchmarkApply5000,
// BenchmarkParseBatch5000 and BenchmarkValidate5000 split the cost of
// handlers' BenchmarkIngest5000Gzip.
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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/internal/cputime"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
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
	start := cputime.Used()
	for range b.N {
		if _, err := store.ParseBatch(body); err != nil {
			b.Fatalf("ParseBatch = %v; want no error", err)
		}
	}
	benchReportSteps(b, benchSteps)
	cputime.Report(b, cputime.Used()-start)
}

// BenchmarkValidate5000 is Batch.Validate of a parsed 5000-step batch: the
// check Apply runs for every writer, and a second time for ingest.
func BenchmarkValidate5000(b *testing.B) {
	batch, err := store.ParseBatch(benchBody(b, benchSessionID(0)))
	if err != nil {
		b.Fatalf("ParseBatch = %v; want no error", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := batch.Validate(); err != nil {
			b.Fatalf("Validate = %v; want no error", err)
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
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		benchRename(batch, benchSessionID(i))
		b.StartTimer()
		start := cputime.Used()
		res, err := s.Apply(ctx, batch)
		if err != nil || !res.Created || res.Steps != benchSteps {
			b.Fatalf("Apply = %+v, %v; want a created session of %d steps", res, err, benchSteps)
		}
		cpu += cputime.Used() - start
		// The search index follows in the background: catch it up outside
		// the timer, so the next Apply does not wait for it or share the CPU.
		b.StopTimer()
		if _, err := s.Search(ctx, store.SearchQuery{Q: "catchup", Limit: 1}); err != nil {
			b.Fatalf("Search = %v", err)
		}
		b.StartTimer()
	}
	benchReportSteps(b, benchSteps)
	cputime.Report(b, cpu)
}

// BenchmarkRawInsert5000 inserts the rows BenchmarkApply5000 writes (same
// tables, columns and values, checked by TestRawInsertMatchesApply) with
// prepared statements bound by index in one BEGIN IMMEDIATE transaction, on
// a connection of its own with the server's pragmas, while the store the
// server would have open checkpoints the log in the background. Every value
// is computed before the timer starts: this is the cost of SQLite alone.
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
	start := cputime.Used()
	for i := range b.N {
		rows.session.id = benchSessionID(i)
		if err := rows.insert(conn, time.Now().UnixMicro()); err != nil {
			b.Fatalf("raw insert = %v; want no error", err)
		}
	}
	benchReportSteps(b, benchSteps)
	cputime.Report(b, cputime.Used()-start)
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

	benchOpenPath(t, raw)
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
// the raw insert does not shows up as a difference. The search index's
// tables are left out: Apply does not write them, the background catch-up
// does, whenever it runs (search_index.go).
func benchTableQueries(t *testing.T, path string) []string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	var tables []string
	err = sqlitex.ExecuteTransient(conn, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'search%' ORDER BY name`,
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

// benchStorePath is a new store file, open for the rest of the benchmark
// so that its background checkpoints run.
func benchStorePath(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "store.db")
	benchOpenPath(tb, path)
	return path
}

func benchOpen(tb testing.TB) *store.Store {
	tb.Helper()
	return benchOpenPath(tb, filepath.Join(tb.TempDir(), "store.db"))
}

// benchOpenPath opens the store as cmd/service serve does
// (store.ServerOptions).
func benchOpenPath(tb testing.TB, path string) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), path, store.ServerOptions()...)
	if err != nil {
		tb.Fatalf("store.Open(%s) = %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// benchRawConn opens path as the server's pool does: the flags and pragmas
// of store.Open, its prepareConn and CheckpointEvery (no checkpoint inside
// a commit; benchOpenPath's store checkpoints in the background).
func benchRawConn(tb testing.TB, path string) *sqlite.Conn {
	tb.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL|sqlite.OpenURI)
	if err != nil {
		tb.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	tb.Cleanup(func() { conn.Close() })
	for _, pragma := range []string{"foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL", "wal_autocheckpoint = 0"} {
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
	toolName                                benchNull
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
		if st.Type == store.TypeOther {
			rs.toolName = benchNullText(p.ToolName)
		}
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
		stdout, stderr, text, old_string, new_string, tool_name)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
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
		benchBind(st, 24, rs.toolName)
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
	body, err := json.Marshal(storetest.Batch(sid, 0, benchSteps))
	if err != nil {
		tb.Fatalf("json.Marshal = %v", err)
	}
	return body
}

// BenchmarkDetailHeadLongOutputs reads the first delivery (2,048
// characters of each text) of a session whose 10 steps each hold 8 MB of
// output: SQLite still loads each long text whole to count its characters.
func BenchmarkDetailHeadLongOutputs(b *testing.B) {
	s := mustOpen(b)
	mustApply(b, s, turnsBatch("big", 10, strings.Repeat("output line é\n", 8<<20/15)))
	b.ResetTimer()
	for b.Loop() {
		d, err := s.Detail(context.Background(), "big", store.DetailQuery{Turns: 30, Head: 2048})
		if err != nil || len(d.Steps) != 10 {
			b.Fatalf("Detail = %d steps, %v", len(d.Steps), err)
		}
	}
}

// BenchmarkListLongPrompts lists 10 sessions whose first prompt is 8 MB:
// the titles read only the prompts' first 1,000 characters.
func BenchmarkListLongPrompts(b *testing.B) {
	s := mustOpen(b)
	for i := range 10 {
		bt := newBatch(fmt.Sprintf("s%d", i))
		bt["steps"].(arr)[0].(obj)["payload"].(obj)["text"] = "fix it\n" + strings.Repeat("prompt text é ", 8<<20/15)
		mustApply(b, s, bt)
	}
	b.ResetTimer()
	for b.Loop() {
		if l := mustList(b, s, ""); len(l.Sessions) != 10 {
			b.Fatalf("List = %d sessions", len(l.Sessions))
		}
	}
}
