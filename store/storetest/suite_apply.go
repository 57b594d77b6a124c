package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// A first push creates the session; the same batch again is an update
// that changes nothing: no stamp moves and no change is reported.
func testApplyCreateAndResend(t *testing.T, s store.Backend) {
	b := smallBatch("a")
	res := mustApply(t, s, b)
	want := store.ApplyResult{SessionID: "a", Created: true, Steps: len(b.Steps), Turns: len(b.Turns),
		Segments: len(b.Segments), Actors: len(b.Actors), Changed: true, StepsWritten: len(b.Steps)}
	if res != want {
		t.Errorf("Apply(new a) = %+v; want %+v", res, want)
	}
	before := takeSnapshot(t, s)
	res = mustApply(t, s, smallBatch("a"))
	want.Created, want.Changed, want.StepsWritten = false, false, 0
	if res != want {
		t.Errorf("Apply(a again) = %+v; want %+v", res, want)
	}
	assertUnchanged(t, s, before)
	if cs, latest := mustChanges(t, s, before.Stamp); len(cs) != 0 || latest != before.Stamp {
		t.Errorf("ChangesSince(before the re-send) = %v, %d; want none, %d", cs, latest, before.Stamp)
	}

	// A steps-only update counts only what it carries.
	more := stepsBatch("a", stepOf("a", 6, store.TypeRead))
	res = mustApply(t, s, more)
	want = store.ApplyResult{SessionID: "a", Steps: 1, Changed: true, StepsWritten: 1}
	if res != want {
		t.Errorf("Apply(a, one more step) = %+v; want %+v", res, want)
	}
	if got := mustDetail(t, s, "a").Summary.Steps; got != len(b.Steps)+1 {
		t.Errorf("Detail(a).Summary.Steps = %d; want %d", got, len(b.Steps)+1)
	}
}

// Records are upserted by id (segments by index): a re-send with other
// values replaces the record and adds none; a reference-only step turns
// inline when a later write carries its content.
func testApplyUpsert(t *testing.T, s store.Backend) {
	first := smallBatch("a")
	first.Steps[1].ContentStatus = store.ContentReferenceOnly
	p := &first.Steps[1].Payload
	p.Command, p.Stdout, p.Stderr, p.ExitCode, p.Cwd, p.OutputRef = nil, nil, nil, nil, nil, genPtr("otel:tool_result/1")
	mustApply(t, s, first)

	second := smallBatch("a")
	second.Segments[0].StartReason = "resume"
	second.Actors[0].Label = "renamed"
	second.Turns[0].Mode = "plan"
	second.Steps[1].Payload.Stdout = genPtr("ok\t0.5s")
	second.Steps[3].Payload.Range = &[2]int64{5, 9}
	second.Steps = second.Steps[1:4] // an update needs only what changed
	res := mustApply(t, s, second)
	if res.Created || !res.Changed || res.StepsWritten != 2 {
		t.Errorf("Apply(a rewritten) = %+v; want an update of 2 steps (the seq-3 step is as stored)", res)
	}
	d := mustDetail(t, s, "a")
	wantSteps := mergeSteps(first, second)
	if !sameJSON(t, d.Steps, wantSteps) {
		t.Errorf("Detail(a).Steps =\n%s\nwant\n%s", mustJSON(t, d.Steps), mustJSON(t, wantSteps))
	}
	if len(d.Segments) != 1 || d.Segments[0].StartReason != "resume" {
		t.Errorf("Detail(a).Segments = %+v; want segment 0 rewritten to resume", d.Segments)
	}
	if len(d.Actors) != 1 || d.Actors[0].Label != "renamed" {
		t.Errorf("Detail(a).Actors = %+v; want the root relabelled", d.Actors)
	}
	if len(d.Turns) != 1 || d.Turns[0].Mode != "plan" {
		t.Errorf("Detail(a).Turns = %+v; want turn t1 in plan mode", d.Turns)
	}
	if got, want := d.Summary, wantSummary(wantSteps, 1, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Summary = %+v; want %+v (no reference-only step left)", got, want)
	}
}

// Every record reads back as it was pushed: steps in seq order, turns in
// position order with their step ids, whatever order the batch held.
func testApplyReadsBack(t *testing.T, s store.Backend) {
	b := smallBatch("a")
	b.Session.EndedAt = tEnd
	b.Segments = append(b.Segments, store.Segment{Index: 3, StartReason: "resume", StartedAt: "2026-01-02T10:40:00.25Z",
		EndedAt: "2026-01-02T10:50:00+01:00", SourceFiles: []string{"/log/1.jsonl", "/log/2.jsonl"}})
	b.Actors = append(b.Actors, store.Actor{ID: "a-sub", ParentID: rootID("a"), Type: "subagent", Label: "researcher"})
	t2 := turnOf("a", "t2", 2)
	t2.PromptID, t2.SegmentIndex, t2.ActorID, t2.Mode = "prompt-7", 3, "a-sub", ""
	b.Turns = append(b.Turns, t2)

	cmd := stepOf("a", 6, store.TypeCommand)
	cmd.Payload = store.Payload{Command: genPtr(""), Stdout: genPtr(""), Stderr: genPtr(""), Cwd: genPtr(""), OutputRef: genPtr(""), ExitCode: genPtr(int64(-9))}
	cmd.Error = &store.StepError{Type: "killed", Message: ""}
	cmd.Channels, cmd.Decision, cmd.Outcome = []string{"hook", "otel"}, "rejected", "failed"
	cmd.Flags = []store.Flag{{Kind: "rejected", Severity: "info", Reason: "user said no"}, {Kind: "dangerous_command", Severity: "danger", Reason: "rm -rf"}}
	edit := stepOf("a", 7, store.TypeEdit)
	edit.TurnID, edit.ActorID, edit.SegmentIndex, edit.Outcome, edit.Error = "a-t2", "a-sub", 3, "ok", nil
	edit.Payload = store.Payload{Path: "/tmp/ws/new.go", OldString: genPtr(""),
		NewString:       genPtr("package main\n\n<tag> & \"quotes\" \u2028 ünïcode 🙂\n"),
		StructuredPatch: []byte(`[{"oldStart":1,"oldLines":0,"newStart":1,"newLines":3,"lines":["+package main","+","+<tag>"]}]`),
		IsFullWrite:     genPtr(true), LandedInFinalState: genPtr(false)}
	read := stepOf("a", 8, store.TypeRead)
	read.Payload, read.Channels = store.Payload{Path: "/tmp/ws/README.md"}, []string{}
	msg := stepOf("a", 9, store.TypeMessage)
	msg.TurnID, msg.ActorID, msg.SegmentIndex = "a-t2", "a-sub", 3
	msg.ContentStatus, msg.Payload = store.ContentReferenceOnly, store.Payload{Role: "assistant", Text: genPtr(""), TextRef: genPtr("transcript:42")}
	other := stepOf("a", 10, store.TypeOther)
	other.Payload = store.Payload{ToolName: "mcp__db__query", Raw: []byte(`{"query":"SELECT 1","n":1.5,"nested":{"z":[null,true,"<b>"],"a":{}}}`)}
	b.Steps = append(b.Steps, cmd, edit, read, msg, other)
	slices.Reverse(b.Steps) // pushed out of seq order
	mustApply(t, s, b)

	d := mustDetail(t, s, "a")
	wantSteps := mergeSteps(b)
	if len(d.Steps) != len(wantSteps) {
		t.Fatalf("Detail(a) has %d steps; want %d", len(d.Steps), len(wantSteps))
	}
	for i := range wantSteps {
		if !sameJSON(t, d.Steps[i], wantSteps[i]) {
			t.Errorf("Detail(a).Steps[%d] =\n%s\nwant\n%s", i, mustJSON(t, d.Steps[i]), mustJSON(t, wantSteps[i]))
		}
	}
	if !reflect.DeepEqual(d.Segments, b.Segments) {
		t.Errorf("Detail(a).Segments = %+v; want %+v", d.Segments, b.Segments)
	}
	gotActors := slices.Clone(d.Actors)
	slices.SortFunc(gotActors, func(x, y store.Actor) int { return strings.Compare(x.ID, y.ID) })
	if !reflect.DeepEqual(gotActors, b.Actors) {
		t.Errorf("Detail(a).Actors = %+v; want %+v", d.Actors, b.Actors)
	}
	wantTurns := mergeTurns(b)
	for i := range wantTurns {
		wantTurns[i].StepIDs = []string{}
		for _, st := range wantSteps {
			if st.TurnID == wantTurns[i].ID {
				wantTurns[i].StepIDs = append(wantTurns[i].StepIDs, st.ID)
			}
		}
	}
	if !reflect.DeepEqual(d.Turns, wantTurns) {
		t.Errorf("Detail(a).Turns = %+v; want %+v", d.Turns, wantTurns)
	}
	want := store.Session{ID: "a", Agent: b.Session.Agent, Workspace: b.Session.Workspace,
		StartedAt: tStart, EndedAt: tEnd, Source: "push:" + b.Session.Agent.Kind, Metrics: b.Session.Metrics,
		OwnerID: store.OwnerLocal, CapturedOn: d.CapturedOn, UpdatedAt: d.UpdatedAt}
	if !reflect.DeepEqual(d.Session, want) {
		t.Errorf("Detail(a).Session = %+v; want %+v", d.Session, want)
	}
	if d.CapturedOn == "" {
		t.Errorf("Detail(a).CapturedOn is empty; want the machine that stored it")
	}
}

// The session header: required fields are written on every push,
// optional ones only when the batch carries them, so a steps-only push
// never resets cost or reopens an ended session.
func testApplyHeader(t *testing.T, s store.Backend) {
	full := func(sid string) *store.Batch {
		b := smallBatch(sid)
		b.Session.EndedAt, b.Session.Source = tEnd, "import:files"
		b.Session.Agent.FormatVersion, b.Session.Workspace.Repo = "3", "github.com/x/y"
		return b
	}
	asSession := func(h store.SessionHeader) store.Session {
		return store.Session{ID: h.ID, Agent: h.Agent, Workspace: h.Workspace, StartedAt: h.StartedAt,
			EndedAt: h.EndedAt, Source: h.Source, Metrics: h.Metrics}
	}
	tests := []struct {
		name   string
		pushes func(sid string) []*store.Batch
		want   func(sid string) store.Session
	}{
		{"steps-only push keeps end, cost, source, format and repo",
			func(sid string) []*store.Batch {
				return []*store.Batch{full(sid), stepsBatch(sid, stepOf(sid, 6, store.TypeRead))}
			},
			func(sid string) store.Session { return asSession(full(sid).Session) }},
		{"source defaults to push:kind and stays with its first kind",
			func(sid string) []*store.Batch {
				b := stepsBatch(sid)
				b.Session.Agent.Kind = "otheragent"
				return []*store.Batch{smallBatch(sid), b}
			},
			func(sid string) store.Session {
				h := header(sid)
				h.Source, h.Agent.Kind = "push:"+h.Agent.Kind, "otheragent"
				return asSession(h)
			}},
		{"required fields written on every push",
			func(sid string) []*store.Batch {
				b := stepsBatch(sid)
				b.Session.Agent.Version, b.Session.Workspace.Root, b.Session.StartedAt = "2.0.0", "/elsewhere", "2026-01-02T09:00:00+02:00"
				return []*store.Batch{full(sid), b}
			},
			func(sid string) store.Session {
				h := full(sid).Session
				h.Agent.Version, h.Workspace.Root, h.StartedAt = "2.0.0", "/elsewhere", "2026-01-02T09:00:00+02:00"
				return asSession(h)
			}},
		{"optional fields replaced when included",
			func(sid string) []*store.Batch {
				b := stepsBatch(sid)
				b.Session.EndedAt, b.Session.Source = "2026-01-02T12:00:00Z", "capture"
				b.Session.Agent.FormatVersion, b.Session.Workspace.Repo = "4", "github.com/x/z"
				b.Session.Metrics = &store.Metrics{}
				return []*store.Batch{full(sid), b}
			},
			func(sid string) store.Session {
				h := full(sid).Session
				h.EndedAt, h.Source, h.Agent.FormatVersion, h.Workspace.Repo, h.Metrics = "2026-01-02T12:00:00Z", "capture", "4", "github.com/x/z", &store.Metrics{}
				return asSession(h)
			}},
		{"ended session is not reopened",
			func(sid string) []*store.Batch { return []*store.Batch{full(sid), smallBatch(sid)} },
			func(sid string) store.Session {
				h := full(sid).Session
				h.Metrics = smallBatch(sid).Session.Metrics
				return asSession(h)
			}},
		{"no metrics: not recorded",
			func(sid string) []*store.Batch { return []*store.Batch{stepsBatch(sid)} },
			func(sid string) store.Session {
				h := header(sid)
				h.Metrics, h.Source = nil, "push:"+h.Agent.Kind
				return asSession(h)
			}},
	}
	for i, tc := range tests {
		sid := fmt.Sprintf("h%d", i)
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range tc.pushes(sid) {
				mustApply(t, s, b)
			}
			got := mustDetail(t, s, sid).Session
			want := tc.want(sid)
			want.OwnerID, want.CapturedOn, want.UpdatedAt = store.OwnerLocal, got.CapturedOn, got.UpdatedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Detail(%s).Session =\n%+v\nwant\n%+v", sid, got, want)
			}
		})
	}
}

// The pusher's user (Batch.Owner) is the session's owner; a push without
// one is the local user's.
func testApplyOwner(t *testing.T, s store.Backend) {
	alice := smallBatch("a")
	alice.Owner = "alice"
	mustApply(t, s, alice)
	mustApply(t, s, smallBatch("l"))
	want := map[string]string{"a": "alice", "l": store.OwnerLocal}
	for _, o := range mustList(t, s, store.ListQuery{}).Sessions {
		if o.OwnerID != want[o.ID] {
			t.Errorf("List: session %s owner %q; want %q", o.ID, o.OwnerID, want[o.ID])
		}
	}
	for id, owner := range want {
		if got := mustDetail(t, s, id).OwnerID; got != owner {
			t.Errorf("Detail(%s).OwnerID = %q; want %q", id, got, owner)
		}
	}
}

// A refused batch names its problems with the spec's error and leaves
// the store exactly as it was.
func testApplyRefused(t *testing.T, s store.Backend) {
	mustApply(t, s, smallBatch("a"))
	mustApply(t, s, smallBatch("b"))
	mustApply(t, s, smallBatch("gone"))
	if err := s.Delete(bg, "gone"); err != nil {
		t.Fatalf("Delete(gone) = %v", err)
	}
	// Each bad batch also carries a good new step and a header change, so
	// a partial write would show.
	bad := func(edit func(b *store.Batch)) func() *store.Batch {
		return func() *store.Batch {
			b := smallBatch("a")
			b.Session.Agent.Version = "9.9.9"
			b.Steps = append(b.Steps, stepOf("a", 6, store.TypeRead))
			edit(b)
			return b
		}
	}
	type check func(t *testing.T, err error, b *store.Batch)
	invalid := func(ps ...store.Problem) check {
		return func(t *testing.T, err error, b *store.Batch) {
			e := wantErr[*store.InvalidError](t, "Apply", err)
			if e.Error() != "invalid batch" {
				t.Errorf("InvalidError.Error() = %q; want %q", e.Error(), "invalid batch")
			}
			if !reflect.DeepEqual(e.Problems, ps) {
				t.Errorf("problems = %+v; want %+v", e.Problems, ps)
			}
		}
	}
	reference := func(paths ...string) check {
		return func(t *testing.T, err error, b *store.Batch) {
			e := wantErr[*store.ReferenceError](t, "Apply", err)
			if e.Error() != "batch references unknown or mismatched records" {
				t.Errorf("ReferenceError.Error() = %q", e.Error())
			}
			var got []string
			for _, p := range e.Problems {
				got = append(got, p.Path)
			}
			if !reflect.DeepEqual(got, paths) {
				t.Errorf("problem paths = %v (%+v); want %v", got, e.Problems, paths)
			}
		}
	}
	tests := []struct {
		name  string
		batch func() *store.Batch
		check check
	}{
		{"wrong schema version", bad(func(b *store.Batch) { b.SchemaVersion = "1.1" }),
			invalid(store.Problem{Path: "schema_version", Message: `expected "1.2", got "1.1"`})},
		{"timestamp without zone", bad(func(b *store.Batch) { b.Steps[2].At = "2026-01-02 10:00:02" }),
			invalid(store.Problem{Path: "steps[2].at", Message: "expected ISO 8601 date-time with timezone"})},
		{"required field missing", bad(func(b *store.Batch) { b.Steps[3].Payload.Path = "" }),
			invalid(store.Problem{Path: "steps[3].payload.path", Message: "must not be empty"})},
		{"closed enum", bad(func(b *store.Batch) { b.Steps[0].ContentStatus = "partial" }),
			invalid(store.Problem{Path: "steps[0].content_status", Message: `expected one of inline, reference_only, got "partial"`})},
		{"negative seq", bad(func(b *store.Batch) { b.Steps[4].Seq = -1 }),
			invalid(store.Problem{Path: "steps[4].seq", Message: "expected integer >= 0, got -1"})},
		{"turn of another session", bad(func(b *store.Batch) { b.Turns[0].SessionID = "b" }), reference("turns[0].session_id")},
		{"step in an unknown turn", bad(func(b *store.Batch) { b.Steps[5].TurnID = "no-such-turn" }), reference("steps[5].turn_id")},
		{"actor with an unknown parent", bad(func(b *store.Batch) {
			b.Actors = append(b.Actors, store.Actor{ID: "a-sub", ParentID: "nobody", Type: "subagent"})
		}), reference("actors[1].parent_id")},
		{"step id repeated", bad(func(b *store.Batch) { b.Steps[5].ID = b.Steps[0].ID }), reference("steps[5].id")},
		{"seq held by another step", func() *store.Batch {
			st := stepOf("a", 2, store.TypeRead)
			st.ID = "a-newcomer"
			return stepsBatch("a", stepOf("a", 6, store.TypeRead), st)
		}, func(t *testing.T, err error, b *store.Batch) {
			e := wantErr[*store.ConflictError](t, "Apply", err)
			if e.Error() != "step seq already taken in this session" {
				t.Errorf("ConflictError.Error() = %q", e.Error())
			}
			if e.Problem.Path != "steps[1].seq" || !strings.Contains(e.Problem.Message, stepID("a", 2)) {
				t.Errorf("ConflictError.Problem = %+v; want path steps[1].seq naming %s", e.Problem, stepID("a", 2))
			}
		}},
		{"too many steps", bad(func(b *store.Batch) {
			for i := range store.MaxItems + 1 - len(b.Steps) {
				b.Steps = append(b.Steps, stepOf("a", int64(100+i), store.TypeRead))
			}
		}), func(t *testing.T, err error, b *store.Batch) {
			e := wantErr[*store.TooManyError](t, "Apply", err)
			want := fmt.Sprintf("too many steps in one batch: %d > %d; split it into several pushes", len(b.Steps), store.MaxItems)
			if e.Kind != "steps" || e.Count != len(b.Steps) || e.Error() != want {
				t.Errorf("TooManyError = %+v (%q); want steps, %d, %q", e, e.Error(), len(b.Steps), want)
			}
		}},
		{"deleted session", func() *store.Batch { return smallBatch("gone") }, func(t *testing.T, err error, b *store.Batch) {
			e := wantErr[*store.DeletedError](t, "Apply", err)
			if want := "session gone was deleted; it is not recorded again"; e.Error() != want {
				t.Errorf("DeletedError.Error() = %q; want %q", e.Error(), want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := takeSnapshot(t, s)
			b := tc.batch()
			_, err := s.Apply(bg, b)
			tc.check(t, err, b)
			assertUnchanged(t, s, before)
		})
	}
}
