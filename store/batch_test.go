package store_test

// Builders and helpers shared by the store tests: valid v1.2 batches as
// JSON-like trees that a test edits with set and del, then feeds through
// the real decoder (ParseBatch), and helpers that open a temp-file store,
// apply batches and snapshot the whole store.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

type obj = map[string]any
type arr = []any

const (
	tStart = "2026-01-02T10:00:00Z"
	tTurn  = "2026-01-02T10:00:01Z"
	tStep  = "2026-01-02T10:00:02Z"
	tEnd   = "2026-01-02T11:00:00Z"
)

func header(sid string) obj {
	return obj{
		"id":         sid,
		"agent":      obj{"kind": "testagent", "version": "1.0.0"},
		"workspace":  obj{"root": "/tmp/ws-" + sid},
		"started_at": tStart,
		"metrics": obj{
			"cost_usd":     1.25,
			"api_requests": 3,
			"tokens":       obj{"input": 100, "output": 50, "cache_read": 10, "cache_creation": 5},
		},
	}
}

func segment(i int) obj {
	return obj{"index": i, "start_reason": "start", "started_at": tStart, "source_files": arr{}}
}

func rootActor(sid string) obj { return obj{"id": sid + "-root", "type": "root", "label": "main"} }

// turn builds turn sid-<name> at position index, in segment 0, by the root actor.
func turn(sid, name string, index int) obj {
	return obj{
		"id": sid + "-" + name, "session_id": sid, "segment_index": 0, "actor_id": sid + "-root",
		"index": index, "mode": "act", "started_at": tTurn, "step_ids": arr{},
	}
}

func stepID(sid string, seq int) string { return fmt.Sprintf("%s-s%d", sid, seq) }

// step builds a valid inline step of type typ at seq, in turn sid-t1.
func step(sid string, seq int, typ string) obj {
	st := obj{
		"id": stepID(sid, seq), "session_id": sid, "segment_index": 0, "turn_id": sid + "-t1",
		"actor_id": sid + "-root", "seq": seq, "at": tStep, "type": typ,
		"decision": "accepted", "outcome": "ok", "content_status": "inline",
		"channels": arr{"hook"}, "flags": arr{},
	}
	switch typ {
	case "message":
		st["decision"] = "n/a"
		st["payload"] = obj{"role": "user", "text": "Fix the failing test"}
	case "command":
		st["payload"] = obj{"command": "go test ./...", "stdout": "ok", "stderr": "", "exit_code": 0, "cwd": "/tmp/ws"}
		st["flags"] = arr{obj{"kind": "dangerous_command", "severity": "warn", "reason": "runs tests"}}
	case "edit":
		st["outcome"] = "failed"
		st["error"] = obj{"type": "tool_error", "message": "old_string not found"}
		st["payload"] = obj{"path": "/tmp/ws/main.go", "old_string": "a", "new_string": "b", "is_full_write": false}
	case "read":
		st["payload"] = obj{"path": "/tmp/ws/main.go", "range": arr{1, 20}}
	case "other":
		st["payload"] = obj{"tool_name": "WebFetch", "raw": obj{"url": "https://example.com"}}
	}
	return st
}

// newBatch returns a valid batch for session sid: one segment, a root
// actor, turn sid-t1, and steps seq 1..5: message, command, edit, read, other.
func newBatch(sid string) obj {
	return obj{
		"schema_version": "1.2",
		"session":        header(sid),
		"segments":       arr{segment(0)},
		"actors":         arr{rootActor(sid)},
		"turns":          arr{turn(sid, "t1", 1)},
		"steps": arr{
			step(sid, 1, "message"), step(sid, 2, "command"), step(sid, 3, "edit"),
			step(sid, 4, "read"), step(sid, 5, "other"),
		},
	}
}

// stepsBatch is a steps-only push: a header without metrics, ended_at or
// source, and the given steps.
func stepsBatch(sid string, steps ...obj) obj {
	h := header(sid)
	delete(h, "metrics")
	s := arr{}
	for _, st := range steps {
		s = append(s, st)
	}
	return obj{"schema_version": "1.2", "session": h, "steps": s}
}

type pathPart struct {
	key string
	idx []int
}

// parsePath splits "steps[1].payload.range[0]" into its parts.
func parsePath(p string) []pathPart {
	var parts []pathPart
	for _, s := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(s, "[")
		part := pathPart{key: name}
		if rest != "" {
			for _, n := range strings.Split(strings.TrimSuffix(rest, "]"), "][") {
				i, err := strconv.Atoi(n)
				if err != nil {
					panic("bad path " + p)
				}
				part.idx = append(part.idx, i)
			}
		}
		parts = append(parts, part)
	}
	return parts
}

// set assigns val at a dotted path, creating missing objects on the way.
func set(root obj, path string, val any) {
	parts := parsePath(path)
	var cur any = root
	for i, p := range parts {
		last := i == len(parts)-1
		m := cur.(obj)
		if len(p.idx) == 0 {
			if last {
				m[p.key] = val
				return
			}
			if _, ok := m[p.key]; !ok {
				m[p.key] = obj{}
			}
			cur = m[p.key]
			continue
		}
		c := m[p.key]
		for j, ix := range p.idx {
			a := c.(arr)
			if last && j == len(p.idx)-1 {
				a[ix] = val
				return
			}
			c = a[ix]
		}
		cur = c
	}
}

// del removes the key at a dotted path.
func del(root obj, path string) {
	parts := parsePath(path)
	var cur any = root
	for i, p := range parts {
		m := cur.(obj)
		if i == len(parts)-1 && len(p.idx) == 0 {
			delete(m, p.key)
			return
		}
		c := m[p.key]
		for _, ix := range p.idx {
			c = c.(arr)[ix]
		}
		cur = c
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return b
}

// mustParse encodes a batch tree and decodes it with ParseBatch.
func mustParse(t testing.TB, v obj) *store.Batch {
	t.Helper()
	body := mustJSON(t, v)
	b, err := store.ParseBatch(body)
	if err != nil {
		t.Fatalf("ParseBatch(%s) = %v%s; want no error", body, err, problems(err))
	}
	return b
}

// problems renders the details of a batch error for a failure message.
func problems(err error) string {
	switch e := err.(type) {
	case *store.InvalidError:
		return fmt.Sprintf(" %+v (omitted %d)", e.Problems, e.Omitted)
	case *store.ReferenceError:
		return fmt.Sprintf(" %+v", e.Problems)
	case *store.ConflictError:
		return fmt.Sprintf(" %+v", e.Problem)
	}
	return ""
}

// mustOpen opens a store on a new temp file, closed when the test ends.
func mustOpen(t testing.TB) *store.Store {
	t.Helper()
	return mustOpenPath(t, filepath.Join(t.TempDir(), "s.db"))
}

func mustOpenPath(t testing.TB, path string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v; want no error", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return s
}

// mustApply parses and applies a batch tree.
func mustApply(t testing.TB, s *store.Store, v obj) store.ApplyResult {
	t.Helper()
	b := mustParse(t, v)
	res, err := s.Apply(context.Background(), b)
	if err != nil {
		t.Fatalf("Apply(%s) = %v%s; want no error", b.Session.ID, err, problems(err))
	}
	return res
}

// applyErr parses a batch tree, applies it and returns Apply's error.
func applyErr(t testing.TB, s *store.Store, v obj) error {
	t.Helper()
	_, err := s.Apply(context.Background(), mustParse(t, v))
	if err == nil {
		t.Fatalf("Apply(%s) = nil; want an error", v["session"].(obj)["id"])
	}
	return err
}

func mustDetail(t testing.TB, s *store.Store, id string) store.SessionDetail {
	t.Helper()
	d, err := s.Detail(context.Background(), id, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v; want no error", id, err)
	}
	return d
}

func mustList(t testing.TB, s *store.Store, agent string) store.SessionList {
	t.Helper()
	l, err := s.List(context.Background(), store.ListQuery{Agent: agent})
	if err != nil {
		t.Fatalf("List(%q) = %v; want no error", agent, err)
	}
	return l
}

func mustLatest(t testing.TB, s *store.Store) int64 {
	t.Helper()
	n, err := s.LatestStamp(context.Background())
	if err != nil {
		t.Fatalf("LatestStamp() = %v; want no error", err)
	}
	return n
}

func mustChanges(t testing.TB, s *store.Store, since int64) ([]store.Change, int64) {
	t.Helper()
	cs, latest, err := s.ChangesSince(context.Background(), since)
	if err != nil {
		t.Fatalf("ChangesSince(%d) = %v; want no error", since, err)
	}
	return cs, latest
}

func mustDelete(t testing.TB, s *store.Store, id string) {
	t.Helper()
	if err := s.Delete(context.Background(), id); err != nil {
		t.Fatalf("Delete(%s) = %v; want no error", id, err)
	}
}

// snapshot renders the whole store: what the read API shows (List, every
// Detail, ChangesSince(0), LatestStamp) and every row of every table read
// through a separate connection, so an error path that wrote anything,
// even a row the API does not show, changes it.
func snapshot(t testing.TB, s *store.Store) string {
	t.Helper()
	var b strings.Builder
	l := mustList(t, s, "")
	b.Write(mustJSON(t, l))
	for _, o := range l.Sessions {
		b.WriteString("\n")
		b.Write(mustJSON(t, mustDetail(t, s, o.ID)))
	}
	cs, latest := mustChanges(t, s, 0)
	fmt.Fprintf(&b, "\nchanges %+v latest %d stamp %d\n", cs, latest, mustLatest(t, s))
	// The search index follows the writes in the background.
	if err := s.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	b.WriteString(dumpTables(t, s.Path()))
	return b.String()
}

// dumpTables lists every row of every table of the database file but the
// pending clean-ups, sorted.
func dumpTables(t testing.TB, path string) string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%s) = %v", path, err)
	}
	defer conn.Close()
	var tables []string
	// scrubs is left out: it lists clean-ups of deletions that the store's
	// background work finishes at any moment, and holds no session content.
	err = sqlitex.Execute(conn, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name != 'scrubs' ORDER BY name`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { tables = append(tables, st.ColumnText(0)); return nil },
	})
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var b strings.Builder
	for _, table := range tables {
		var rows []string
		err := sqlitex.Execute(conn, `SELECT * FROM "`+table+`"`, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error {
				var cols []string
				for i := range st.ColumnCount() {
					switch st.ColumnType(i) {
					case sqlite.TypeNull:
						cols = append(cols, "NULL")
					case sqlite.TypeInteger:
						cols = append(cols, strconv.FormatInt(st.ColumnInt64(i), 10))
					case sqlite.TypeFloat:
						cols = append(cols, strconv.FormatFloat(st.ColumnFloat(i), 'g', -1, 64))
					default:
						cols = append(cols, strconv.Quote(st.ColumnText(i)))
					}
				}
				rows = append(rows, strings.Join(cols, "|"))
				return nil
			},
		})
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		slices.Sort(rows)
		fmt.Fprintf(&b, "table %s (%d rows)\n%s\n", table, len(rows), strings.Join(rows, "\n"))
	}
	return b.String()
}

// assertUnchanged fails when the store differs from an earlier snapshot.
func assertUnchanged(t testing.TB, s *store.Store, before string) {
	t.Helper()
	if after := snapshot(t, s); after != before {
		t.Errorf("store changed on an error path:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func ptr[T any](v T) *T { return &v }

// The snapshot must see every kind of write, or assertUnchanged proves nothing.
func TestSnapshotSeesWrites(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	before := snapshot(t, s)
	mustApply(t, s, newBatch("a"))
	if after := snapshot(t, s); after != before {
		t.Errorf("snapshot changed after an identical re-send:\n%s\n%s", before, after)
	}
	for _, w := range []struct {
		name  string
		write func()
	}{
		{"step rewritten", func() {
			st := step("a", 2, "command")
			st["payload"].(obj)["stderr"] = "boom"
			mustApply(t, s, stepsBatch("a", st))
		}},
		{"segment added", func() {
			b := stepsBatch("a")
			b["segments"] = arr{segment(1)}
			mustApply(t, s, b)
		}},
		{"session deleted", func() { mustDelete(t, s, "a") }},
	} {
		before := snapshot(t, s)
		w.write()
		if after := snapshot(t, s); after == before {
			t.Errorf("snapshot unchanged after %s", w.name)
		}
	}
}
