package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// mustOpen opens a store on a new database of its own.
func mustOpen(t testing.TB) *Store {
	t.Helper()
	return mustOpenDSN(t, pgtest.DSN(t))
}

func mustOpenDSN(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustOpenSQLite opens a SQLite store in a temporary file beside the
// PostgreSQL one, for the tests that compare the two; it returns the file
// too, for the tests that read its tables.
func mustOpenSQLite(t testing.TB) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	lite, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("store.Open = %v", err)
	}
	t.Cleanup(func() { lite.Close() })
	return lite, path
}

func mustApply(t testing.TB, s *Store, b *store.Batch) store.ApplyResult {
	t.Helper()
	res, err := s.Apply(context.Background(), b)
	if err != nil {
		t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
	}
	return res
}

// sampleBatches are the batches the Claude Code adapter makes of its real
// sample transcripts, in order, with their usage records.
func sampleBatches(t testing.TB) []*store.Batch {
	t.Helper()
	out := adapterstest.Batches(t, claudecode.Agent, filepath.Join("..", "..", "adapters", "claudecode", "testdata"))
	if len(out) == 0 {
		t.Fatal("no sample batches")
	}
	return out
}

// gen is push number push (of n steps) of a generated session: storetest's
// mix of every step type, output, edits, failures and flags.
func gen(sid string, push, n int) *store.Batch { return storetest.Batch(sid, push, n) }

// snapshot renders every row of every table, to tell whether a call wrote.
func snapshot(t testing.TB, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"clock", "sessions", "segments", "actors", "turns", "steps", "tombstones", "notes", "usage_records", "usage_hours", "step_tallies"} {
		var rows string
		err := s.pool.QueryRow(context.Background(),
			`SELECT coalesce(string_agg(x::text, E'\n' ORDER BY x::text), '') FROM `+table+` x`).Scan(&rows)
		if err != nil {
			t.Fatalf("snapshot %s: %v", table, err)
		}
		fmt.Fprintf(&b, "-- %s\n%s\n", table, rows)
	}
	return b.String()
}

func assertUnchanged(t testing.TB, s *Store, before string) {
	t.Helper()
	if after := snapshot(t, s); after != before {
		t.Errorf("the store changed:\nbefore\n%.2000s\nafter\n%.2000s", before, after)
	}
}

func mustLatest(t testing.TB, s *Store) int64 {
	t.Helper()
	n, err := s.LatestStamp(context.Background())
	if err != nil {
		t.Fatalf("LatestStamp = %v", err)
	}
	return n
}

// comparedColumns are the columns both backends must hold alike, per
// table: all but row keys, change stamps and the writing machine.
var comparedColumns = map[string]string{
	"sessions": "agent_kind, agent_version, agent_format_version, workspace_root, workspace_repo, started_at, started_ns," +
		" ended_at, source, metrics, owner_id, verdict_state, verdict_note, verdict_reviewer",
	"segments": "idx, start_reason, started_at, ended_at, source_files",
	"actors":   "id, parent_id, type, label",
	"turns":    "id, segment_index, actor_id, idx, prompt_id, mode, started_at",
	"steps": "id, seq, segment_index, turn_id, actor_id, at, type, decision, outcome, content_status, role, flag_count," +
		" error, channels, flags, payload, stdout, stderr, text, old_string, new_string",
	"usage_records": "id, at, at_ns, model, actor_id, turn_id, input, output, cache_read, cache_creation, requests, cost_usd, source",
	"usage_hours":   "hour_ns, model, prompt_range, source, reported, input, output, cache_read, cache_creation, requests, cost_usd, last_ns",
	"notes":         "id, author, text",
}

// tableQuery selects a table's compared columns, each row led by its
// session's id.
func tableQuery(table string) string {
	switch table {
	case "sessions":
		return `SELECT id, ` + comparedColumns[table] + ` FROM sessions`
	case "notes": // with the seq of its step
		return `SELECT s.id, p.seq, t.id, t.author, t.text FROM notes t JOIN steps p ON p.pk = t.step_pk JOIN sessions s ON s.pk = t.session_pk`
	}
	cols := strings.Split(comparedColumns[table], ", ")
	for i, c := range cols {
		cols[i] = "t." + c
	}
	return `SELECT s.id, ` + strings.Join(cols, ", ") + ` FROM ` + table + ` t JOIN sessions s ON s.pk = t.session_pk`
}

func renderRow(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		if v == nil {
			b.WriteString("NULL|")
			continue
		}
		fmt.Fprintf(&b, "%v|", v)
	}
	return b.String()
}

// pgTables renders the compared columns of every table, rows sorted.
func pgTables(t testing.TB, s *Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table := range comparedColumns {
		rows, err := s.pool.Query(context.Background(), tableQuery(table))
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			out[table] = append(out[table], renderRow(vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		slices.Sort(out[table])
	}
	return out
}

// sqliteTables renders the same columns of a SQLite store's file.
func sqliteTables(t testing.TB, path string) map[string][]string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[string][]string{}
	for table := range comparedColumns {
		err := sqlitex.Execute(conn, tableQuery(table), &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			vals := make([]any, st.ColumnCount())
			for i := range vals {
				switch st.ColumnType(i) {
				case sqlite.TypeInteger:
					vals[i] = st.ColumnInt64(i)
				case sqlite.TypeFloat:
					vals[i] = st.ColumnFloat(i)
				case sqlite.TypeText:
					vals[i] = st.ColumnText(i)
				case sqlite.TypeNull:
					vals[i] = nil
				default:
					return fmt.Errorf("column %s of %s is a blob", st.ColumnName(i), table)
				}
			}
			out[table] = append(out[table], renderRow(vals))
			return nil
		}})
		if err != nil {
			t.Fatalf("read sqlite %s: %v", table, err)
		}
		slices.Sort(out[table])
	}
	return out
}

// usageBatch is a push of usage records alone to session sid of gen.
func usageBatch(sid string, recs ...store.UsageRecord) *store.Batch {
	b := gen(sid, 0, 1)
	b.Segments, b.Actors, b.Turns, b.Steps = nil, nil, nil, nil
	b.Usage = recs
	return b
}

func usageRecord(id, model, at string, in, out int64, cost *float64) store.UsageRecord {
	return store.UsageRecord{ID: id, At: at, Model: model, ActorID: "agent-root",
		Tokens: pricing.Tokens{Input: in, Output: out, CacheRead: 10, CacheCreation: 1}, CostUSD: cost, Source: store.UsageFromFile}
}

// The same batches give the same rows and the same results on both
// backends: real sample sessions, generated pushes, header changes, step
// rewrites, re-sends and usage records replaced by later counts.
func TestApplyMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg := mustOpen(t)
	lite, path := mustOpenSQLite(t)

	cost := 0.25
	batches := sampleBatches(t)
	batches = append(batches, gen("gen", 0, 60), gen("gen", 1, 60), gen("gen", 1, 60), gen("gen", 0, 60))
	ended := gen("gen", 12, 10) // seqs 121..130, after pushes 0 and 1
	ended.Session.EndedAt, ended.Session.Source, ended.Session.Workspace.Repo = "2026-01-02T12:00:00Z", "capture", "github.com/acme/other"
	rewrite := gen("gen", 1, 60)
	rewrite.Steps = rewrite.Steps[:3]
	rewrite.Steps[1].Outcome, rewrite.Steps[2].Flags = "failed", []store.Flag{{Kind: "failed", Severity: "warn", Reason: "later"}}
	stepsOnly := gen("gen", 26, 5) // seqs 131..135
	stepsOnly.Session.Metrics, stepsOnly.Session.Agent.FormatVersion = nil, ""
	batches = append(batches, ended, rewrite, stepsOnly,
		usageBatch("gen",
			usageRecord("msg_1", "claude-sonnet-4-5-20250929", "2026-01-02T10:00:01Z", 100, 20, &cost),
			usageRecord("msg_2", "claude-sonnet-4-5-20250929", "2026-01-02T10:30:00Z", 300, 40, nil),
			usageRecord("msg_3", "", "2026-01-02T11:10:00Z", 5, 5, nil)),
		usageBatch("gen", // msg_1 read again with its final counts; msg_3 unchanged
			usageRecord("msg_1", "claude-sonnet-4-5-20250929", "2026-01-02T10:00:01Z", 100, 90, &cost),
			usageRecord("msg_3", "", "2026-01-02T11:10:00Z", 5, 5, nil)),
	)
	owned := gen("owned", 0, 20)
	owned.Owner = "alice"
	batches = append(batches, owned)

	for i, b := range batches {
		want, err := lite.Apply(ctx, b)
		if err != nil {
			t.Fatalf("batch %d (%s): SQLite's Apply = %v", i, b.Session.ID, err)
		}
		if got := mustApply(t, pg, b); got != want {
			t.Errorf("batch %d (%s): Apply = %+v; SQLite's = %+v", i, b.Session.ID, got, want)
		}
	}
	want, got := sqliteTables(t, path), pgTables(t, pg)
	for table := range comparedColumns {
		if len(want[table]) == 0 && table != "notes" {
			t.Errorf("%s: SQLite holds no rows; the batches should fill every table", table)
		}
		if !slices.Equal(got[table], want[table]) {
			for i := range max(len(got[table]), len(want[table])) {
				g, w := "", ""
				if i < len(got[table]) {
					g = got[table][i]
				}
				if i < len(want[table]) {
					w = want[table][i]
				}
				if g != w {
					t.Errorf("%s: %d rows, SQLite %d; first difference at row %d:\n postgres %.400s\n sqlite   %.400s",
						table, len(got[table]), len(want[table]), i, g, w)
					break
				}
			}
		}
	}
}

// A re-sent batch writes nothing: no row, no stamp.
func TestApplyResendChangesNothing(t *testing.T) {
	for name, b := range map[string]*store.Batch{
		"whole batch": gen("a", 0, 40),
		"header only": func() *store.Batch {
			b := gen("a", 0, 40)
			b.Segments, b.Actors, b.Turns, b.Steps = nil, nil, nil, nil
			return b
		}(),
		"steps only": gen("a", 1, 40),
		"usage only": usageBatch("a", usageRecord("m1", "m", "2026-01-02T10:00:00Z", 1, 2, nil)),
	} {
		t.Run(name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, gen("a", 0, 40))
			mustApply(t, s, b)
			before := snapshot(t, s)
			got := mustApply(t, s, b)
			want := store.ApplyResult{SessionID: "a", Steps: len(b.Steps), Turns: len(b.Turns), Segments: len(b.Segments), Actors: len(b.Actors)}
			if got != want {
				t.Errorf("Apply(same batch) = %+v; want %+v", got, want)
			}
			assertUnchanged(t, s, before)
		})
	}
}

// Every write takes a stamp later than any before; the session, and the
// turns and steps it wrote, carry it; unchanged rows keep theirs.
func TestApplyStamps(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustApply(t, s, gen("a", 0, 40))
	first := mustLatest(t, s)
	mustApply(t, s, gen("b", 0, 10))
	second := mustLatest(t, s)
	if second <= first {
		t.Fatalf("stamps %d then %d; want increasing", first, second)
	}
	b := gen("a", 0, 40)
	b.Steps[7].Outcome = "failed"
	res := mustApply(t, s, b)
	if !res.Changed || res.StepsWritten != 1 {
		t.Errorf("Apply(one step changed) = %+v; want Changed with 1 step written", res)
	}
	third := mustLatest(t, s)
	if third <= second {
		t.Fatalf("stamp after the rewrite %d; want later than %d", third, second)
	}
	var sessionStamp int64
	if err := s.pool.QueryRow(ctx, `SELECT updated_at FROM sessions WHERE id = 'a'`).Scan(&sessionStamp); err != nil {
		t.Fatal(err)
	}
	if sessionStamp != third {
		t.Errorf("session a updated_at = %d; want the latest stamp %d", sessionStamp, third)
	}
	rows, _ := s.pool.Query(ctx, `SELECT p.id, p.updated_at FROM steps p JOIN sessions s ON s.pk = p.session_pk WHERE s.id = 'a'`)
	for rows.Next() {
		var id string
		var stamp int64
		if err := rows.Scan(&id, &stamp); err != nil {
			t.Fatal(err)
		}
		want := first
		if id == b.Steps[7].ID {
			want = third
		}
		if stamp != want {
			t.Errorf("step %s updated_at = %d; want %d", id, stamp, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// The pusher's user owns a new session; a batch without one is local's.
func TestApplyOwner(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	b := gen("a", 0, 5)
	b.Owner = "alice"
	mustApply(t, s, b)
	mustApply(t, s, gen("b", 0, 5))
	for id, want := range map[string]string{"a": "alice", "b": store.OwnerLocal} {
		var owner, host string
		if err := s.pool.QueryRow(ctx, `SELECT owner_id, captured_on FROM sessions WHERE id = $1`, id).Scan(&owner, &host); err != nil {
			t.Fatal(err)
		}
		if owner != want || host != hostname() {
			t.Errorf("session %s owner %q on %q; want %q on %q", id, owner, host, want, hostname())
		}
	}
}

// Every refused batch gets the SQLite store's error and leaves the store
// as it was.
func TestApplyRefused(t *testing.T) {
	type problem = store.Problem
	tests := []struct {
		name  string
		batch func() *store.Batch
		check func(t *testing.T, err error)
	}{
		{"invalid step", func() *store.Batch {
			b := gen("a", 1, 5)
			b.Steps[2].Type = "dance"
			return b
		}, wantInvalid(problem{Path: "steps[2].type", Message: `expected one of command, edit, read, message, other, got "dance"`})},
		{"unknown segment, actor and turn", func() *store.Batch {
			b := gen("a", 1, 5)
			b.Steps[0].SegmentIndex, b.Steps[1].ActorID, b.Steps[2].TurnID = 7, "ghost", "nope"
			return b
		}, wantRefs(
			problem{Path: "steps[0].segment_index", Message: "no segment 7 in this session"},
			problem{Path: "steps[1].actor_id", Message: "no actor ghost in this session"},
			problem{Path: "steps[2].turn_id", Message: "no turn nope in this session"})},
		{"unknown parent", func() *store.Batch {
			b := gen("a", 1, 1)
			b.Actors = []store.Actor{{ID: "sub", ParentID: "nobody", Type: "subagent"}}
			return b
		}, wantRefs(problem{Path: "actors[0].parent_id", Message: "no actor nobody in this session"})},
		{"step of another session", func() *store.Batch {
			b := gen("a", 1, 2)
			b.Steps[1].SessionID = "b"
			return b
		}, wantRefs(problem{Path: "steps[1].session_id", Message: "must equal session.id a, got b"})},
		{"seq repeats in the batch", func() *store.Batch {
			b := gen("a", 1, 2)
			b.Steps[1].Seq = b.Steps[0].Seq
			return b
		}, wantRefs(problem{Path: "steps[1].seq", Message: fmt.Sprintf("seq %d repeats in this batch", gen("a", 1, 2).Steps[0].Seq)})},
		{"new step on a taken seq", func() *store.Batch {
			b := gen("a", 0, 20)
			b.Steps[4].ID = "other"
			return b
		}, wantConflict(problem{Path: "steps[4].seq", Message: "seq 5 is held by step " + gen("a", 0, 20).Steps[4].ID})},
		{"NUL in a text", func() *store.Batch {
			b := gen("a", 30, 2) // seqs after the stored ones
			b.Steps[0].Payload.Text = ptr("a\x00b")
			b.Steps[0].Type, b.Steps[0].Payload.Role = store.TypeMessage, "user"
			return b
		}, func(t *testing.T, err error) {
			var inv *store.InvalidError
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), "cannot store") {
				t.Errorf("Apply(NUL) = %v; want *InvalidError saying the text cannot be stored", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, gen("a", 0, 20))
			before := snapshot(t, s)
			_, err := s.Apply(context.Background(), tc.batch())
			tc.check(t, err)
			assertUnchanged(t, s, before)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func wantInvalid(want ...store.Problem) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		var inv *store.InvalidError
		if !errors.As(err, &inv) || !slices.Equal(inv.Problems, want) || !strings.Contains(err.Error(), "invalid batch") {
			t.Errorf("Apply = %v; want invalid batch with %+v", err, want)
		}
	}
}

func wantRefs(want ...store.Problem) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		var re *store.ReferenceError
		if !errors.As(err, &re) || !slices.Equal(re.Problems, want) {
			t.Errorf("Apply = %v; want *ReferenceError with %+v", err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "batch references unknown or mismatched records") {
			t.Errorf("Apply = %q; want the reference error text", err)
		}
	}
}

func wantConflict(want store.Problem) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Problem != want || !strings.Contains(err.Error(), "step seq already taken in this session") {
			t.Errorf("Apply = %v; want *ConflictError with %+v", err, want)
		}
	}
}

// Apply with a context that is already done fails and writes nothing.
func TestApplyCanceled(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, gen("b", 0, 5))
	before := snapshot(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Apply(ctx, gen("a", 0, 5)); err == nil {
		t.Fatal("Apply(canceled ctx) = nil; want an error")
	}
	assertUnchanged(t, s, before)
}

// Writers of two server processes take turns: every push gets its own
// stamp, and the stamps of one session's pushes rise in push order.
func TestApplyTwoProcesses(t *testing.T) {
	dsn := pgtest.DSN(t)
	stores := []*Store{mustOpenDSN(t, dsn), mustOpenDSN(t, dsn)}
	const pushes = 8
	errs := make(chan error, 2*pushes)
	for i, s := range stores {
		go func() {
			sid := fmt.Sprintf("p%d", i)
			for push := range pushes {
				_, err := s.Apply(context.Background(), gen(sid, push, 25))
				errs <- err
			}
		}()
	}
	for range 2 * pushes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	changes, latest, err := stores[0].ChangesSince(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || latest != mustLatest(t, stores[1]) {
		t.Errorf("ChangesSince(0) = %+v, %d; want the 2 sessions, latest %d", changes, latest, mustLatest(t, stores[1]))
	}
	var steps, distinct int
	err = stores[1].pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT updated_at) FROM steps`).Scan(&steps, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if steps != 2*pushes*25 || distinct != 2*pushes {
		t.Errorf("%d steps with %d distinct stamps; want %d with %d (one per push)", steps, distinct, 2*pushes*25, 2*pushes)
	}
}
