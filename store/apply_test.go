package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

func TestApplyCreate(t *testing.T) {
	s := mustOpen(t)
	got := mustApply(t, s, newBatch("a"))
	want := store.ApplyResult{SessionID: "a", Created: true, Steps: 5, Turns: 1, Segments: 1, Actors: 1, Changed: true, StepsWritten: 5}
	if got != want {
		t.Errorf("Apply(newBatch) = %+v; want %+v", got, want)
	}
	d := mustDetail(t, s, "a")
	if len(d.Steps) != 5 || len(d.Turns) != 1 || len(d.Segments) != 1 || len(d.Actors) != 1 {
		t.Errorf("Detail(a) has %d steps, %d turns, %d segments, %d actors; want 5, 1, 1, 1",
			len(d.Steps), len(d.Turns), len(d.Segments), len(d.Actors))
	}
	if d.OwnerID != store.OwnerLocal || d.CapturedOn == "" {
		t.Errorf("Detail(a) owner %q, captured on %q; want %q and this machine", d.OwnerID, d.CapturedOn, store.OwnerLocal)
	}
	if d.Verdict != nil {
		t.Errorf("Detail(a).Verdict = %+v; want none", d.Verdict)
	}
}

func TestApplyUpdate(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	got := mustApply(t, s, stepsBatch("a", step("a", 6, "read"), step("a", 7, "command")))
	want := store.ApplyResult{SessionID: "a", Created: false, Steps: 2, Changed: true, StepsWritten: 2}
	if got != want {
		t.Errorf("Apply(steps batch) = %+v; want %+v", got, want)
	}
	// The same batch again writes nothing and says so.
	got = mustApply(t, s, stepsBatch("a", step("a", 6, "read"), step("a", 7, "command")))
	if want := (store.ApplyResult{SessionID: "a", Steps: 2}); got != want {
		t.Errorf("Apply(same steps batch) = %+v; want %+v", got, want)
	}
	if d := mustDetail(t, s, "a"); len(d.Steps) != 7 {
		t.Errorf("Detail(a) has %d steps; want 7", len(d.Steps))
	}
}

func TestApplyIdenticalResend(t *testing.T) {
	for name, batch := range map[string]obj{
		"whole batch": newBatch("a"),
		"header only": {"schema_version": "1.2", "session": header("a")},
		"steps only":  stepsBatch("a", step("a", 2, "command")),
	} {
		t.Run(name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, newBatch("a"))
			mustApply(t, s, batch)
			before := snapshot(t, s)
			stamp := mustLatest(t, s)
			updated := mustDetail(t, s, "a").UpdatedAt

			got := mustApply(t, s, batch)
			want := store.ApplyResult{SessionID: "a", Created: false, Changed: false,
				Steps: len(mustParse(t, batch).Steps), Turns: len(mustParse(t, batch).Turns),
				Segments: len(mustParse(t, batch).Segments), Actors: len(mustParse(t, batch).Actors)}
			if got != want {
				t.Errorf("Apply(same batch) = %+v; want %+v", got, want)
			}
			if u := mustDetail(t, s, "a").UpdatedAt; u != updated {
				t.Errorf("Detail(a).UpdatedAt = %s after a re-send; want %s", u, updated)
			}
			if cs, latest := mustChanges(t, s, stamp); len(cs) != 0 || latest != stamp {
				t.Errorf("ChangesSince(%d) = %+v, %d; want nothing new", stamp, cs, latest)
			}
			assertUnchanged(t, s, before)
		})
	}
}

// TestApplySessionHeader follows SPEC §4 rule 4: kind, version, root and
// start are written on every push; the optional fields only when included.
func TestApplySessionHeader(t *testing.T) {
	full := func() obj {
		b := newBatch("a")
		h := b["session"].(obj)
		h["ended_at"] = tEnd
		h["source"] = "import:files"
		h["agent"].(obj)["format_version"] = "3"
		h["workspace"].(obj)["repo"] = "github.com/x/y"
		return b
	}
	fullWant := store.Session{
		ID:        "a",
		Agent:     store.Agent{Kind: "testagent", Version: "1.0.0", FormatVersion: "3"},
		Workspace: store.Workspace{Root: "/tmp/ws-a", Repo: "github.com/x/y"},
		StartedAt: tStart, EndedAt: tEnd, Source: "import:files",
		Metrics: &store.Metrics{CostUSD: 1.25, APIRequests: 3, Tokens: store.Tokens{Input: 100, Output: 50, CacheRead: 10, CacheCreation: 5}},
	}
	tests := []struct {
		name   string
		pushes []obj
		want   func(*store.Session)
	}{
		{"first push without source", []obj{newBatch("a")}, func(s *store.Session) {
			*s = fullWant
			s.Agent.FormatVersion, s.Workspace.Repo, s.EndedAt, s.Source = "", "", "", "push:testagent"
		}},
		{"first push with everything", []obj{full()}, func(*store.Session) {}},
		{"steps-only push keeps end, cost, source, format and repo", []obj{full(), stepsBatch("a", step("a", 6, "read"))}, func(*store.Session) {}},
		{"required fields written on every push", []obj{full(), func() obj {
			b := stepsBatch("a")
			set(b, "session.agent.kind", "otheragent")
			set(b, "session.agent.version", "2.0.0")
			set(b, "session.workspace.root", "/elsewhere")
			set(b, "session.started_at", "2026-01-02T09:00:00+02:00")
			return b
		}()}, func(s *store.Session) {
			s.Agent.Kind, s.Agent.Version, s.Workspace.Root, s.StartedAt = "otheragent", "2.0.0", "/elsewhere", "2026-01-02T09:00:00+02:00"
		}},
		{"default source stays with its first kind", []obj{newBatch("a"), func() obj {
			b := stepsBatch("a")
			set(b, "session.agent.kind", "otheragent")
			return b
		}()}, func(s *store.Session) {
			*s = fullWant
			s.Agent.Kind = "otheragent"
			s.Agent.FormatVersion, s.Workspace.Repo, s.EndedAt, s.Source = "", "", "", "push:testagent"
		}},
		{"optional fields replaced when included", []obj{full(), func() obj {
			b := stepsBatch("a")
			set(b, "session.ended_at", "2026-01-02T12:00:00Z")
			set(b, "session.source", "capture")
			set(b, "session.agent.format_version", "4")
			set(b, "session.workspace.repo", "github.com/x/z")
			set(b, "session.metrics", obj{"cost_usd": 0, "api_requests": 0,
				"tokens": obj{"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0}})
			return b
		}()}, func(s *store.Session) {
			s.EndedAt, s.Source, s.Agent.FormatVersion, s.Workspace.Repo = "2026-01-02T12:00:00Z", "capture", "4", "github.com/x/z"
			s.Metrics = &store.Metrics{}
		}},
		{"ended session is not reopened", []obj{full(), newBatch("a")}, func(s *store.Session) {}},
		{"cost is never reset", []obj{newBatch("a"), stepsBatch("a"), stepsBatch("a", step("a", 9, "message"))}, func(s *store.Session) {
			*s = fullWant
			s.Agent.FormatVersion, s.Workspace.Repo, s.EndedAt, s.Source = "", "", "", "push:testagent"
		}},
		{"metrics arrive later", []obj{stepsBatch("a"), newBatch("a")}, func(s *store.Session) {
			*s = fullWant
			s.Agent.FormatVersion, s.Workspace.Repo, s.EndedAt, s.Source = "", "", "", "push:testagent"
		}},
		{"no metrics: not recorded", []obj{stepsBatch("a")}, func(s *store.Session) {
			*s = fullWant
			s.Agent.FormatVersion, s.Workspace.Repo, s.EndedAt, s.Source, s.Metrics = "", "", "", "push:testagent", nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			for _, p := range tc.pushes {
				mustApply(t, s, p)
			}
			want := fullWant
			tc.want(&want)
			got := mustDetail(t, s, "a").Session
			want.OwnerID, want.CapturedOn, want.UpdatedAt = got.OwnerID, got.CapturedOn, got.UpdatedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Detail(a).Session =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// Records are upserted by id (segments by index): a re-send with other
// values replaces the record and adds none.
func TestApplyUpsert(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	b := newBatch("a")
	set(b, "segments[0].ended_at", tEnd)
	set(b, "segments[0].source_files", arr{"/log/a.jsonl"})
	set(b, "segments[0].start_reason", "resume")
	set(b, "actors[0].label", "renamed")
	set(b, "turns[0].mode", "plan")
	set(b, "turns[0].prompt_id", "p1")
	set(b, "steps[1].outcome", "failed")
	set(b, "steps[1].payload.exit_code", 2)
	set(b, "steps[1].flags", arr{})
	set(b, "steps[3].payload.range", arr{5, 9})
	res := mustApply(t, s, b)
	if res.Created || !res.Changed {
		t.Errorf("Apply(changed batch) = %+v; want Created false, Changed true", res)
	}
	want := mustParse(t, b)
	d := mustDetail(t, s, "a")
	if !reflect.DeepEqual(d.Segments, want.Segments) {
		t.Errorf("Detail(a).Segments = %+v; want %+v", d.Segments, want.Segments)
	}
	if !reflect.DeepEqual(d.Actors, want.Actors) {
		t.Errorf("Detail(a).Actors = %+v; want %+v", d.Actors, want.Actors)
	}
	wantTurn := want.Turns[0]
	wantTurn.StepIDs = []string{"a-s1", "a-s2", "a-s3", "a-s4", "a-s5"}
	if len(d.Turns) != 1 || !reflect.DeepEqual(d.Turns[0], wantTurn) {
		t.Errorf("Detail(a).Turns = %+v; want [%+v]", d.Turns, wantTurn)
	}
	if !reflect.DeepEqual(d.Steps, want.Steps) {
		t.Errorf("Detail(a).Steps =\n%+v\nwant\n%+v", d.Steps, want.Steps)
	}

	// A second segment is added by a new index.
	b2 := stepsBatch("a")
	b2["segments"] = arr{obj{"index": 1, "start_reason": "resume", "started_at": tEnd, "source_files": arr{}}}
	mustApply(t, s, b2)
	if d := mustDetail(t, s, "a"); len(d.Segments) != 2 || d.Segments[1].Index != 1 {
		t.Errorf("Detail(a).Segments = %+v; want indexes 0 and 1", d.Segments)
	}
}

func TestApplyRewriteReferenceOnlyInline(t *testing.T) {
	s := mustOpen(t)
	b := newBatch("a")
	set(b, "steps[1].content_status", "reference_only")
	set(b, "steps[1].payload", obj{"output_ref": "otel:span/42", "exit_code": 1})
	set(b, "steps[0].content_status", "reference_only")
	set(b, "steps[0].payload", obj{"role": "user", "text_ref": "transcript:line/3"})
	mustApply(t, s, b)
	d := mustDetail(t, s, "a")
	if d.Summary.ReferenceOnly != 2 {
		t.Errorf("Detail(a).Summary.ReferenceOnly = %d; want 2", d.Summary.ReferenceOnly)
	}
	stamp := mustLatest(t, s)

	inline := stepsBatch("a", step("a", 1, "message"), step("a", 2, "command"))
	res := mustApply(t, s, inline)
	if !res.Changed {
		t.Errorf("Apply(inline rewrite) = %+v; want Changed", res)
	}
	d = mustDetail(t, s, "a")
	want := mustParse(t, inline).Steps
	if !reflect.DeepEqual(d.Steps[:2], want) {
		t.Errorf("Detail(a).Steps[:2] =\n%+v\nwant\n%+v", d.Steps[:2], want)
	}
	if d.Summary.ReferenceOnly != 0 || d.Summary.Steps != 5 {
		t.Errorf("Detail(a).Summary = %+v; want 5 steps, none reference-only", d.Summary)
	}
	if d.Summary.Title != "Fix the failing test" {
		t.Errorf("Detail(a).Summary.Title = %q; want the inline prompt", d.Summary.Title)
	}
	if cs, _ := mustChanges(t, s, stamp); len(cs) != 1 || cs[0].SessionID != "a" {
		t.Errorf("ChangesSince(before rewrite) = %+v; want one change of a", cs)
	}
}

// References resolve against the batch and what is already stored.
func TestApplyReferencesToStored(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	b := stepsBatch("a", step("a", 6, "read"))
	b["actors"] = arr{obj{"id": "a-sub", "parent_id": "a-root", "type": "subagent"}}
	b["turns"] = arr{func() obj { tr := turn("a", "t2", 2); tr["actor_id"] = "a-sub"; return tr }()}
	st := step("a", 7, "message")
	st["turn_id"], st["actor_id"] = "a-t2", "a-sub"
	b["steps"] = append(b["steps"].(arr), st)
	mustApply(t, s, b)
	d := mustDetail(t, s, "a")
	if len(d.Turns) != 2 || !reflect.DeepEqual(d.Turns[1].StepIDs, []string{"a-s7"}) {
		t.Errorf("Detail(a).Turns = %+v; want t2 with step a-s7", d.Turns)
	}
	if len(d.Actors) != 2 || d.Actors[1].ParentID != "a-root" {
		t.Errorf("Detail(a).Actors = %+v; want a-sub under a-root", d.Actors)
	}
}

func TestApplyReferenceErrors(t *testing.T) {
	tests := []struct {
		name   string
		stored bool // session a is stored first
		batch  func() obj
		want   []problem
	}{
		{"unknown segment", false, func() obj {
			b := newBatch("a")
			set(b, "turns[0].segment_index", 7)
			set(b, "steps[2].segment_index", 7)
			return b
		}, []problem{
			{"turns[0].segment_index", "no segment 7 in this session"},
			{"steps[2].segment_index", "no segment 7 in this session"},
		}},
		{"unknown actor", false, func() obj {
			b := newBatch("a")
			set(b, "turns[0].actor_id", "ghost")
			set(b, "steps[4].actor_id", "ghost")
			return b
		}, []problem{
			{"turns[0].actor_id", "no actor ghost in this session"},
			{"steps[4].actor_id", "no actor ghost in this session"},
		}},
		{"unknown turn", false, func() obj {
			b := newBatch("a")
			set(b, "steps[3].turn_id", "a-t9")
			return b
		}, []problem{{"steps[3].turn_id", "no turn a-t9 in this session"}}},
		{"unknown parent", false, func() obj {
			b := newBatch("a")
			b["actors"] = append(b["actors"].(arr), obj{"id": "a-sub", "parent_id": "a-nobody", "type": "subagent"})
			return b
		}, []problem{{"actors[1].parent_id", "no actor a-nobody in this session"}}},
		{"turn of another session", false, func() obj {
			b := newBatch("a")
			set(b, "turns[0].session_id", "b")
			return b
		}, []problem{{"turns[0].session_id", "must equal session.id a, got b"}}},
		{"step of another session", false, func() obj {
			b := newBatch("a")
			set(b, "steps[1].session_id", "b")
			return b
		}, []problem{{"steps[1].session_id", "must equal session.id a, got b"}}},
		{"segment index repeated", false, func() obj {
			b := newBatch("a")
			b["segments"] = arr{segment(0), segment(0)}
			return b
		}, []problem{{"segments[1].index", "segment index 0 repeats in this batch"}}},
		{"actor id repeated", false, func() obj {
			b := newBatch("a")
			b["actors"] = arr{rootActor("a"), rootActor("a")}
			return b
		}, []problem{{"actors[1].id", "actor id a-root repeats in this batch"}}},
		{"turn id repeated", false, func() obj {
			b := newBatch("a")
			b["turns"] = arr{turn("a", "t1", 1), turn("a", "t1", 2)}
			return b
		}, []problem{{"turns[1].id", "turn id a-t1 repeats in this batch"}}},
		{"step id repeated", false, func() obj {
			b := newBatch("a")
			set(b, "steps[4].id", "a-s1")
			return b
		}, []problem{{"steps[4].id", "step id a-s1 repeats in this batch"}}},
		{"step seq repeated", false, func() obj {
			b := newBatch("a")
			set(b, "steps[4].seq", 1)
			return b
		}, []problem{{"steps[4].seq", "seq 1 repeats in this batch"}}},
		{"stored session: unknown turn", true, func() obj {
			st := step("a", 6, "read")
			st["turn_id"] = "a-t2"
			return stepsBatch("a", st)
		}, []problem{{"steps[0].turn_id", "no turn a-t2 in this session"}}},
		{"stored session: unknown segment and actor", true, func() obj {
			st := step("a", 6, "read")
			st["segment_index"], st["actor_id"] = 1, "a-sub"
			return stepsBatch("a", st)
		}, []problem{
			{"steps[0].segment_index", "no segment 1 in this session"},
			{"steps[0].actor_id", "no actor a-sub in this session"},
		}},
		{"records of another session", true, func() obj {
			// Session b's records are stored, but not for session c.
			st := step("c", 1, "read")
			st["turn_id"], st["actor_id"] = "b-t1", "b-root"
			b := stepsBatch("c", st)
			return b
		}, []problem{
			{"steps[0].segment_index", "no segment 0 in this session"},
			{"steps[0].turn_id", "no turn b-t1 in this session"},
			{"steps[0].actor_id", "no actor b-root in this session"},
		}},
		{"several problems together", false, func() obj {
			b := newBatch("a")
			set(b, "steps[0].session_id", "x")
			set(b, "steps[1].turn_id", "nope")
			set(b, "steps[2].seq", 2)
			return b
		}, []problem{
			{"steps[0].session_id", "must equal session.id a, got x"},
			{"steps[1].turn_id", "no turn nope in this session"},
			{"steps[2].seq", "seq 2 repeats in this batch"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, newBatch("b"))
			if tc.stored {
				mustApply(t, s, newBatch("a"))
			}
			before := snapshot(t, s)
			err := applyErr(t, s, tc.batch())
			var re *store.ReferenceError
			if !errors.As(err, &re) {
				t.Fatalf("Apply(batch) = %v; want *ReferenceError", err)
			}
			if !reflect.DeepEqual(re.Problems, tc.want) {
				t.Errorf("Apply(batch) problems = %+v; want %+v", re.Problems, tc.want)
			}
			if !strings.Contains(err.Error(), "batch references unknown or mismatched records") {
				t.Errorf("Apply(batch) = %q; want the reference error text", err)
			}
			assertUnchanged(t, s, before)
		})
	}
}

func TestApplySeqConflict(t *testing.T) {
	tests := []struct {
		name  string
		batch func() obj
		want  problem
	}{
		{"new step on a taken seq", func() obj {
			st := step("a", 2, "read")
			st["id"] = "a-new"
			return stepsBatch("a", step("a", 6, "read"), st)
		}, problem{"steps[1].seq", "seq 2 is held by step a-s2"}},
		{"stored step moved onto a taken seq", func() obj {
			st := step("a", 1, "message")
			st["seq"] = 4
			return stepsBatch("a", st)
		}, problem{"steps[0].seq", "seq 4 is held by step a-s4"}},
		{"whole batch with one conflict", func() obj {
			b := newBatch("a")
			set(b, "steps[4].id", "a-other")
			return b
		}, problem{"steps[4].seq", "seq 5 is held by step a-s5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, newBatch("a"))
			before := snapshot(t, s)
			err := applyErr(t, s, tc.batch())
			var ce *store.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Apply(batch) = %v; want *ConflictError", err)
			}
			if ce.Problem != tc.want {
				t.Errorf("Apply(batch) conflict = %+v; want %+v", ce.Problem, tc.want)
			}
			if !strings.Contains(err.Error(), "step seq already taken in this session") {
				t.Errorf("Apply(batch) = %q; want the conflict text", err)
			}
			assertUnchanged(t, s, before)
		})
	}

	t.Run("same id and seq updates", func(t *testing.T) {
		s := mustOpen(t)
		mustApply(t, s, newBatch("a"))
		st := step("a", 2, "command")
		st["outcome"] = "failed"
		mustApply(t, s, stepsBatch("a", st))
		if got := mustDetail(t, s, "a").Steps[1]; got.ID != "a-s2" || got.Outcome != "failed" {
			t.Errorf("Detail(a).Steps[1] = %s %s; want a-s2 failed", got.ID, got.Outcome)
		}
	})
	t.Run("a step may move to a free seq", func(t *testing.T) {
		s := mustOpen(t)
		mustApply(t, s, newBatch("a"))
		st := step("a", 1, "message")
		st["seq"] = 10
		mustApply(t, s, stepsBatch("a", st))
		// Seq 1 is now free for another step.
		other := step("a", 1, "read")
		other["id"] = "a-late"
		mustApply(t, s, stepsBatch("a", other))
		var got []string
		for _, st := range mustDetail(t, s, "a").Steps {
			got = append(got, st.ID)
		}
		if want := []string{"a-late", "a-s2", "a-s3", "a-s4", "a-s5", "a-s1"}; !reflect.DeepEqual(got, want) {
			t.Errorf("Detail(a) step order = %v; want %v", got, want)
		}
	})
	t.Run("seqs are per session", func(t *testing.T) {
		s := mustOpen(t)
		mustApply(t, s, newBatch("a"))
		mustApply(t, s, newBatch("b")) // the same seqs 1..5 in another session
	})
}

func TestApplyDeleted(t *testing.T) {
	for name, batch := range map[string]obj{
		"whole batch":  newBatch("a"),
		"header only":  {"schema_version": "1.2", "session": header("a")},
		"invalid refs": stepsBatch("a", step("a", 1, "read")), // the deletion is reported first
	} {
		t.Run(name, func(t *testing.T) {
			s := mustOpen(t)
			mustApply(t, s, newBatch("a"))
			mustApply(t, s, newBatch("b"))
			mustDelete(t, s, "a")
			before := snapshot(t, s)
			err := applyErr(t, s, batch)
			var de *store.DeletedError
			if !errors.As(err, &de) || de.SessionID != "a" {
				t.Fatalf("Apply(deleted a) = %v; want *DeletedError for a", err)
			}
			if want := "session a was deleted; it is not recorded again"; !strings.Contains(err.Error(), want) {
				t.Errorf("Apply(deleted a) = %q; want it to say %q", err, want)
			}
			assertUnchanged(t, s, before)
		})
	}
}

// Apply with a context that is already done fails and writes nothing.
func TestApplyCanceled(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("b"))
	before := snapshot(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Apply(ctx, mustParse(t, newBatch("a"))); err == nil {
		t.Fatalf("Apply(canceled ctx) = nil; want an error")
	}
	assertUnchanged(t, s, before)
}

// Reference problems are listed up to MaxProblems, like schema problems.
func TestApplyReferenceProblemLimit(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("b"))
	before := snapshot(t, s)
	b := newBatch("a")
	steps := arr{}
	for i := range 150 {
		st := step("a", i+1, "read")
		st["turn_id"] = "nope"
		steps = append(steps, st)
	}
	b["steps"] = steps
	err := applyErr(t, s, b)
	var re *store.ReferenceError
	if !errors.As(err, &re) {
		t.Fatalf("Apply(150 dangling steps) = %v; want *ReferenceError", err)
	}
	if len(re.Problems) != store.MaxProblems || re.Omitted != 50 {
		t.Errorf("Apply(150 dangling steps) listed %d problems, omitted %d; want %d and 50", len(re.Problems), re.Omitted, store.MaxProblems)
	}
	if want := (problem{"steps[99].turn_id", "no turn nope in this session"}); re.Problems[len(re.Problems)-1] != want {
		t.Errorf("Apply(150 dangling steps) last problem = %+v; want %+v", re.Problems[len(re.Problems)-1], want)
	}
	assertUnchanged(t, s, before)
}
