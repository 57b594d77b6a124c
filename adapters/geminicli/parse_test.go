package geminicli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

const header = `{"sessionId":"s1","projectHash":"0000","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}` + "\n"

func parseText(t *testing.T, name, text string) *adapters.Session {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chats", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sessions := adapterstest.ParseRoots(t, Agent, path)
	if len(sessions) != 1 {
		t.Fatalf("Parse(%s) = %d sessions; want 1", name, len(sessions))
	}
	for _, s := range sessions {
		return s
	}
	return nil
}

func steps(s *adapters.Session) []store.Step {
	var out []store.Step
	for _, b := range s.Batches {
		out = append(out, b.Steps...)
	}
	return out
}

// TestGrowingMessage: Gemini writes a message again as it grows (here with
// its tool call added); the last record wins, in the place of the first,
// and its tokens count once.
func TestGrowingMessage(t *testing.T) {
	s := parseText(t, "session-a.jsonl", header+
		`{"id":"u","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":[{"text":"read a"}]}`+"\n"+
		`{"id":"g","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","tokens":{"input":10,"output":2,"cached":4}}`+"\n"+
		`{"$set":{"lastUpdated":"2026-05-01T10:00:02.000Z"}}`+"\n"+
		`{"id":"g","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"done","tokens":{"input":10,"output":2,"cached":4},"toolCalls":[{"id":"c","name":"read_file","args":{"file_path":"a","offset":10,"limit":5},"status":"success"}]}`+"\n"+
		`{"id":"u2","timestamp":"2026-05-01T10:00:03.000Z","type":"user","content":"next"}`+"\n")
	var got []string
	for _, st := range steps(s) {
		got = append(got, st.ID+":"+st.Type)
	}
	if want := "u:message g:message c:read u2:message"; strings.Join(got, " ") != want {
		t.Errorf("steps = %v; want %s", got, want)
	}
	if r := steps(s)[2].Payload.Range; r == nil || *r != [2]int64{11, 15} {
		t.Errorf("read range = %v; want [11 15] (offset 10, limit 5)", r)
	}
	if u := s.Usage; u == nil || *u != (adapters.Usage{APIRequests: 1, Input: 6, Output: 2, CacheRead: 4}) {
		t.Errorf("Usage = %+v; want the reply's tokens once", u)
	}
}

// TestBrokenLines: a line that is not JSON is reported with its path and
// line and skipped, the rest is read; a last line without its newline is a
// record still being written, not a problem.
func TestBrokenLines(t *testing.T) {
	s := parseText(t, "session-b.jsonl", header+
		`{"id":"u","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":"hi"}`+"\n"+
		"{not json\n"+
		`[1,2]`+"\n"+
		`{"id":"g","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"hello"}`+"\n"+
		`{"id":"g2","type":"gem`)
	var problems []string
	for _, p := range s.Problems {
		problems = append(problems, filepath.Base(p.Path)+":"+p.String()[strings.LastIndex(p.String(), ".jsonl:")+7:])
	}
	want := []string{"session-b.jsonl:3: invalid JSON: invalid character 'n' looking for beginning of object key string", "session-b.jsonl:4: not a JSON object"}
	if strings.Join(problems, "|") != strings.Join(want, "|") {
		t.Errorf("problems = %q; want %q", problems, want)
	}
	if len(s.Incomplete) != 1 {
		t.Errorf("Incomplete = %v; want the file, its last line is not whole", s.Incomplete)
	}
	if n := len(steps(s)); n != 2 {
		t.Errorf("%d steps; want the 2 whole messages", n)
	}
}

// TestBrokenDocumentKeepsStore: a legacy session file that is no longer
// valid JSON is reported with its path and line, and the session stored
// from it before stays as it was.
func TestBrokenDocumentKeepsStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(t.TempDir(), "chats", "session-c.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	good := "{\n  \"sessionId\": \"s3\",\n  \"startTime\": \"2026-05-01T10:00:00.000Z\",\n  \"messages\": [\n" +
		`    {"id":"u","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":"hi"}` + "\n  ]\n}\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	im := &adapters.Importer{Store: st}
	if sum, err := im.Run(ctx, Agent, []string{path}); err != nil || sum.New != 1 {
		t.Fatalf("import = %+v, %v; want 1 new session", sum, err)
	}
	before, err := st.Detail(ctx, "s3", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(good, `"content":"hi"}`, `"content":"hi", oops}`, 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := im.Run(ctx, Agent, []string{path})
	if err != nil || len(sum.Problems) != 1 || sum.Problems[0].Path != path || sum.Problems[0].Line != 5 {
		t.Fatalf("import of the broken file = %+v, %v; want one problem at %s:5", sum, err, path)
	}
	after, err := st.Detail(ctx, "s3", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Steps) != len(before.Steps) || *after.Steps[0].Payload.Text != "hi" {
		t.Errorf("stored steps changed to %+v; want them as they were", after.Steps)
	}
}

// TestWorkspaceUnknown: with no path in a folder whose hash is the
// project hash, the workspace is unknown rather than a guess.
func TestWorkspaceUnknown(t *testing.T) {
	s := parseText(t, "session-d.jsonl", header+
		`{"id":"g","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"c","name":"write_file","args":{"file_path":"/tmp/x/a.txt","content":"a"},"status":"success"}]}`+"\n")
	if root := s.Batches[0].Session.Workspace.Root; root != "unknown" {
		t.Errorf("workspace = %q; want unknown", root)
	}
}

// TestRepeatedCallIDs: Gemini's short call ids may repeat in a session;
// each call is still a step of its own, under a unique id.
func TestRepeatedCallIDs(t *testing.T) {
	call := `{"id":"c","name":"glob","args":{"pattern":"*"},"status":"success"}`
	s := parseText(t, "session-e.jsonl", header+
		`{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[`+call+`,`+call+`]}`+"\n"+
		`{"id":"g2","timestamp":"2026-05-01T10:00:03.000Z","type":"gemini","content":"","toolCalls":[`+call+`]}`+"\n")
	var got []string
	for _, st := range steps(s) {
		got = append(got, st.ID)
	}
	if want := "c c#2 c#3"; strings.Join(got, " ") != want {
		t.Errorf("step ids = %v; want %s", got, want)
	}
}

// TestProjectRootFile: newer Gemini CLI versions name a project's folder by
// a slug and write its path in .project_root beside chats/; that path is
// the workspace, and the file is one of the session's.
func TestProjectRootFile(t *testing.T) {
	slug := filepath.Join(t.TempDir(), "tmp", "weather-cli")
	if err := os.MkdirAll(filepath.Join(slug, "chats"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(slug, ".project_root"), []byte("/home/dev/src/weather-cli\n"), 0o644)
	path := filepath.Join(slug, "chats", "session-f.jsonl")
	os.WriteFile(path, []byte(header+`{"id":"u","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":"hi"}`+"\n"), 0o644)
	sessions := adapterstest.ParseRoots(t, Agent, filepath.Dir(slug))
	s := sessions["s1"]
	if s == nil || len(s.Batches) == 0 {
		t.Fatalf("sessions = %v; want s1", sessions)
	}
	if root := s.Batches[0].Session.Workspace.Root; root != "/home/dev/src/weather-cli" {
		t.Errorf("workspace = %q; want the path in .project_root", root)
	}
	if files := s.Batches[0].Segments[0].SourceFiles; len(files) != 2 {
		t.Errorf("source files = %v; want the session file and .project_root", files)
	}
}

// TestErrorMessagesFail: an error the CLI showed is a failed system step
// with its text as the error, api_error when the CLI wrote a failed request
// to the model as it formats one ("[API Error: …]"); info and warning
// messages stay ok.
func TestErrorMessagesFail(t *testing.T) {
	records := []struct{ id, typ, content string }{
		{"i", "info", "Request cancelled."},
		{"w", "warning", "Loop detection has been disabled for this session."},
		{"a", "error", "[API Error: You exceeded your current quota, please check your plan and billing details.]"},
		{"e", "error", "Failed to update the model about exiting Plan Mode."},
	}
	text := header + `{"id":"u","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":[{"text":"go"}]}` + "\n"
	for i, r := range records {
		text += fmt.Sprintf(`{"id":%q,"timestamp":"2026-05-01T10:00:0%d.000Z","type":%q,"content":%q}`, r.id, i+2, r.typ, r.content) + "\n"
	}
	got := map[string]store.Step{}
	for _, st := range steps(parseText(t, "session-e.jsonl", text)) {
		got[st.ID] = st
	}
	for _, r := range records {
		st, ok := got[r.id]
		if !ok || st.Type != store.TypeMessage || st.Payload.Role != "system" || st.Payload.Text == nil || *st.Payload.Text != r.content {
			t.Errorf("%s record %s = %+v; want a system message of its text", r.typ, r.id, st)
			continue
		}
		switch {
		case r.typ != "error":
			if st.Outcome != adapters.OutcomeOK || st.Error != nil {
				t.Errorf("%s record: outcome %s, error %+v; want ok", r.typ, st.Outcome, st.Error)
			}
		default:
			want := "error"
			if strings.HasPrefix(r.content, "[API Error") {
				want = "api_error"
			}
			if st.Outcome != adapters.OutcomeFailed || st.Error == nil || st.Error.Type != want || st.Error.Message != r.content {
				t.Errorf("error record %s: outcome %s, error %+v; want failed, %s: %s", r.id, st.Outcome, st.Error, want, r.content)
			}
		}
	}
}
