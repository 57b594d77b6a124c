package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/opencode/opencodetest"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

const sampleSession = "ses_450b70e67ffeoaXH496F8i0fVA"

var sampleStorage = filepath.Join("testdata", "storage-derived", "storage")

func mustStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func copyStorage(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "storage")
	err := filepath.WalkDir(sampleStorage, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sampleStorage, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o700)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestBadInput imports broken opencode files: each problem names its file
// (and line, or row) and the rest of the session is still read; a file that
// holds no session writes nothing.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		root    func(t *testing.T) string
		problem string // a substring of the one problem reported
		steps   int    // steps stored; -1: no session
	}{
		{"part file not JSON", func(t *testing.T) string {
			storage := copyStorage(t)
			part := filepath.Join(storage, "part", "msg_baf491597001p2f6KzIFRO4XYr", "prt_baf491905001Fg5dCvh54CMHzd.json")
			os.WriteFile(part, []byte("{\n  \"id\": \"prt_baf491905001Fg5dCvh54CMHzd\",\n  \"type\": tool\n}"), 0o600)
			return storage
		}, "prt_baf491905001Fg5dCvh54CMHzd.json:3: invalid JSON", 5},
		{"database not a database", func(t *testing.T) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "opencode.db"), []byte(strings.Repeat("not sqlite\n", 100)), 0o600)
			return dir
		}, "opencode.db: list sessions", -1},
		{"part row not JSON", func(t *testing.T) string {
			dir := t.TempDir()
			db := opencodetest.MustDB(t, sampleStorage, dir, false)
			mustExec(t, db, `UPDATE part SET data = '{"type": "tool", ' WHERE id = 'prt_baf491905001Fg5dCvh54CMHzd'`)
			return dir
		}, "opencode.db: part prt_baf491905001Fg5dCvh54CMHzd: invalid JSON", 5},
		{"message row of the wrong shape", func(t *testing.T) string {
			dir := t.TempDir()
			db := opencodetest.MustDB(t, sampleStorage, dir, false)
			mustExec(t, db, `UPDATE message SET data = '[1, 2]' WHERE id = 'msg_baf491597001p2f6KzIFRO4XYr'`)
			return dir
		}, "opencode.db: message msg_baf491597001p2f6KzIFRO4XYr: not a JSON object", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := mustStore(t)
			im := &adapters.Importer{Store: st}
			sum, err := im.Run(ctx, Agent, []string{tc.root(t)})
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if len(sum.Problems) != 1 || !strings.Contains(sum.Problems[0].String(), tc.problem) {
				t.Fatalf("Run problems = %v; want one with %q", sum.Problems, tc.problem)
			}
			d, err := st.Detail(ctx, sampleSession, store.DetailQuery{})
			switch {
			case tc.steps < 0 && err == nil:
				t.Errorf("a session was stored: %d steps", len(d.Steps))
			case tc.steps >= 0 && err != nil:
				t.Fatalf("Detail = %v", err)
			case tc.steps >= 0 && len(d.Steps) != tc.steps:
				t.Errorf("stored %d steps; want %d", len(d.Steps), tc.steps)
			}
		})
	}
}

func mustExec(t *testing.T, db, q string) {
	t.Helper()
	conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sqlitex.Execute(conn, q, nil); err != nil {
		t.Fatal(err)
	}
}

// TestImportWhileOpencodeWrites imports while opencode holds a write
// transaction open: the import reads what was committed and takes no lock
// that stops opencode from committing after it.
func TestImportWhileOpencodeWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := opencodetest.MustDB(t, sampleStorage, dir, false)
	w, err := sqlite.OpenConn(db, sqlite.OpenReadWrite|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetBusyTimeout(0)
	if err := sqlitex.ExecuteTransient(w, `BEGIN IMMEDIATE`, nil); err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.Execute(w, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_bb0000000000zzzzzzzzzzzzzz', 'msg_baf491bb5001iGYYlAIx76nKgI', ?, 1, 1, '{"type":"text","text":"later"}')`,
		&sqlitex.ExecOptions{Args: []any{sampleSession}}); err != nil {
		t.Fatal(err)
	}
	st := mustStore(t)
	sum, err := (&adapters.Importer{Store: st}).Run(ctx, Agent, []string{dir})
	if err != nil || len(sum.Problems) > 0 || sum.Steps != 6 {
		t.Fatalf("Run during opencode's write = %s, %v; want the 6 committed steps", sum, err)
	}
	if err := sqlitex.ExecuteTransient(w, `COMMIT`, nil); err != nil {
		t.Fatalf("opencode's COMMIT after the import = %v; want it to go through", err)
	}
	sum, err = (&adapters.Importer{Store: st, Rescan: true}).Run(ctx, Agent, []string{dir})
	if err != nil || sum.Steps != 1 {
		t.Fatalf("Run after the commit = %s, %v; want the 1 step committed since written", sum, err)
	}
}

// TestCompaction reads a compaction (a user message with a compaction part,
// then opencode's summary): it starts a segment, and the summary is in a
// turn of that segment, so no turn spans two segments.
func TestCompaction(t *testing.T) {
	for _, tc := range []struct {
		name, compaction string
		turns            int
	}{
		{"compaction alone", `{"id":"prt_3","type":"compaction","auto":true}`, 3},
		{"compaction with text", `{"id":"prt_3","type":"compaction","auto":true},{"id":"prt_3b","type":"text","text":"and then?"}`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"info":{"id":"ses_1","directory":"/w","time":{"created":1}},"messages":[
{"info":{"id":"msg_1","role":"user","time":{"created":2}},"parts":[{"id":"prt_1","type":"text","text":"hi"}]},
{"info":{"id":"msg_2","role":"assistant","time":{"created":3}},"parts":[{"id":"prt_2","type":"text","text":"hello"}]},
{"info":{"id":"msg_3","role":"user","time":{"created":4}},"parts":[` + tc.compaction + `]},
{"info":{"id":"msg_4","role":"assistant","summary":true,"mode":"compaction","time":{"created":5}},"parts":[{"id":"prt_4","type":"text","text":"summary"}]},
{"info":{"id":"msg_5","role":"user","time":{"created":6}},"parts":[{"id":"prt_5","type":"text","text":"go on"}]}
]}`
			s := Parse(adapters.Unit{ID: "ses_1"}, []adapters.File{{Path: "/x/e.json", Body: strings.NewReader(in)}})
			if len(s.Batches) != 1 {
				t.Fatalf("Parse = %d batches; want 1", len(s.Batches))
			}
			b := s.Batches[0]
			if len(b.Segments) != 2 || b.Segments[1].StartReason != "compaction" {
				t.Fatalf("segments = %+v; want start, then compaction", b.Segments)
			}
			turnSeg := map[string]int64{}
			for _, tn := range b.Turns {
				turnSeg[tn.ID] = tn.SegmentIndex
			}
			if len(b.Turns) != tc.turns || len(turnSeg) != tc.turns {
				t.Errorf("turns = %+v; want %d, with distinct ids", b.Turns, tc.turns)
			}
			for _, st := range b.Steps {
				if turnSeg[st.TurnID] != st.SegmentIndex {
					t.Errorf("step %s in segment %d, its turn %s in segment %d", st.ID, st.SegmentIndex, st.TurnID, turnSeg[st.TurnID])
				}
			}
			mustValidBatches(t, s)
		})
	}
}

func mustValidBatches(t *testing.T, s *adapters.Session) {
	t.Helper()
	for i, b := range s.Batches {
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ParseBatch(body); err != nil {
			t.Fatalf("batch %d: ParseBatch = %v", i, err)
		}
	}
}

// TestImportReadsChangedSessionsOnly imports a database of two sessions,
// adds a part to one, and imports again: only that session is read.
func TestImportReadsChangedSessionsOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := opencodetest.MustDB(t, sampleStorage, dir, false)
	mustExec(t, db, `INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
		SELECT 'ses_other', project_id, 'other', '/w', 'other', '1.2.0', 1768172300000, 1768172300000 FROM session LIMIT 1`)
	mustExec(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_other', 'ses_other', 1768172300001, 1768172300001, '{"role":"user","time":{"created":1768172300001}}')`)
	mustExec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_other', 'msg_other', 'ses_other', 1768172300001, 1768172300001, '{"type":"text","text":"hello"}')`)
	st := mustStore(t)
	im := &adapters.Importer{Store: st}
	if sum, err := im.Run(ctx, Agent, []string{dir}); err != nil || sum.New != 2 || sum.Steps != 7 {
		t.Fatalf("first Run = %s, %v; want 2 new sessions, 7 steps", sum, err)
	}
	mustExec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_other2', 'msg_other', 'ses_other', 1768172300002, 1768172300002, '{"type":"text","text":"again"}')`)
	sum, err := im.Run(ctx, Agent, []string{dir})
	if err != nil || sum.Updated != 1 || sum.Unchanged != 1 || sum.Steps != 1 {
		t.Fatalf("second Run = %s, %v; want ses_other alone read and updated (1 step)", sum, err)
	}
}

// TestAssistantError reads assistant messages that ended in an error: a
// system message names each; the provider's error is a failed step, the
// user's abort not.
func TestAssistantError(t *testing.T) {
	in := `{"info":{"id":"ses_1","directory":"/w","time":{"created":1}},"messages":[
{"info":{"id":"msg_1","role":"user","time":{"created":2}},"parts":[{"id":"prt_1","type":"text","text":"hi"}]},
{"info":{"id":"msg_2","role":"assistant","time":{"created":3},"error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}},"parts":[]},
{"info":{"id":"msg_3","role":"assistant","time":{"created":4},"error":{"name":"MessageAbortedError","data":{"message":"The operation was aborted."}}},"parts":[]}
]}`
	s := Parse(adapters.Unit{ID: "ses_1"}, []adapters.File{{Path: "/x/e.json", Body: strings.NewReader(in)}})
	mustValidBatches(t, s)
	steps := s.Batches[0].Steps
	failed, aborted := steps[len(steps)-2], steps[len(steps)-1]
	if failed.Payload.Role != "system" || failed.Payload.Text == nil || *failed.Payload.Text != "APIError: Overloaded" ||
		failed.Outcome != adapters.OutcomeFailed || failed.Error == nil || failed.Error.Type != "api_error" || failed.Error.Message != "APIError: Overloaded" {
		t.Errorf("the provider's error = %+v; want a failed system message naming it", failed)
	}
	if aborted.Payload.Role != "system" || aborted.Payload.Text == nil || *aborted.Payload.Text != "MessageAbortedError: The operation was aborted." ||
		aborted.Outcome != adapters.OutcomeOK || aborted.Error != nil {
		t.Errorf("the abort = %+v; want an ok system message naming the abort", aborted)
	}
}

// TestDatabaseColumnsDropped reads a database whose session table lacks a
// column this adapter reads (an opencode build dropped directory): the
// session is still read, its workspace from the messages' path.
func TestDatabaseColumnsDropped(t *testing.T) {
	dir := t.TempDir()
	db := opencodetest.MustDB(t, sampleStorage, dir, false)
	mustExec(t, db, `ALTER TABLE session DROP COLUMN directory`)
	units, problems := Discover([]string{dir})
	if len(units) != 1 || len(problems) > 0 {
		t.Fatalf("Discover = %d units, %v; want 1", len(units), problems)
	}
	s := adapterstest.ParseUnit(t, Agent, units[0])
	if len(s.Problems) > 0 || s.Steps != 6 {
		t.Fatalf("Parse = %d steps, problems %v; want 6", s.Steps, s.Problems)
	}
	if root := s.Batches[0].Session.Workspace.Root; root != "/Users/philipp/dev/agentlogs" {
		t.Errorf("workspace root = %q; want the messages' path.root", root)
	}
}

// TestMessageFilesListedOnce derives from the real storage sample a
// session of 300 more compactions, each a user message with a
// compaction part and a prompt: each segment lists the session's file and
// the message files of its own records, so every message file is listed
// by one segment. Listed by every segment, as before, the 300 segments
// named 90,000 files.
func TestMessageFilesListedOnce(t *testing.T) {
	const compactions = 300
	root := copyStorage(t)
	msgDir := filepath.Join(root, "message", sampleSession)
	entries, err := os.ReadDir(msgDir)
	if err != nil {
		t.Fatal(err)
	}
	var last int64 // the latest message's time
	for _, e := range entries {
		var m struct {
			Time struct{ Created int64 } `json:"time"`
		}
		opencodetest.MustJSON(t, filepath.Join(msgDir, e.Name()), &m)
		last = max(last, m.Time.Created)
	}
	write := func(path string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(path), 0o700)
		}
		if err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range compactions {
		id := fmt.Sprintf("msg_zz%05d", i)
		write(filepath.Join(msgDir, id+".json"), map[string]any{"id": id, "sessionID": sampleSession, "role": "user",
			"time": map[string]any{"created": last + int64(i+1)*1000}, "agent": "build"})
		for k, part := range []map[string]any{{"type": "compaction"}, {"type": "text", "text": fmt.Sprintf("go on %d", i)}} {
			pid := fmt.Sprintf("prt_zz%05d_%d", i, k)
			part["id"], part["sessionID"], part["messageID"] = pid, sampleSession, id
			write(filepath.Join(root, "part", id, pid+".json"), part)
		}
	}
	batches := mustBatches(t, filepath.Dir(root))
	segs := batches[0].Segments
	if len(segs) != compactions+1 {
		t.Fatalf("%d segments; want %d", len(segs), compactions+1)
	}
	listed := map[string]int{}
	for _, g := range segs {
		for _, f := range g.SourceFiles {
			listed[f]++
		}
	}
	messages := 0
	for f, n := range listed {
		switch kind := storageKind(f); {
		case kind == "message" && n != 1:
			t.Errorf("%s listed by %d segments; want 1", f, n)
		case kind == "session" && n != len(segs):
			t.Errorf("%s listed by %d segments; want every one (%d)", f, n, len(segs))
		case kind == "message":
			messages++
		}
	}
	if want := len(entries) + compactions; messages != want {
		t.Errorf("%d message files listed; want %d", messages, want)
	}
}
