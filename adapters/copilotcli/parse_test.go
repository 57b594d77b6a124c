package copilotcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// handmade is an events.jsonl made by hand (the real sample has no failed
// call): a failed command, a refused edit, a broken line and a resume.
var handmade = strings.Join([]string{
	`{"type":"session.start","data":{"sessionId":"h-1","copilotVersion":"1.0.40","startTime":"2026-05-01T10:00:00.000Z","context":{"cwd":"/w/app/sub","gitRoot":"/w/app"}},"id":"e0","timestamp":"2026-05-01T10:00:00.000Z"}`,
	`{"type":"user.message","data":{"content":"run the tests","agentMode":"interactive"},"id":"e1","timestamp":"2026-05-01T10:00:01.000Z"}`,
	`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{"command":"go test ./..."}},{"toolCallId":"c2","name":"edit","arguments":{"path":"/w/app/a.go","old_str":"a","new_str":"b"}}]},"id":"e2","timestamp":"2026-05-01T10:00:02.000Z"}`,
	`{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"bash","arguments":{"command":"go test ./..."}},"id":"e3","timestamp":"2026-05-01T10:00:02.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"FAIL\n<exited with exit code 1>"}},"id":"e4","timestamp":"2026-05-01T10:00:03.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c2","success":false,"error":{"message":"The user rejected this tool call."}},"id":"e5","timestamp":"2026-05-01T10:00:04.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c9","success":true},"id":"e6","timestamp":"2026-05-01T10:00:04.000Z"}`,
	`{"type":"user.message", broken`,
	`{"type":"session.resume","data":{},"id":"e7","timestamp":"2026-05-02T09:00:00.000Z"}`,
	`{"type":"user.message","data":{"content":"again"},"id":"e8","timestamp":"2026-05-02T09:00:01.000Z"}`,
	`{"type":"assistant.message","data":{"content":"done","toolRequests":[{"toolCallId":"c3","name":"view","arguments":{"path":"/w/app/a.go"}}]},"id":"e9","timestamp":"2026-05-02T09:00:02.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c3","success":false,"error":"no such file"},"id":"e10","timestamp":"2026-05-02T09:00:03.000Z"}`,
	`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c4","name":"bash","arguments":{"command":"rm -rf build"}},{"toolCallId":"c5","name":"bash","arguments":{"command":"ls"}}]},"id":"e11","timestamp":"2026-05-02T09:00:04.000Z"}`,
	`{"type":"permission.completed","data":{"requestId":"r4","toolCallId":"c4","result":{"kind":"denied-interactively-by-user"}},"id":"e12","timestamp":"2026-05-02T09:00:05.000Z"}`,
	`{"type":"permission.completed","data":{"requestId":"r5","toolCallId":"c5","result":{"kind":"approved"}},"id":"e13","timestamp":"2026-05-02T09:00:05.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c4","success":false,"error":{"message":"Tool call not run","code":"denied"}},"id":"e14","timestamp":"2026-05-02T09:00:06.000Z"}`,
	`{"type":"tool.execution_complete","data":{"toolCallId":"c5","success":true,"result":{"content":"a.go\n<exited with exit code 0>"}},"id":"e15","timestamp":"2026-05-02T09:00:07.000Z"}`,
	`{"type":"session.compaction_complete","data":{},"id":"e16","timestamp":"2026-05-02T09:01:00.000Z"}`,
	`{"type":"user.message","data":{"content":"Continue until the task is done.","isAutopilotContinuation":true},"id":"e17","timestamp":"2026-05-02T09:01:01.000Z"}`,
}, "\n") + "\n"

func parseText(text string) *adapters.Session {
	return Parse(adapters.Unit{ID: "u"}, []adapters.File{{Path: "/c/session-state/h-1/events.jsonl", Body: strings.NewReader(text)}})
}

// TestParseOutcomes checks the mapping of results: a command's exit code
// from Copilot's "<exited with exit code N>", a call the user refused (by
// its error, or at its permission request) is rejected and not run, an
// approved one accepted, a failed view failed with its error; a broken
// line is reported by path and line and the rest is read; resume and
// compaction start segments, the mode of a turn is carried to the next,
// and autopilot's continuation is a system message.
func TestParseOutcomes(t *testing.T) {
	s := parseText(handmade)
	if len(s.Problems) != 1 || s.Problems[0].Line != 8 || s.Problems[0].Path != "/c/session-state/h-1/events.jsonl" {
		t.Errorf("Problems = %v; want line 8 of the file", s.Problems)
	}
	b := s.Batches[0]
	if b.Session.ID != "h-1" || b.Session.Workspace.Root != "/w/app" || b.Session.Agent.Version != "1.0.40" {
		t.Errorf("header = %+v", b.Session)
	}
	byID := map[string]store.Step{}
	for _, st := range b.Steps {
		byID[st.ID] = st
	}
	c1, c2, c3 := byID["c1"], byID["c2"], byID["c3"]
	if c1.Outcome != "failed" || c1.Payload.ExitCode == nil || *c1.Payload.ExitCode != 1 || *c1.Payload.Stdout != "FAIL" || *c1.Payload.Cwd != "/w/app/sub" {
		t.Errorf("command = %+v %+v; want failed with exit code 1, stdout FAIL", c1, c1.Payload)
	}
	if c2.Decision != "rejected" || c2.Outcome != "not_run" || c2.Error == nil {
		t.Errorf("refused edit = %+v; want rejected, not_run", c2)
	}
	if c3.Outcome != "failed" || c3.Error == nil || c3.Error.Message != "no such file" {
		t.Errorf("failed view = %+v; want failed: no such file", c3)
	}
	c4, c5 := byID["c4"], byID["c5"]
	if c4.Decision != "rejected" || c4.Outcome != "not_run" || c4.Payload.Stdout != nil {
		t.Errorf("call denied at its permission request = %+v; want rejected, not_run, no output", c4)
	}
	if c5.Decision != "accepted" || c5.Outcome != "ok" || *c5.Payload.Stdout != "a.go" || c1.Decision != "unknown" {
		t.Errorf("approved call = %+v, unasked call decision %q; want accepted and ok, unknown", c5, c1.Decision)
	}
	var reasons []string
	for _, g := range b.Segments {
		reasons = append(reasons, g.StartReason)
	}
	if strings.Join(reasons, ",") != "start,resume,compaction" {
		t.Errorf("segments start by %v; want start, resume, compaction", reasons)
	}
	if len(b.Turns) != 3 || b.Turns[0].Mode != "interactive" || b.Turns[2].Mode != "interactive" {
		t.Errorf("turns = %+v; want 3 in interactive mode", b.Turns)
	}
	if nudge := byID["e17"]; nudge.Payload.Role != "system" {
		t.Errorf("autopilot continuation = %+v; want a system message", nudge)
	}
	if s.Skipped["result without its call"] != 1 {
		t.Errorf("Skipped = %v; want the result without its call", s.Skipped)
	}
}

// TestParseHalfWritten: a last line without its newline is being written:
// it is left for the next read, not reported, and the file is incomplete.
func TestParseHalfWritten(t *testing.T) {
	s := parseText(handmade + `{"type":"assistant.message","data":{"content":"hal`)
	if len(s.Problems) != 1 || len(s.Incomplete) != 1 {
		t.Errorf("Problems = %v, Incomplete = %v; want only the broken line 8 and the file incomplete", s.Problems, s.Incomplete)
	}
}

// TestImportBadFileWritesNothing: a legacy file that is not JSON, or an
// event log with no event, is reported with its path and stores nothing.
func TestImportBadFileWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad := filepath.Join(dir, "history-session-state", "x.json")
	mustWrite(t, bad, `{"sessionId": "x", "timeline": [`)
	mustWrite(t, filepath.Join(dir, "session-state", "y", "events.jsonl"), "not json\n")
	sum, err := (&adapters.Importer{Store: st}).Run(ctx, Agent, []string{dir})
	if err != nil || sum.Sessions != 0 || len(sum.Problems) != 2 {
		t.Fatalf("Run = %v, %v; want 2 problems and no session", sum, err)
	}
	for _, p := range sum.Problems {
		if !strings.HasPrefix(p.Path, dir) {
			t.Errorf("problem %v names no file", p)
		}
	}
	list, err := st.List(ctx, store.ListQuery{})
	if err != nil || len(list.Sessions) != 0 {
		t.Errorf("List = %d sessions, %v; want none", len(list.Sessions), err)
	}
}

// TestHistoryResult: a legacy tool call whose result is not "success"
// failed with its log as the error.
func TestHistoryResult(t *testing.T) {
	doc, _ := json.Marshal(map[string]any{"sessionId": "h2", "startTime": "2025-10-01T00:00:00Z", "timeline": []any{
		map[string]any{"id": "u1", "type": "user", "text": "go", "timestamp": "2025-10-01T00:00:01Z"},
		map[string]any{"id": "t1", "type": "tool_call_completed", "callId": "k1", "name": "bash", "timestamp": "2025-10-01T00:00:02Z",
			"arguments": map[string]any{"command": "cd /w/x && make"}, "result": map[string]any{"type": "failure", "log": "make: *** no rule"}},
	}})
	s := Parse(adapters.Unit{ID: "u"}, []adapters.File{{Path: "/c/history-session-state/h2.json", Body: bytes.NewReader(doc)}})
	st := s.Batches[0].Steps[1]
	if st.Outcome != "failed" || st.Error == nil || st.Error.Message != "make: *** no rule" || s.Batches[0].Session.Workspace.Root != "/w/x" {
		t.Errorf("step = %+v, workspace %q; want failed with the log, workspace /w/x", st, s.Batches[0].Session.Workspace.Root)
	}
}

func mustWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoverOneFilePerSession: of the files naming one session, the
// events.jsonl log is read, whatever else lies beside it.
func TestDiscoverOneFilePerSession(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"session-state/s1/a.jsonl", "session-state/s1/events.jsonl", "session-state/s1/z.jsonl", "history-session-state/s1.json", "history-session-state/s2.json", "session-state/s2/notes.md"} {
		mustWrite(t, filepath.Join(dir, p), "{}\n")
	}
	units, problems := Discover([]string{dir})
	if len(problems) > 0 || len(units) != 2 || units[0].Paths[0] != filepath.Join(dir, "session-state/s1/events.jsonl") || units[1].Paths[0] != filepath.Join(dir, "history-session-state/s2.json") {
		t.Errorf("Discover = %+v, %v; want s1's events.jsonl and s2's legacy file", units, problems)
	}
}

// TestParseSubagent: a subagent's events (envelope agentId) are steps of
// an actor under the root, spawned by the task call, in that call's turn;
// its task prompt opens no turn of the root.
func TestParseSubagent(t *testing.T) {
	log := strings.Join([]string{
		`{"type":"user.message","data":{"content":"explore the repo","agentMode":"autopilot"},"id":"u1","timestamp":"2026-05-01T10:00:00.000Z"}`,
		`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"t1","name":"task","arguments":{"prompt":"list the packages"}}]},"id":"a1","timestamp":"2026-05-01T10:00:01.000Z"}`,
		`{"type":"subagent.started","data":{"toolCallId":"t1","agentName":"explore","agentDisplayName":"Explore"},"agentId":"sa1","id":"s1","timestamp":"2026-05-01T10:00:02.000Z"}`,
		`{"type":"user.message","data":{"content":"list the packages"},"agentId":"sa1","id":"u2","timestamp":"2026-05-01T10:00:02.000Z"}`,
		`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"v1","name":"view","arguments":{"path":"/w/go.mod"}}]},"agentId":"sa1","id":"a2","timestamp":"2026-05-01T10:00:03.000Z"}`,
		`{"type":"tool.execution_complete","data":{"toolCallId":"v1","success":true,"result":{"content":"module x"}},"agentId":"sa1","id":"c1","timestamp":"2026-05-01T10:00:04.000Z"}`,
		`{"type":"tool.execution_complete","data":{"toolCallId":"t1","success":true,"result":{"content":"one package"}},"id":"c2","timestamp":"2026-05-01T10:00:05.000Z"}`,
	}, "\n") + "\n"
	s := Parse(adapters.Unit{ID: "sub"}, []adapters.File{{Path: "/c/session-state/sub/events.jsonl", Body: strings.NewReader(log)}})
	if len(s.Problems) > 0 || len(s.Batches) != 1 {
		t.Fatalf("Parse = %v, %d batches", s.Problems, len(s.Batches))
	}
	b := s.Batches[0]
	var sub *store.Actor
	for i := range b.Actors {
		if b.Actors[i].ID == "sa1" {
			sub = &b.Actors[i]
		}
	}
	if sub == nil || sub.ParentID != adapters.RootActor || sub.Label != "Explore" {
		t.Fatalf("actors = %+v; want sa1 (Explore) under the root", b.Actors)
	}
	if len(b.Turns) != 1 {
		t.Errorf("turns = %+v; want only the user's", b.Turns)
	}
	for _, st := range b.Steps {
		wantActor := adapters.RootActor
		if st.ID == "u2" || st.ID == "v1" {
			wantActor = "sa1"
		}
		if st.ActorID != wantActor || st.TurnID != b.Turns[0].ID {
			t.Errorf("step %s: actor %s, turn %s; want %s in %s", st.ID, st.ActorID, st.TurnID, wantActor, b.Turns[0].ID)
		}
	}
}

// TestParseShutdowns: a resumed session's last shutdown gives its usage
// (Copilot accumulates it over the session) and its end; a resume after a
// shutdown reopens it.
func TestParseShutdowns(t *testing.T) {
	shutdown := func(id, at string, in int) string {
		return `{"type":"session.shutdown","data":{"modelMetrics":{"m":{"requests":{"count":2,"cost":1},"usage":{"inputTokens":` + strconv.Itoa(in) + `,"outputTokens":5}}}},"id":"` + id + `","timestamp":"` + at + `"}`
	}
	lines := []string{
		`{"type":"user.message","data":{"content":"hi"},"id":"u1","timestamp":"2026-05-01T10:00:00.000Z"}`,
		shutdown("x1", "2026-05-01T10:05:00.000Z", 100),
		`{"type":"session.resume","data":{"eventCount":2},"id":"r1","timestamp":"2026-05-02T10:00:00.000Z"}`,
		`{"type":"user.message","data":{"content":"again"},"id":"u2","timestamp":"2026-05-02T10:00:01.000Z"}`,
	}
	s := parseText(strings.Join(lines, "\n") + "\n")
	if h := s.Batches[0].Session; h.EndedAt != "" || s.Usage == nil || s.Usage.Input != 100 {
		t.Errorf("after a resume: ended %q, usage %+v; want open, input 100", h.EndedAt, s.Usage)
	}
	lines = append(lines, shutdown("x2", "2026-05-02T10:09:00.000Z", 250))
	s = parseText(strings.Join(lines, "\n") + "\n")
	if h := s.Batches[0].Session; h.EndedAt != "2026-05-02T10:09:00.000Z" || s.Usage.Input != 250 || s.Usage.APIRequests != 2 {
		t.Errorf("after the second shutdown: ended %q, usage %+v; want its time, input 250, 2 requests", h.EndedAt, s.Usage)
	}
}

// TestShutdownInputWithoutCache: a shutdown's inputTokens include its
// cached tokens, so the usage's input is what is left; an input smaller
// than the cached tokens cannot include them and is kept as it is.
func TestShutdownInputWithoutCache(t *testing.T) {
	for _, c := range []struct{ input, read, write, want int64 }{
		{186809, 151738, 0, 186809 - 151738},
		{1000, 600, 100, 1000 - 600 - 100},
		{700, 600, 100, 0},
		{50, 600, 0, 50},
		{40, 0, 0, 40},
	} {
		line := fmt.Sprintf(`{"type":"session.shutdown","data":{"modelMetrics":{"m":{"requests":{"count":1},`+
			`"usage":{"inputTokens":%d,"outputTokens":5,"cacheReadTokens":%d,"cacheWriteTokens":%d}}}},"id":"x1","timestamp":"2026-05-01T10:05:00.000Z"}`,
			c.input, c.read, c.write)
		s := parseText(`{"type":"user.message","data":{"content":"hi"},"id":"u1","timestamp":"2026-05-01T10:00:00.000Z"}` + "\n" + line + "\n")
		if u := s.Usage; u == nil || u.Input != c.want || u.CacheRead != c.read || u.CacheCreation != c.write || u.Output != 5 {
			t.Errorf("input %d, cache read %d, written %d: usage %+v; want input %d and the cache's as reported", c.input, c.read, c.write, u, c.want)
		}
	}
}

// TestIsSessionFile: capture follows the files Discover reads, not the
// other files of a session folder.
func TestIsSessionFile(t *testing.T) {
	for path, want := range map[string]bool{
		"/h/.copilot/session-state/s1/events.jsonl":            true,
		"/h/.copilot/session-state/s1.jsonl":                   true,
		"/h/.copilot/history-session-state/s1.json":            true,
		"/h/.copilot/session-state/s1/vscode.metadata.json":    false,
		"/h/.copilot/session-state/s1/checkpoints/index.jsonl": false,
		"/h/.copilot/session-state/s1/workspace.yaml":          false,
	} {
		if got := IsSessionFile(path); got != want {
			t.Errorf("IsSessionFile(%s) = %v; want %v", path, got, want)
		}
	}
}

// TestSessionErrorFails: a session.error in the real sample's log (as
// Copilot's event schema writes one: errorType, message, statusCode) is a
// failed system step of the turn it came in, its errorType the error's
// type and its message the text; one without a type is of type error. The
// rest of the sample reads as before.
func TestSessionErrorFails(t *testing.T) {
	path := filepath.Join("testdata", "session-state", "96ef38f0-9d09-45c3-8124-6448c36090ed", "events.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	var prompt int // the first user.message
	for i, l := range lines {
		if strings.Contains(l, `"type":"user.message"`) {
			prompt = i
			break
		}
	}
	errs := []struct{ id, errorType, message string }{
		{"err-1", "rate_limit", "Sorry, you have been rate-limited. Please wait a moment before trying again."},
		{"err-2", "", "stream disconnected before completion"},
	}
	var added []string
	for _, e := range errs {
		d, _ := json.Marshal(map[string]any{"errorType": e.errorType, "message": e.message, "statusCode": 429})
		if e.errorType == "" {
			d, _ = json.Marshal(map[string]any{"message": e.message})
		}
		added = append(added, fmt.Sprintf(`{"type":"session.error","data":%s,"id":%q,"timestamp":"2026-04-23T17:09:00.000Z","parentId":null}`+"\n", d, e.id))
	}
	text := strings.Join(lines[:prompt+1], "") + strings.Join(added, "") + strings.Join(lines[prompt+1:], "")
	before, after := parseText(string(raw)), parseText(text)
	byID := map[string]store.Step{}
	failed := map[string]int{}
	for name, s := range map[string]*adapters.Session{"before": before, "after": after} {
		for _, b := range s.Batches {
			for _, st := range b.Steps {
				if name == "after" {
					byID[st.ID] = st
				}
				if st.Outcome == adapters.OutcomeFailed {
					failed[name]++
				}
			}
		}
	}
	if failed["after"] != failed["before"]+len(errs) {
		t.Errorf("failed steps %d with the errors, %d without; want %d more", failed["after"], failed["before"], len(errs))
	}
	firstTurn := after.Batches[0].Turns[0].ID
	for _, e := range errs {
		st, ok := byID[e.id]
		want := e.errorType
		if want == "" {
			want = "error"
		}
		if !ok || st.Type != store.TypeMessage || st.Payload.Role != "system" || st.Payload.Text == nil || *st.Payload.Text != e.message ||
			st.Outcome != adapters.OutcomeFailed || st.Error == nil || st.Error.Type != want || st.Error.Message != e.message || st.TurnID != firstTurn {
			t.Errorf("session.error %s = %+v; want a failed system message of turn %s, error %s: %s", e.id, st, firstTurn, want, e.message)
		}
	}
}
