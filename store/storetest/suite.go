package storetest

// The behavioural suite of the store contract (store.Backend): one set of
// tests every backend passes, written from SPEC.md's rules and run only
// through the interface. Expected values are computed from the batches
// the tests push, never copied from a backend's output. The areas live in
// suite_*.go; this file holds Run, the small batches the tests edit, and
// the helpers they share.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentreview/service/store"
)

// Run runs the suite against the backend open returns. open gives each
// subtest a fresh, empty backend of its own and closes it when the
// subtest ends (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Backend)
	}{
		{"ApplyCreateAndResend", testApplyCreateAndResend},
		{"ApplyUpsert", testApplyUpsert},
		{"ApplyReadsBack", testApplyReadsBack},
		{"ApplyHeader", testApplyHeader},
		{"ApplyOwner", testApplyOwner},
		{"ApplyRefused", testApplyRefused},
		{"List", testList},
		{"ListPages", testListPages},
		{"Detail", testDetail},
		{"DetailAcrossBlocks", testDetailAcrossBlocks},
		{"DetailQuery", testDetailQuery},
		{"DetailStepWindow", testDetailStepWindow},
		{"DetailAroundTurn", testDetailAroundTurn},
		{"TurnSteps", testTurnSteps},
		{"FileChanges", testFileChanges},
		{"NextProblem", testNextProblem},
		{"Image", testImage},
		{"EndSession", testEndSession},
		{"Delete", testDelete},
		{"Stamps", testStamps},
		{"ConcurrentWrites", testConcurrentWrites},
		{"SearchFields", testSearchFields},
		{"SearchFilters", testSearchFilters},
		{"SearchHitNotes", testSearchHitNotes},
		{"SearchHitErrors", testSearchHitErrors},
		{"SearchPathOfCommands", testSearchPathOfCommands},
		{"SearchFiltersSnippet", testSearchFiltersSnippet},
		{"SearchJSONInAString", testSearchJSONInAString},
		{"SearchColouredOutput", testSearchColouredOutput},
		{"SearchRefused", testSearchRefused},
		{"SearchPages", testSearchPages},
		{"SearchOneSession", testSearchOneSession},
		{"SearchWithoutSpaces", testSearchWithoutSpaces},
		{"SearchAfterDelete", testSearchAfterDelete},
		{"Usage", testUsage},
		{"UsageFollowsWrites", testUsageFollowsWrites},
		{"UsageUnrecorded", testUsageUnrecorded},
		{"Verdict", testVerdict},
		{"Notes", testNotes},
		{"UnknownText", testUnknownText},
		{"Samples", testSamples},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, open(t))
		})
	}
}

// Times of the small batches.
const (
	tStart = "2026-01-02T10:00:00Z"
	tTurn  = "2026-01-02T10:00:01Z"
	tStep  = "2026-01-02T10:00:02Z"
	tEnd   = "2026-01-02T11:00:00Z"
)

// header is the session header of the small batches: all required
// fields and metrics, no optional strings.
func header(sid string) store.SessionHeader {
	return store.SessionHeader{
		ID:        sid,
		Agent:     store.Agent{Kind: "testagent", Version: "1.0.0"},
		Workspace: store.Workspace{Root: "/tmp/ws-" + sid},
		StartedAt: tStart,
		Metrics: &store.Metrics{CostUSD: 1.25, APIRequests: 3,
			Tokens: store.Tokens{Input: 100, Output: 50, CacheRead: 10, CacheCreation: 5}},
	}
}

func rootID(sid string) string { return sid + "-root" }

// turnOf builds turn sid-<name> at position index, in segment 0, by the root actor.
func turnOf(sid, name string, index int64) store.Turn {
	return store.Turn{ID: sid + "-" + name, SessionID: sid, SegmentIndex: 0, ActorID: rootID(sid),
		Index: index, Mode: "act", StartedAt: tTurn, StepIDs: []string{}}
}

func stepID(sid string, seq int64) string { return fmt.Sprintf("%s-s%d", sid, seq) }

// stepOf builds a valid inline step of type typ at seq, in turn sid-t1:
// a user prompt, a flagged command, a failed edit, a read or a WebFetch.
func stepOf(sid string, seq int64, typ string) store.Step {
	st := store.Step{ID: stepID(sid, seq), SessionID: sid, SegmentIndex: 0, TurnID: sid + "-t1",
		ActorID: rootID(sid), Seq: seq, At: tStep, Type: typ, Decision: "accepted", Outcome: "ok",
		ContentStatus: store.ContentInline, Channels: []string{"hook"}, Flags: []store.Flag{}}
	p := &st.Payload
	switch typ {
	case store.TypeMessage:
		st.Decision = "n/a"
		p.Role, p.Text = "user", genPtr("Fix the failing test\nin package store")
	case store.TypeCommand:
		p.Command, p.Stdout, p.Stderr, p.ExitCode, p.Cwd = genPtr("go test ./..."), genPtr("ok"), genPtr(""), genPtr(int64(0)), genPtr("/tmp/ws")
		st.Flags = []store.Flag{{Kind: "dangerous_command", Severity: "warn", Reason: "runs tests"}}
	case store.TypeEdit:
		st.Outcome = "failed"
		st.Error = &store.StepError{Type: "tool_error", Message: "old_string not found"}
		p.Path, p.OldString, p.NewString, p.IsFullWrite = "/tmp/ws/main.go", genPtr("a"), genPtr("b"), genPtr(false)
	case store.TypeRead:
		p.Path, p.Range = "/tmp/ws/main.go", &[2]int64{1, 20}
	case store.TypeOther:
		p.ToolName, p.Raw = "WebFetch", json.RawMessage(`{"url":"https://example.com"}`)
	}
	return st
}

// smallBatch is a valid batch for session sid: one segment, a root actor,
// turn sid-t1, and steps seq 1..5: message, command, edit, read, other.
func smallBatch(sid string) *store.Batch {
	return &store.Batch{
		SchemaVersion: store.SchemaVersion,
		Session:       header(sid),
		Segments:      []store.Segment{{Index: 0, StartReason: "start", StartedAt: tStart, SourceFiles: []string{}}},
		Actors:        []store.Actor{{ID: rootID(sid), Type: "root", Label: "main"}},
		Turns:         []store.Turn{turnOf(sid, "t1", 1)},
		Steps: []store.Step{stepOf(sid, 1, store.TypeMessage), stepOf(sid, 2, store.TypeCommand),
			stepOf(sid, 3, store.TypeEdit), stepOf(sid, 4, store.TypeRead), stepOf(sid, 5, store.TypeOther)},
	}
}

// stepsBatch is a steps-only push: a header without metrics, ended_at or
// source, and the given steps.
func stepsBatch(sid string, steps ...store.Step) *store.Batch {
	h := header(sid)
	h.Metrics = nil
	return &store.Batch{SchemaVersion: store.SchemaVersion, Session: h, Steps: steps}
}

var bg = context.Background()

func mustApply(t *testing.T, s store.Backend, b *store.Batch) store.ApplyResult {
	t.Helper()
	res, err := s.Apply(bg, b)
	if err != nil {
		t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
	}
	return res
}

func mustDetail(t *testing.T, s store.Backend, id string) store.SessionDetail {
	t.Helper()
	d, err := s.Detail(bg, id, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", id, err)
	}
	return d
}

func mustList(t *testing.T, s store.Backend, q store.ListQuery) store.SessionList {
	t.Helper()
	l, err := s.List(bg, q)
	if err != nil {
		t.Fatalf("List(%+v) = %v", q, err)
	}
	return l
}

func mustLatest(t *testing.T, s store.Backend) int64 {
	t.Helper()
	stamp, err := s.LatestStamp(bg)
	if err != nil {
		t.Fatalf("LatestStamp() = %v", err)
	}
	return stamp
}

func mustChanges(t *testing.T, s store.Backend, since int64) ([]store.Change, int64) {
	t.Helper()
	cs, latest, err := s.ChangesSince(bg, since)
	if err != nil {
		t.Fatalf("ChangesSince(%d) = %v", since, err)
	}
	return cs, latest
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T) = %v", v, err)
	}
	return string(b)
}

// sameJSON reports whether a and b encode to the same JSON value, object
// keys in any order: raw and structured_patch are stored as JSON, not as
// the writer's bytes.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(mustJSON(t, a)), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustJSON(t, b)), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// snapshot is everything the store shows of its sessions: the list, each
// session whole, and the change stamp.
type snapshot struct {
	List    string
	Details map[string]string
	Stamp   int64
}

func takeSnapshot(t *testing.T, s store.Backend) snapshot {
	t.Helper()
	l := mustList(t, s, store.ListQuery{})
	snap := snapshot{List: mustJSON(t, l), Details: map[string]string{}, Stamp: mustLatest(t, s)}
	for _, o := range l.Sessions {
		snap.Details[o.ID] = mustJSON(t, mustDetail(t, s, o.ID))
	}
	return snap
}

func assertUnchanged(t *testing.T, s store.Backend, before snapshot) {
	t.Helper()
	after := takeSnapshot(t, s)
	if after.Stamp != before.Stamp {
		t.Errorf("LatestStamp() = %d; want %d as before", after.Stamp, before.Stamp)
	}
	if after.List != before.List {
		t.Errorf("List() =\n%s\nwant as before\n%s", after.List, before.List)
	}
	for id, d := range before.Details {
		if after.Details[id] != d {
			t.Errorf("Detail(%s) =\n%s\nwant as before\n%s", id, after.Details[id], d)
		}
	}
	if len(after.Details) != len(before.Details) {
		t.Errorf("sessions = %d; want %d as before", len(after.Details), len(before.Details))
	}
}

// mergeSteps is the steps a session holds after the pushes: upserted by
// id, in seq order.
func mergeSteps(bs ...*store.Batch) []store.Step {
	byID := map[string]store.Step{}
	for _, b := range bs {
		for _, st := range b.Steps {
			byID[st.ID] = st
		}
	}
	out := make([]store.Step, 0, len(byID))
	for _, st := range byID {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b store.Step) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// mergeTurns is the turns a session holds after the pushes, upserted by
// id, in position order.
func mergeTurns(bs ...*store.Batch) []store.Turn {
	byID := map[string]store.Turn{}
	for _, b := range bs {
		for _, tn := range b.Turns {
			byID[tn.ID] = tn
		}
	}
	out := make([]store.Turn, 0, len(byID))
	for _, tn := range byID {
		out = append(out, tn)
	}
	slices.SortFunc(out, func(a, b store.Turn) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.StartedAt, b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// wantSummary is the summary the spec computes from a session's steps
// (in seq order), turn and segment counts. Its title is that of a
// session with a user prompt (not a subagent-only one).
func wantSummary(steps []store.Step, turns, segments int) store.Summary {
	sum := store.Summary{StepsByType: map[string]int{}, Turns: turns, Segments: segments}
	prompted := false // the title is the first line of the first user prompt
	for _, typ := range store.StepTypes {
		sum.StepsByType[typ] = 0
	}
	for _, st := range steps {
		sum.Steps++
		sum.StepsByType[st.Type]++
		if st.Outcome == "failed" {
			sum.Failed++
		}
		if st.ContentStatus == store.ContentReferenceOnly {
			sum.ReferenceOnly++
		}
		sum.Flags += len(st.Flags)
		sum.LastStepAt = st.At
		if !prompted && st.Type == store.TypeMessage && st.Payload.Role == "user" {
			prompted = true
			if st.Payload.Text != nil {
				sum.Title = firstLine(string([]rune(*st.Payload.Text)[:min(titleChars, utf8.RuneCountInString(*st.Payload.Text))]))
			}
		}
	}
	return sum
}

// titleChars is how much of the first prompt the title is taken from.
const titleChars = 1000

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// wantReport is the report of a session's steps (in seq order): files
// in order of their first step, created when that step writes the whole
// file; commands in order of their first run, with the distinct exit
// codes ascending; the tools of the other steps by their calls, most
// first, then by name; of the turns a read returned (read), those with
// failed or flagged steps, in the read's order.
func wantReport(steps []store.Step, read []store.Turn) store.Report {
	r := store.Report{Files: []store.FileTouched{}, Commands: []store.CommandRun{}, Tools: []store.ToolUse{}}
	files, commands, tools, turns := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	problems := make([]store.TurnProblems, len(read))
	for i, t := range read {
		turns[t.ID], problems[i].TurnID = i, t.ID
	}
	for _, st := range steps {
		failed := 0
		if st.Outcome == "failed" {
			failed = 1
		}
		if i, ok := turns[st.TurnID]; ok { // a turn of the read
			t := &problems[i]
			if failed == 1 {
				if t.Failed++; t.FirstFailedSeq == nil {
					t.FirstFailedSeq = new(st.Seq)
				}
			}
			if len(st.Flags) > 0 {
				if t.Flags += len(st.Flags); t.FirstFlaggedSeq == nil {
					t.FirstFlaggedSeq = new(st.Seq)
				}
			}
		}
		touch := func(path string, write, whole, command bool) {
			i, seen := files[path]
			if !seen {
				i = len(r.Files)
				files[path] = i
				r.Files = append(r.Files, store.FileTouched{Path: path})
			}
			f := &r.Files[i]
			switch {
			case !write:
				f.Read++
			case !seen && whole:
				f.Created++
			default:
				f.Edited++
			}
			f.Failed += failed
			if command {
				f.ByCommand++
			}
		}
		switch st.Type {
		case store.TypeEdit, store.TypeRead:
			touch(st.Payload.Path, st.Type == store.TypeEdit, st.Type == store.TypeEdit && *st.Payload.IsFullWrite, false)
		case store.TypeCommand:
			line := ""
			if st.Payload.Command != nil {
				line = *st.Payload.Command
			}
			// The files its line names (store.CommandFiles, which its own
			// test checks line by line) count as its edits and reads.
			cwd := ""
			if st.Payload.Cwd != nil {
				cwd = *st.Payload.Cwd
			}
			for _, f := range store.CommandFiles(line, cwd) {
				if !f.Removed { // a removal is Changes', not a step on the file
					touch(f.Path, f.Write, f.Whole, true)
				}
			}
			i, seen := commands[line]
			if !seen {
				i = len(r.Commands)
				commands[line] = i
				r.Commands = append(r.Commands, store.CommandRun{Command: line, FirstSeq: st.Seq, ExitCodes: []int64{}})
			}
			c := &r.Commands[i]
			c.Runs++
			c.Failed += failed
			if failed == 1 && c.FirstFailedSeq == nil {
				c.FirstFailedSeq = new(st.Seq)
			}
			if code := st.Payload.ExitCode; code != nil && !slices.Contains(c.ExitCodes, *code) {
				c.ExitCodes = append(c.ExitCodes, *code)
				slices.Sort(c.ExitCodes)
			}
			c.OutputNotInline = c.OutputNotInline || st.ContentStatus == store.ContentReferenceOnly || st.Payload.OutputRef != nil
		case store.TypeOther:
			i, seen := tools[st.Payload.ToolName]
			if !seen {
				i = len(r.Tools)
				tools[st.Payload.ToolName] = i
				r.Tools = append(r.Tools, store.ToolUse{Tool: st.Payload.ToolName})
			}
			r.Tools[i].Calls++
			r.Tools[i].Failed += failed
		}
	}
	r.Turns = slices.DeleteFunc(problems, func(t store.TurnProblems) bool { return t.Failed == 0 && t.Flags == 0 })
	slices.SortStableFunc(r.Tools, func(a, b store.ToolUse) int {
		if a.Calls != b.Calls {
			return b.Calls - a.Calls
		}
		return strings.Compare(a.Tool, b.Tool)
	})
	return r
}

// wantErr checks that err is of type E and returns it.
func wantErr[E error](t *testing.T, call string, err error) E {
	t.Helper()
	var e E
	if !errors.As(err, &e) {
		t.Fatalf("%s = %v; want a %T", call, err, e)
	}
	return e
}

func ids(os []store.SessionOverview) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, o.ID)
	}
	return out
}
