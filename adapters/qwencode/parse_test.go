package qwencode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// rec is one record line of session s1 at second sec, with the fields in
// rest (each starting with a comma).
func rec(uuid string, sec int, typ, rest string) string {
	ts := "2026-06-20T10:00:" + string(rune('0'+sec/10)) + string(rune('0'+sec%10)) + ".000Z"
	return `{"uuid":"` + uuid + `","parentUuid":null,"sessionId":"s1","timestamp":"` + ts + `","type":"` + typ +
		`","cwd":"/home/dev/proj","version":"0.18.1"` + rest + "}\n"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func prompt(uuid string, sec int, text string) string {
	return rec(uuid, sec, "user", `,"message":{"role":"user","parts":[{"text":`+quote(text)+`}]}`)
}

// reply is an assistant record of the given parts.
func reply(uuid string, sec int, parts ...string) string {
	return rec(uuid, sec, "assistant", `,"model":"qwen3-coder-plus","message":{"role":"model","parts":[`+strings.Join(parts, ",")+`]}`)
}

func text(s string) string    { return `{"text":` + quote(s) + `}` }
func thought(s string) string { return `{"text":` + quote(s) + `,"thought":true}` }

func fnCall(id, name, args string) string {
	return `{"functionCall":{"id":"` + id + `","name":"` + name + `","args":` + args + `}}`
}

// toolResultLine is a tool_result record for call id; extra are more
// toolCallResult fields (each starting with a comma).
func toolResultLine(uuid string, sec int, id, name, status, response, extra string) string {
	return rec(uuid, sec, "tool_result", `,"message":{"role":"user","parts":[{"functionResponse":{"id":"`+id+`","name":"`+name+`","response":`+response+`}}]},"toolCallResult":{"callId":"`+id+`","status":"`+status+`"`+extra+`}`)
}

// decision is a ui_telemetry tool_call event with a decision.
func decision(uuid string, sec int, name, args, d string) string {
	return rec(uuid, sec, "system", `,"subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.tool_call","function_name":"`+name+`","function_args":`+args+`,"decision":"`+d+`"}}`)
}

// parseText writes text as the recording chats/<name>.jsonl and parses it.
func parseText(t *testing.T, name, text string) *adapters.Session {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chats", name+".jsonl")
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
	s.Each(func(b *store.Batch) error { out = append(out, b.Steps...); return nil })
	return out
}

func stepsByID(t *testing.T, s *adapters.Session) map[string]store.Step {
	t.Helper()
	out := map[string]store.Step{}
	for _, st := range steps(s) {
		out[st.ID] = st
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestToolMappings: each tool maps to its step type with its arguments and
// result; a shell command's exit code comes from the "Exit Code: N" line
// Qwen Code writes in its output, and a non-zero one fails it.
func TestToolMappings(t *testing.T) {
	s := parseText(t, "s1", prompt("u1", 1, "do it")+
		reply("a1", 2,
			fnCall("sh", "run_shell_command", `{"command":"make test","directory":"/home/dev/proj/sub"}`),
			fnCall("rd", "read_file", `{"absolute_path":"/home/dev/proj/a.go","offset":10,"limit":5}`),
			fnCall("wr", "write_file", `{"file_path":"/home/dev/proj/b.go","content":"package b\n"}`),
			fnCall("rp", "replace", `{"file_path":"/home/dev/proj/c.go","old_string":"x := 1","new_string":"x := 2"}`),
			fnCall("ed", "edit", `{"file_path":"/home/dev/proj/d.go","old_string":"a","new_string":"b"}`),
			fnCall("wf", "web_fetch", `{"url":"https://example.com","prompt":"summarise"}`),
			fnCall("sh0", "run_shell_command", `{"command":"ls"}`))+
		toolResultLine("r1", 3, "sh", "run_shell_command", "success", `{"output":"Command: make test\nDirectory: sub\nOutput: FAIL\nError: (none)\nExit Code: 2\nSignal: (none)"}`, `,"resultDisplay":"FAIL"`)+
		toolResultLine("r2", 4, "rd", "read_file", "success", `{"output":"package a"}`, `,"resultDisplay":"Read lines 11-15"`)+
		toolResultLine("r3", 5, "wr", "write_file", "success", `{"output":"Created b.go"}`, `,"resultDisplay":{"fileDiff":"--- b.go\n+++ b.go\n@@ -0,0 +1 @@\n+package b\n","fileName":"b.go","originalContent":null,"newContent":"package b\n"}`)+
		toolResultLine("r4", 6, "rp", "replace", "success", `{"output":"ok"}`, "")+
		toolResultLine("r5", 7, "ed", "edit", "success", `{"output":"ok"}`, "")+
		toolResultLine("r6", 8, "wf", "web_fetch", "success", `{"output":"Example Domain"}`, `,"resultDisplay":"Content processed"`)+
		toolResultLine("r7", 9, "sh0", "run_shell_command", "success", `{"output":"Command: ls\nOutput: a.go\nExit Code: 0"}`, ""))
	got := stepsByID(t, s)
	sh := got["sh"]
	if sh.Type != store.TypeCommand || str(sh.Payload.Command) != "make test" || str(sh.Payload.Cwd) != "/home/dev/proj/sub" ||
		sh.Payload.ExitCode == nil || *sh.Payload.ExitCode != 2 || sh.Outcome != adapters.OutcomeFailed || sh.Error == nil || sh.Error.Type != "exit_code" ||
		!strings.Contains(str(sh.Payload.Stdout), "Output: FAIL") {
		t.Errorf("run_shell_command = %+v; want command make test in sub, exit 2, failed", sh)
	}
	if sh0 := got["sh0"]; sh0.Outcome != adapters.OutcomeOK || sh0.Payload.ExitCode == nil || *sh0.Payload.ExitCode != 0 || str(sh0.Payload.Cwd) != "/home/dev/proj" {
		t.Errorf("run_shell_command ls = %+v; want ok, exit 0, in the record's cwd", sh0)
	}
	if rd := got["rd"]; rd.Type != store.TypeRead || rd.Payload.Path != "/home/dev/proj/a.go" || rd.Payload.Range == nil || *rd.Payload.Range != [2]int64{11, 15} || rd.Outcome != adapters.OutcomeOK {
		t.Errorf("read_file = %+v; want a read of a.go, lines 11-15", rd)
	}
	wr := got["wr"]
	var patch string
	json.Unmarshal(wr.Payload.StructuredPatch, &patch)
	if wr.Type != store.TypeEdit || wr.Payload.IsFullWrite == nil || !*wr.Payload.IsFullWrite || str(wr.Payload.NewString) != "package b\n" || !strings.Contains(patch, "+package b") {
		t.Errorf("write_file = %+v; want a full write of b.go with its fileDiff", wr)
	}
	for _, id := range []string{"rp", "ed"} {
		e := got[id]
		if e.Type != store.TypeEdit || e.Payload.IsFullWrite == nil || *e.Payload.IsFullWrite || e.Payload.OldString == nil || e.Payload.NewString == nil || e.Outcome != adapters.OutcomeOK {
			t.Errorf("%s = %+v; want an edit with old and new strings", id, e)
		}
	}
	if rp := got["rp"]; str(rp.Payload.OldString) != "x := 1" || str(rp.Payload.NewString) != "x := 2" {
		t.Errorf("replace strings = %q, %q; want x := 1, x := 2", str(rp.Payload.OldString), str(rp.Payload.NewString))
	}
	wf := got["wf"]
	var raw struct {
		Input   map[string]string `json:"input"`
		Result  map[string]string `json:"result"`
		Display string            `json:"display"`
	}
	json.Unmarshal(wf.Payload.Raw, &raw)
	if wf.Type != store.TypeOther || wf.Payload.ToolName != "web_fetch" || raw.Input["url"] != "https://example.com" || raw.Result["output"] != "Example Domain" || raw.Display != "Content processed" {
		t.Errorf("web_fetch = %+v, raw %s; want other with input, result and display", wf, wf.Payload.Raw)
	}
}

// TestRefusals: a call the user cancelled and one the approval mode denied
// are rejected and did not run; a failed call keeps Qwen's errorType; the
// telemetry's decisions are the calls' decisions; a call with no result is
// unknown, and a result with no call is a step of its own.
func TestRefusals(t *testing.T) {
	wargs := `{"file_path":"/home/dev/proj/n.md","content":"x"}`
	s := parseText(t, "s1", prompt("u1", 1, "go")+
		reply("a1", 2, fnCall("w", "write_file", wargs), fnCall("rm", "run_shell_command", `{"command":"rm -rf build"}`),
			fnCall("g", "glob", `{"pattern":"*"}`), fnCall("r", "read_file", `{"absolute_path":"/home/dev/proj/a"}`),
			fnCall("r2", "read_file", `{"absolute_path":"/home/dev/proj/b"}`), fnCall("late", "glob", `{"pattern":"x"}`))+
		decision("t1", 3, "write_file", `{"content":"x","file_path":"/home/dev/proj/n.md"}`, "reject")+
		toolResultLine("r-w", 3, "w", "write_file", "cancelled", `{"error":"[Operation Cancelled] Reason: User did not allow tool call"}`, `,"resultDisplay":"User did not allow tool call"`)+
		toolResultLine("r-rm", 4, "rm", "run_shell_command", "error", `{"error":"not allowed in plan mode"}`, `,"error":{},"errorType":"execution_denied"`)+
		toolResultLine("r-g", 5, "g", "glob", "error", `{"error":"EACCES"}`, `,"resultDisplay":"Error: EACCES","error":{},"errorType":"glob_execution_error"`)+
		decision("t2", 6, "read_file", `{"absolute_path":"/home/dev/proj/a"}`, "accept")+
		decision("t3", 6, "read_file", `{"absolute_path":"/home/dev/proj/b"}`, "auto_accept")+
		toolResultLine("r-r2", 6, "r2", "read_file", "success", `{"output":"b"}`, "")+
		toolResultLine("r-r", 6, "r", "read_file", "success", `{"output":"a"}`, "")+
		toolResultLine("r-x", 7, "ghost", "web_search", "success", `{"output":"found"}`, ""))
	got := stepsByID(t, s)
	for id, want := range map[string]store.StepError{
		"w":  {Type: "rejected", Message: "[Operation Cancelled] Reason: User did not allow tool call"},
		"rm": {Type: "rejected", Message: "not allowed in plan mode"},
	} {
		st := got[id]
		if st.Decision != adapters.DecisionRejected || st.Outcome != adapters.OutcomeNotRun || st.Error == nil || *st.Error != want {
			t.Errorf("%s = %s/%s %+v; want rejected, not_run, %+v", id, st.Decision, st.Outcome, st.Error, want)
		}
	}
	if g := got["g"]; g.Outcome != adapters.OutcomeFailed || g.Error == nil || *g.Error != (store.StepError{Type: "glob_execution_error", Message: "EACCES"}) || g.Decision != adapters.DecisionUnknown {
		t.Errorf("glob = %s/%s %+v; want unknown, failed, glob_execution_error: EACCES", g.Decision, g.Outcome, g.Error)
	}
	if r := got["r"]; r.Decision != adapters.DecisionAccepted || r.Outcome != adapters.OutcomeOK {
		t.Errorf("read a = %s/%s; want accepted (telemetry accept), ok", r.Decision, r.Outcome)
	}
	if r := got["r2"]; r.Decision != adapters.DecisionAuto {
		t.Errorf("read b = %s; want auto (telemetry auto_accept, matched by arguments)", r.Decision)
	}
	if l := got["late"]; l.Outcome != adapters.OutcomeUnknown || l.Decision != adapters.DecisionUnknown {
		t.Errorf("call without result = %s/%s; want unknown/unknown", l.Decision, l.Outcome)
	}
	if x, ok := got["ghost"]; !ok || x.Type != store.TypeOther || x.Payload.ToolName != "web_search" || x.Outcome != adapters.OutcomeOK {
		t.Errorf("result without call = %+v (found %v); want an other step web_search, ok", x, ok)
	}
}

// TestThoughts: a reply's thought parts are one thinking message before its
// text; a reply of thoughts only has no assistant message; blank thoughts
// make none.
func TestThoughts(t *testing.T) {
	s := parseText(t, "s1", prompt("u1", 1, "why?")+
		reply("a1", 2, thought("First, "), thought("look."), text("Because "), text("it is."))+
		reply("a2", 3, thought("Only thinking."))+
		reply("a3", 4, thought("  "), text("Done.")))
	var got []string
	for _, st := range steps(s) {
		got = append(got, st.ID+"="+st.Payload.Role+":"+str(st.Payload.Text))
	}
	want := "u1=user:why? a1#thinking=thinking:First, look. a1=assistant:Because it is. a2#thinking=thinking:Only thinking. a3=assistant:Done."
	if strings.Join(got, " ") != want {
		t.Errorf("steps = %q; want %q", strings.Join(got, " "), want)
	}
}

// TestBrokenLines: a line that is not JSON is reported with its path and
// line and skipped; a last line without its newline is a record still
// being written, not a problem.
func TestBrokenLines(t *testing.T) {
	s := parseText(t, "s1", prompt("u1", 1, "hi")+
		"{not json\n"+
		"[1,2]\n"+
		reply("a1", 2, text("hello"))+
		`{"uuid":"a2","sessionId":"s1","type":"assis`)
	var problems []string
	for _, p := range s.Problems {
		problems = append(problems, filepath.Base(p.Path)+":"+p.String()[len(p.Path)+1:])
	}
	want := []string{"s1.jsonl:2: invalid JSON: invalid character 'n' looking for beginning of object key string", "s1.jsonl:3: not a JSON object"}
	if strings.Join(problems, "|") != strings.Join(want, "|") {
		t.Errorf("problems = %q; want %q", problems, want)
	}
	if len(s.Incomplete) != 1 {
		t.Errorf("Incomplete = %v; want the file, its last line is not whole", s.Incomplete)
	}
	if n := len(steps(s)); n != 2 {
		t.Errorf("%d steps; want the 2 whole records", n)
	}
}

// filler is n bytes of c, read without being held.
type filler struct {
	c byte
	n int
}

func (f *filler) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), f.n)
	for i := range p[:n] {
		p[i] = f.c
	}
	f.n -= n
	return n, nil
}

// TestLineOverMaxLine: a line longer than adapters.MaxLine (twice that,
// here) is reported with its line and skipped, the records around it are
// read, and reading it never holds more than about one MaxLine.
func TestLineOverMaxLine(t *testing.T) {
	body := io.MultiReader(strings.NewReader(prompt("u1", 1, "hi")), &filler{'x', 2 * adapters.MaxLine}, strings.NewReader("\n"+reply("a1", 2, text("hello"))))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := Parse(adapters.Unit{ID: "s1"}, []adapters.File{{Path: "/q/chats/s1.jsonl", Body: body}})
	runtime.ReadMemStats(&after)
	want := []adapters.Problem{{Path: "/q/chats/s1.jsonl", Line: 2, Message: adapters.ErrLineTooLong.Error()}}
	if len(s.Problems) != 1 || s.Problems[0] != want[0] {
		t.Errorf("problems = %v; want %v", s.Problems, want)
	}
	if n := len(steps(s)); n != 2 {
		t.Errorf("%d steps; want the records before and after the long line", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*adapters.MaxLine {
		t.Errorf("reading a %d MB line allocated %d MB; want at most %d MB", 2*adapters.MaxLine>>20, alloc>>20, 3*adapters.MaxLine>>20)
	}
}

// TestRegrowKeepsIDs imports a recording while Qwen Code writes it (a call
// waiting for its result, a last line cut short), then again once it grew:
// the steps stored first keep their ids and numbers, the call is completed
// and the new records follow.
func TestRegrowKeepsIDs(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(t.TempDir(), "projects", "-home-dev-proj", "chats", "s1.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	first := prompt("u1", 1, "test it") + reply("a1", 2, text("Running."), fnCall("c1", "run_shell_command", `{"command":"go test"}`))
	rest := toolResultLine("r1", 3, "c1", "run_shell_command", "success", `{"output":"ok\nExit Code: 0"}`, "") +
		prompt("u2", 4, "thanks") + reply("a2", 5, text("You're welcome."))
	if err := os.WriteFile(path, []byte(first+rest[:20]), 0o644); err != nil {
		t.Fatal(err)
	}
	im := &adapters.Importer{Store: st}
	if sum, err := im.Run(ctx, Agent, []string{path}); err != nil || sum.New != 1 || len(sum.Problems) > 0 {
		t.Fatalf("first import = %+v, %v; want 1 new session, no problem", sum, err)
	}
	before, err := st.Detail(ctx, "s1", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Steps) != 3 || before.Steps[2].ID != "c1" || before.Steps[2].Outcome != adapters.OutcomeUnknown {
		t.Fatalf("first import stored %+v; want u1, a1 and c1 waiting", before.Steps)
	}
	if err := os.WriteFile(path, []byte(first+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := im.Run(ctx, Agent, []string{path}); err != nil || sum.Updated != 1 {
		t.Fatalf("second import = %+v, %v; want the session updated", sum, err)
	}
	after, err := st.Detail(ctx, "s1", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range after.Steps {
		got = append(got, s.ID)
	}
	if strings.Join(got, " ") != "u1 a1 c1 u2 a2" {
		t.Fatalf("steps after growth = %v; want u1 a1 c1 u2 a2", got)
	}
	for i, s := range before.Steps {
		if after.Steps[i].ID != s.ID || after.Steps[i].Seq != s.Seq {
			t.Errorf("step %d = %s seq %d; was %s seq %d", i, after.Steps[i].ID, after.Steps[i].Seq, s.ID, s.Seq)
		}
	}
	if c := after.Steps[2]; c.Outcome != adapters.OutcomeOK || c.Payload.ExitCode == nil || *c.Payload.ExitCode != 0 {
		t.Errorf("c1 after its result = %s, exit %v; want ok, 0", c.Outcome, c.Payload.ExitCode)
	}
}

// TestTurnsAndSegments: a slash command opens a turn its prompt joins; a
// mid-turn message stays in the turn; a notification is a system message;
// a compression, a rewind and a new CLI version start segments; the
// approval mode recorded is the next turns' mode; a subagent's records are
// its actor's.
func TestTurnsAndSegments(t *testing.T) {
	s := parseText(t, "s1", prompt("u1", 1, "first")+
		reply("a1", 2, text("one"))+
		rec("m1", 3, "user", `,"subtype":"mid_turn_user_message","message":{"role":"user","parts":[{"text":"also this"}]},"systemPayload":{"displayText":"also this"}`)+
		rec("sc", 4, "system", `,"subtype":"slash_command","systemPayload":{"phase":"invocation","rawCommand":"/review","sentToModel":true}`)+
		prompt("u2", 5, "Review the code.")+
		rec("cp", 6, "system", `,"subtype":"chat_compression","systemPayload":{"info":{},"compressedHistory":[{"role":"user","parts":[{"text":"summary of it"}]}]}`)+
		rec("pm", 7, "system", `,"subtype":"session_approval_mode","systemPayload":{"mode":"plan"}`)+
		prompt("u3", 8, "third")+
		rec("rw", 9, "system", `,"subtype":"rewind","systemPayload":{"truncatedCount":2}`)+
		rec("n1", 10, "user", `,"subtype":"notification","message":{"role":"user","parts":[{"text":"bg done"}]},"systemPayload":{"displayText":"Background task done"}`)+
		strings.Replace(prompt("su", 11, "look around"), `"type":"user"`, `"type":"user","agentId":"explore-1","agentName":"Explore","isSidechain":true`, 1)+
		strings.Replace(reply("sa", 11, text("sub work")), `"type":"assistant"`, `"type":"assistant","agentId":"explore-1","agentName":"Explore","isSidechain":true`, 1)+
		strings.Replace(prompt("u4", 12, "fourth"), `"0.18.1"`, `"0.19.0"`, 1))
	var got []string
	for _, st := range steps(s) {
		got = append(got, st.ID+"@"+st.TurnID[len("turn-"):]+"/"+string(rune('0'+st.SegmentIndex))+"/"+st.ActorID+":"+st.Payload.Role)
	}
	want := "u1@u1/0/root:user a1@u1/0/root:assistant m1@u1/0/root:user sc@sc/0/root:user u2@sc/0/root:user " +
		"cp@sc/1/root:summary u3@u3/1/root:user n1@u3/2/root:system su@u3/2/agent-explore-1:task sa@u3/2/agent-explore-1:assistant u4@u4/3/root:user"
	if strings.Join(got, " ") != want {
		t.Errorf("steps =\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	b := s.Batches[0]
	var reasons, modes []string
	for _, g := range b.Segments {
		reasons = append(reasons, g.StartReason)
	}
	for _, tn := range b.Turns {
		modes = append(modes, tn.ID+"="+tn.Mode)
	}
	if strings.Join(reasons, " ") != "start compaction rewind resume" {
		t.Errorf("segments = %v; want start compaction rewind resume", reasons)
	}
	if strings.Join(modes, " ") != "turn-u1= turn-sc= turn-u3=plan turn-u4=plan" {
		t.Errorf("turn modes = %v; want plan from the approval mode record on", modes)
	}
	if v := b.Session.Agent.Version; v != "0.18.1" {
		t.Errorf("version = %q; want the first record's, 0.18.1", v)
	}
}

// TestDiscover: recordings in chats folders are found under a root, by the
// session id they hold; a file named outside a chats folder is taken when
// its first record is a Qwen Code record, and reported otherwise.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	chats := filepath.Join(dir, "projects", "-p", "chats")
	os.MkdirAll(chats, 0o755)
	os.WriteFile(filepath.Join(chats, "file-name.jsonl"), []byte(prompt("u1", 1, "hi")), 0o644)
	os.WriteFile(filepath.Join(chats, "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "projects", "-p", "other.jsonl"), []byte(prompt("u1", 1, "hi")), 0o644)
	named := filepath.Join(dir, "export.jsonl")
	os.WriteFile(named, []byte("\n"+strings.ReplaceAll(prompt("u1", 1, "hi"), `"s1"`, `"s2"`)), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"type":"response_item"}`+"\n"), 0o644)
	units, problems := Discover([]string{filepath.Join(dir, "projects"), named, bad})
	var got []string
	for _, u := range units {
		got = append(got, u.ID+"="+filepath.Base(u.Paths[0]))
	}
	if strings.Join(got, " ") != "s1=file-name.jsonl s2=export.jsonl" {
		t.Errorf("units = %v; want s1 (chats/file-name.jsonl) and s2 (the named file)", got)
	}
	if len(problems) != 1 || problems[0].Path != bad {
		t.Errorf("problems = %v; want one for %s", problems, bad)
	}
}

// TestRepeatedRecords: a record read again (a copy of the file beside it)
// makes no second step, and its tokens count once.
func TestRepeatedRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chats")
	os.MkdirAll(dir, 0o755)
	body := prompt("u1", 1, "hi") + strings.Replace(reply("a1", 2, text("hello")), `"model"`, `"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":7,"thoughtsTokenCount":3,"cachedContentTokenCount":40},"model"`, 1)
	os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(body), 0o644)
	os.WriteFile(filepath.Join(dir, "s1-copy.jsonl"), []byte(body), 0o644)
	sessions := adapterstest.ParseRoots(t, Agent, dir)
	s := sessions["s1"]
	if s == nil || len(sessions) != 1 {
		t.Fatalf("sessions = %v; want s1 only", sessions)
	}
	if n := len(steps(s)); n != 2 || s.Skipped["repeated record"] != 2 {
		t.Errorf("%d steps, skipped %v; want 2 steps and 2 repeated records", n, s.Skipped)
	}
	if u := s.Usage; u == nil || *u != (adapters.Usage{APIRequests: 1, Input: 60, Output: 7, CacheRead: 40}) {
		t.Errorf("Usage = %+v; want one response: input 100-40, output 7 without thoughts, cache read 40", u)
	}
}

// TestThoughtsCountedApart: a response's thoughts are output tokens. An
// OpenAI-compatible provider counts them among the candidates (the total is
// prompt and candidates); Gemini's API counts them apart (the total adds
// them), and then they are added to the output.
func TestThoughtsCountedApart(t *testing.T) {
	for _, c := range []struct {
		prompt, candidates, thoughts, total, want int64
	}{
		{100, 7, 3, 107, 7},  // among the candidates
		{100, 7, 3, 110, 10}, // apart
		{100, 7, 0, 107, 7},  // none
		{100, 7, 3, 0, 7},    // no total: as written
		{100, 7, 3, 111, 7},  // a total that fits neither: as written
	} {
		meta := fmt.Sprintf(`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d,"totalTokenCount":%d},"model"`,
			c.prompt, c.candidates, c.thoughts, c.total)
		dir := filepath.Join(t.TempDir(), "chats")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(prompt("u1", 1, "hi")+strings.Replace(reply("a1", 2, text("hello")), `"model"`, meta, 1)), 0o644)
		s := adapterstest.ParseRoots(t, Agent, dir)["s1"]
		if s == nil || s.Usage == nil || s.Usage.Output != c.want || s.Usage.Input != c.prompt {
			t.Errorf("%+v: usage %+v; want output %d", c, s.Usage, c.want)
		}
	}
}

// TestAPIErrorFails: an api_error telemetry event in the real sample's
// recording (as Qwen Code writes an ApiErrorEvent: error, error_type,
// status_code; some versions error_message) is a failed system step with
// its error, in the turn it came in; the api_response events stay
// skipped, and the rest of the sample reads as before.
func TestAPIErrorFails(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "samples", "qwen-code", "splitrail", "qwen_code.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	var first map[string]any // the first record, whose session and cwd the errors carry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	prompt := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"type":"user"`) })
	errs := []struct{ id, field, message string }{
		{"api-err-1", "error", "429 Throttling: Requests rate limit exceeded, please try again later."},
		{"api-err-2", "error_message", "Request failed with status 500"},
	}
	var added []string
	for _, e := range errs {
		ev := map[string]any{"event.name": "qwen-code.api_error", "event.timestamp": first["timestamp"], "model": "coder-model",
			e.field: e.message, "error_type": "RateLimitError", "status_code": 429, "duration_ms": 120, "prompt_id": "p#0"}
		r := map[string]any{"uuid": e.id, "parentUuid": nil, "sessionId": first["sessionId"], "timestamp": first["timestamp"],
			"type": "system", "subtype": "ui_telemetry", "cwd": first["cwd"], "version": first["version"], "systemPayload": map[string]any{"uiEvent": ev}}
		b, _ := json.Marshal(r)
		added = append(added, string(b)+"\n")
	}
	text := strings.Join(lines[:prompt+1], "") + strings.Join(added, "") + strings.Join(lines[prompt+1:], "")
	before, after := parseText(t, "before", string(raw)), parseText(t, "after", text)
	failed := func(s *adapters.Session) (n int) {
		for _, st := range steps(s) {
			if st.Outcome == adapters.OutcomeFailed {
				n++
			}
		}
		return n
	}
	if got, want := failed(after), failed(before)+len(errs); got != want {
		t.Errorf("%d failed steps with the errors; want %d", got, want)
	}
	byID := stepsByID(t, after)
	var promptID string
	for _, st := range steps(after) {
		if st.Payload.Role == "user" {
			promptID = st.TurnID
			break
		}
	}
	for _, e := range errs {
		var st store.Step
		for id, s := range byID {
			if strings.Contains(id, e.id) {
				st = s
			}
		}
		if st.Type != store.TypeMessage || st.Payload.Role != "system" || str(st.Payload.Text) != e.message || st.Outcome != adapters.OutcomeFailed ||
			st.Error == nil || st.Error.Type != "api_error" || st.Error.Message != e.message || st.TurnID != promptID {
			t.Errorf("api_error %s = %+v; want a failed system message %q of turn %s", e.id, st, e.message, promptID)
		}
	}
	if after.Skipped["ui_telemetry:api_response"] != before.Skipped["ui_telemetry:api_response"] {
		t.Errorf("api_response events skipped %d; want %d as before", after.Skipped["ui_telemetry:api_response"], before.Skipped["ui_telemetry:api_response"])
	}
}
