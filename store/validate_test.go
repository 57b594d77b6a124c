package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

type problem = store.Problem

func with(path string, v any) func(obj) { return func(b obj) { set(b, path, v) } }
func without(path string) func(obj)     { return func(b obj) { del(b, path) } }

// parseProblems encodes a batch tree, parses it and returns the problems of
// the *InvalidError, failing the test on any other result.
func parseProblems(t *testing.T, b obj) []problem {
	t.Helper()
	body := mustJSON(t, b)
	_, err := store.ParseBatch(body)
	if err == nil {
		return nil
	}
	var inv *store.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("ParseBatch(%s) = %v; want *InvalidError", body, err)
	}
	if inv.Omitted != 0 {
		t.Errorf("ParseBatch() omitted %d problems; want 0", inv.Omitted)
	}
	return inv.Problems
}

type parseCase struct {
	name string
	edit func(obj)
	want []problem // nil: the batch is valid
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBatch("sess")
			tc.edit(b)
			got := parseProblems(t, b)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseBatch() problems = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestParseBatchValid(t *testing.T) {
	b := newBatch("sess")
	got := mustParse(t, b)
	want := &store.Batch{
		SchemaVersion: "1.2",
		Session: store.SessionHeader{
			ID:        "sess",
			Agent:     store.Agent{Kind: "testagent", Version: "1.0.0"},
			Workspace: store.Workspace{Root: "/tmp/ws-sess"},
			StartedAt: tStart,
			Metrics:   &store.Metrics{CostUSD: 1.25, APIRequests: 3, Tokens: store.Tokens{Input: 100, Output: 50, CacheRead: 10, CacheCreation: 5}},
		},
		Segments: []store.Segment{{Index: 0, StartReason: "start", StartedAt: tStart, SourceFiles: []string{}}},
		Actors:   []store.Actor{{ID: "sess-root", Type: "root", Label: "main"}},
		Turns:    []store.Turn{{ID: "sess-t1", SessionID: "sess", ActorID: "sess-root", Index: 1, Mode: "act", StartedAt: tTurn}},
	}
	base := store.Step{SessionID: "sess", TurnID: "sess-t1", ActorID: "sess-root", At: tStep,
		Decision: "accepted", Outcome: "ok", ContentStatus: "inline", Channels: []string{"hook"}, Flags: []store.Flag{}}
	msg, cmd, edit, read, other := base, base, base, base, base
	msg.ID, msg.Seq, msg.Type, msg.Decision = "sess-s1", 1, "message", "n/a"
	msg.Payload = store.Payload{Role: "user", Text: ptr("Fix the failing test")}
	cmd.ID, cmd.Seq, cmd.Type = "sess-s2", 2, "command"
	cmd.Flags = []store.Flag{{Kind: "dangerous_command", Severity: "warn", Reason: "runs tests"}}
	cmd.Payload = store.Payload{Command: ptr("go test ./..."), Stdout: ptr("ok"), Stderr: ptr(""), ExitCode: ptr[int64](0), Cwd: ptr("/tmp/ws")}
	edit.ID, edit.Seq, edit.Type, edit.Outcome = "sess-s3", 3, "edit", "failed"
	edit.Error = &store.StepError{Type: "tool_error", Message: "old_string not found"}
	edit.Payload = store.Payload{Path: "/tmp/ws/main.go", OldString: ptr("a"), NewString: ptr("b"), IsFullWrite: ptr(false)}
	read.ID, read.Seq, read.Type = "sess-s4", 4, "read"
	read.Payload = store.Payload{Path: "/tmp/ws/main.go", Range: &[2]int64{1, 20}}
	other.ID, other.Seq, other.Type = "sess-s5", 5, "other"
	other.Payload = store.Payload{ToolName: "WebFetch", Raw: json.RawMessage(`{"url":"https://example.com"}`)}
	want.Steps = []store.Step{msg, cmd, edit, read, other}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseBatch(newBatch) =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseBatchMinimal(t *testing.T) {
	b := obj{"schema_version": "1.2", "session": header("sess")}
	got := mustParse(t, b)
	if got.Segments != nil || got.Actors != nil || got.Turns != nil || got.Steps != nil {
		t.Errorf("ParseBatch(header only) = %+v; want no records", got)
	}
}

func TestParseBatchRequired(t *testing.T) {
	paths := []string{
		"schema_version", "session",
		"session.id", "session.agent", "session.agent.kind", "session.agent.version",
		"session.workspace", "session.workspace.root", "session.started_at",
		"session.metrics.cost_usd", "session.metrics.api_requests", "session.metrics.tokens",
		"session.metrics.tokens.input", "session.metrics.tokens.output",
		"session.metrics.tokens.cache_read", "session.metrics.tokens.cache_creation",
		"segments[0].index", "segments[0].start_reason", "segments[0].started_at", "segments[0].source_files",
		"actors[0].id", "actors[0].type",
		"turns[0].id", "turns[0].session_id", "turns[0].segment_index", "turns[0].actor_id",
		"turns[0].index", "turns[0].started_at", "turns[0].step_ids",
		"steps[0].id", "steps[0].session_id", "steps[0].segment_index", "steps[0].turn_id",
		"steps[0].actor_id", "steps[0].seq", "steps[0].at", "steps[0].type", "steps[0].decision",
		"steps[0].outcome", "steps[0].content_status", "steps[0].channels", "steps[0].flags",
		"steps[0].payload",
		"steps[2].error.type", "steps[2].error.message",
		"steps[1].flags[0].kind", "steps[1].flags[0].severity", "steps[1].flags[0].reason",
		"steps[0].payload.role",
		"steps[2].payload.path", "steps[2].payload.is_full_write",
		"steps[3].payload.path",
		"steps[4].payload.tool_name", "steps[4].payload.raw",
	}
	var cases []parseCase
	for _, p := range paths {
		cases = append(cases, parseCase{p, without(p), []problem{{p, "required"}}})
	}
	runParseCases(t, cases)
}

func TestParseBatchNull(t *testing.T) {
	optional := []string{
		"segments", "actors", "turns", "steps",
		"session.ended_at", "session.source", "session.metrics",
		"session.agent.format_version", "session.workspace.repo",
		"segments[0].ended_at", "actors[0].parent_id", "actors[0].label",
		"turns[0].prompt_id", "turns[0].mode",
		"steps[2].error",
		"steps[1].payload.command", "steps[1].payload.stdout", "steps[1].payload.stderr",
		"steps[1].payload.exit_code", "steps[1].payload.cwd", "steps[1].payload.output_ref",
		"steps[2].payload.old_string", "steps[2].payload.new_string",
		"steps[2].payload.structured_patch", "steps[2].payload.landed_in_final_state",
		"steps[3].payload.range",
		"steps[0].payload.text", "steps[0].payload.text_ref",
	}
	var cases []parseCase
	for _, p := range optional {
		cases = append(cases, parseCase{"optional " + p, with(p, nil), []problem{{p, "must be omitted, not null"}}})
	}
	// A required field set to null is a missing value, not an omission.
	for _, p := range []string{"schema_version", "session.id", "steps[0].seq", "steps[0].flags", "steps[0].payload", "steps[4].payload.raw"} {
		cases = append(cases, parseCase{"required " + p, with(p, nil), []problem{{p, "expected a value, got null"}}})
	}
	runParseCases(t, cases)
}

func TestParseBatchUnknownField(t *testing.T) {
	objects := []string{
		"session", "session.agent", "session.workspace", "session.metrics", "session.metrics.tokens",
		"segments[0]", "actors[0]", "turns[0]", "steps[0]", "steps[2].error", "steps[1].flags[0]",
		"steps[0].payload", "steps[1].payload", "steps[2].payload", "steps[3].payload", "steps[4].payload",
	}
	cases := []parseCase{
		{"top level", with("extra", 1), []problem{{"extra", "unknown field"}}},
		// Fields of another step type are unknown in this type's payload.
		{"command field in a read payload", with("steps[3].payload.stdout", "x"), []problem{{"steps[3].payload.stdout", "unknown field"}}},
		{"two unknown fields, sorted", func(b obj) { set(b, "session.zz", 1); set(b, "session.aa", 1) },
			[]problem{{"session.aa", "unknown field"}, {"session.zz", "unknown field"}}},
		// The two open shapes are stored as they are, never inspected.
		{"raw of other is open", with("steps[4].payload.raw", obj{"anything": obj{"nested": arr{1, nil, "x"}}, "x": nil}), nil},
		{"structured_patch of edit is open", with("steps[2].payload.structured_patch",
			arr{obj{"oldStart": 1, "lines": arr{"-a", "+b"}, "whatever": nil}}), nil},
	}
	for _, o := range objects {
		cases = append(cases, parseCase{o, with(o+".unexpected", "x"), []problem{{o + ".unexpected", "unknown field"}}})
	}
	runParseCases(t, cases)
}

// TestParseBatchNames: a field name is read as JSON defines it, escapes and
// all, and an unknown name with invalid UTF-8 is reported with U+FFFD.
func TestParseBatchNames(t *testing.T) {
	body := mustJSON(t, newBatch("sess"))
	escaped := bytes.Replace(body, []byte(`"schema_version"`), []byte(`"schema\u005fversion"`), 1)
	if _, err := store.ParseBatch(escaped); err != nil {
		t.Errorf("ParseBatch(a body naming schema\\u005fversion) = %v; want no error", err)
	}
	bad := append([]byte("{\"x\xff\":1,"), body[1:]...)
	_, err := store.ParseBatch(bad)
	var inv *store.InvalidError
	want := []problem{{Path: "x\uFFFD", Message: "unknown field"}}
	if !errors.As(err, &inv) || !reflect.DeepEqual(inv.Problems, want) {
		t.Errorf("ParseBatch(a body with the name x\\xff) = %v; want %+v", err, want)
	}
}

// withNames returns the JSON of the object v with the members first
// before its own and last after them: a way to send a name twice.
func withNames(t *testing.T, v obj, first, last string) json.RawMessage {
	t.Helper()
	b := mustJSON(t, v)
	if first != "" {
		b = append([]byte("{"+first+","), b[1:]...)
	}
	if last != "" {
		b = append(b[:len(b)-1:len(b)-1], ","+last+"}"...)
	}
	return b
}

// TestParseBatchRepeatedNames: a name sent twice in an object keeps its
// last value, as encoding/json does, and only the problems of that value
// are reported. mustJSON sorts names, so a step's payload comes before
// its type: it is read for the last type wherever that comes.
func TestParseBatchRepeatedNames(t *testing.T) {
	runParseCases(t, []parseCase{
		{"wrong values, then the batch's", func(b obj) {
			set(b, "steps[0]", withNames(t, step("sess", 1, "message"), `"payload":[],"seq":-1,"flags":[1]`, ""))
			set(b, "session", withNames(t, header("sess"), `"agent":{"extra":1},"started_at":"yesterday"`, ""))
		}, nil},
		{"the batch's values, then null", func(b obj) {
			set(b, "steps[0]", withNames(t, step("sess", 1, "message"), "", `"error":null`))
			set(b, "session", withNames(t, header("sess"), "", `"agent":null`))
		}, []problem{{"session.agent", "expected a value, got null"}, {"steps[0].error", "must be omitted, not null"}}},
		{"a read payload after type command, then type read", with("steps[3]",
			withNames(t, step("sess", 4, "read"), `"type":"command"`, "")), nil},
		{"a read payload after type read, then type command", with("steps[3]",
			withNames(t, step("sess", 4, "read"), `"type":"read"`, `"type":"command"`)),
			[]problem{{"steps[3].payload.path", "unknown field"}, {"steps[3].payload.range", "unknown field"}}},
	})
}

func TestParseBatchTimestamps(t *testing.T) {
	fields := []string{
		"session.started_at", "session.ended_at", "segments[0].started_at", "segments[0].ended_at",
		"turns[0].started_at", "steps[0].at",
	}
	bad := map[string]any{
		"no zone":              "2026-01-02T10:00:00",
		"space separator":      "2026-01-02 10:00:00",
		"space and zone":       "2026-01-02 10:00:00Z",
		"date only":            "2026-01-02",
		"offset without colon": "2026-01-02T10:00:00+0200",
		"month 13":             "2026-13-02T10:00:00Z",
		"hour 25":              "2026-01-02T25:00:00Z",
		"empty":                "",
		"number":               1767348000,
		"text":                 "yesterday",
	}
	good := map[string]string{
		"Z":                  "2026-01-02T10:00:00Z",
		"plus offset":        "2026-01-02T10:00:00+02:00",
		"minus offset":       "2026-01-02T10:00:00-05:30",
		"millis":             "2026-01-02T10:00:00.123Z",
		"nanos with offset":  "2026-01-02T10:00:00.123456789+02:00",
		"one fraction digit": "2026-01-02T10:00:00.5Z",
	}
	var cases []parseCase
	for _, f := range fields {
		for name, v := range bad {
			cases = append(cases, parseCase{f + " " + name, with(f, v), []problem{{f, "expected ISO 8601 date-time with timezone"}}})
		}
		for name, v := range good {
			cases = append(cases, parseCase{f + " accepts " + name, with(f, v), nil})
		}
	}
	runParseCases(t, cases)

	t.Run("kept as pushed", func(t *testing.T) {
		b := newBatch("sess")
		set(b, "session.started_at", "2026-01-02T10:00:00.500+02:00")
		if got := mustParse(t, b).Session.StartedAt; got != "2026-01-02T10:00:00.500+02:00" {
			t.Errorf("ParseBatch().Session.StartedAt = %q; want the pushed text", got)
		}
	})
}

func TestParseBatchIntegers(t *testing.T) {
	nonNegative := []string{
		"session.metrics.api_requests", "session.metrics.tokens.input", "session.metrics.tokens.output",
		"session.metrics.tokens.cache_read", "session.metrics.tokens.cache_creation",
		"segments[0].index", "turns[0].segment_index", "turns[0].index",
		"steps[0].segment_index", "steps[0].seq",
	}
	var cases []parseCase
	for _, f := range append(nonNegative, "steps[1].payload.exit_code") {
		cases = append(cases,
			parseCase{f + " fraction", with(f, 1.5), []problem{{f, "expected integer, got 1.5"}}},
			parseCase{f + " string", with(f, "1"), []problem{{f, "expected integer, got string"}}},
			parseCase{f + " boolean", with(f, true), []problem{{f, "expected integer, got boolean"}}},
			parseCase{f + " too large", with(f, json.Number("1e400")), []problem{{f, "expected integer, got 1e400"}}},
			parseCase{f + " beyond int64", with(f, json.Number("99999999999999999999")), []problem{{f, "expected integer, got 99999999999999999999"}}},
			parseCase{f + " accepts 2.0", with(f, json.Number("2.0")), nil},
			parseCase{f + " accepts 1e2", with(f, json.Number("1e2")), nil},
			parseCase{f + " accepts 0", with(f, 0), nil},
		)
	}
	for _, f := range nonNegative {
		cases = append(cases, parseCase{f + " negative", with(f, -1), []problem{{f, "expected integer >= 0, got -1"}}})
	}
	cases = append(cases,
		parseCase{"exit_code may be negative", with("steps[1].payload.exit_code", -1), nil},
		parseCase{"range fraction", with("steps[3].payload.range", arr{1, 2.5}), []problem{{"steps[3].payload.range[1]", "expected integer, got 2.5"}}},
		parseCase{"range string item", with("steps[3].payload.range", arr{"1", 2}), []problem{{"steps[3].payload.range[0]", "expected integer, got string"}}},
		parseCase{"range of one", with("steps[3].payload.range", arr{1}), []problem{{"steps[3].payload.range", "expected array of exactly two integers, got array"}}},
		parseCase{"range of three", with("steps[3].payload.range", arr{1, 2, 3}), []problem{{"steps[3].payload.range", "expected array of exactly two integers, got array"}}},
		parseCase{"range string", with("steps[3].payload.range", "1-20"), []problem{{"steps[3].payload.range", "expected array of exactly two integers, got string"}}},
		parseCase{"cost negative", with("session.metrics.cost_usd", -0.5), []problem{{"session.metrics.cost_usd", "expected number >= 0, got -0.5"}}},
		parseCase{"cost string", with("session.metrics.cost_usd", "1.5"), []problem{{"session.metrics.cost_usd", `expected number >= 0, got "1.5"`}}},
		parseCase{"cost too large", with("session.metrics.cost_usd", json.Number("1e400")), []problem{{"session.metrics.cost_usd", "expected number >= 0, got 1e400"}}},
		parseCase{"cost zero", with("session.metrics.cost_usd", 0), nil},
	)
	runParseCases(t, cases)

	t.Run("whole numbers written as decimals", func(t *testing.T) {
		b := newBatch("sess")
		set(b, "steps[0].seq", json.Number("7.0"))
		set(b, "session.metrics.api_requests", json.Number("1e3"))
		set(b, "steps[3].payload.range", arr{json.Number("2.0"), json.Number("3e1")})
		got := mustParse(t, b)
		if got.Steps[0].Seq != 7 || got.Session.Metrics.APIRequests != 1000 || *got.Steps[3].Payload.Range != [2]int64{2, 30} {
			t.Errorf("ParseBatch() seq %d, api_requests %d, range %v; want 7, 1000, [2 30]",
				got.Steps[0].Seq, got.Session.Metrics.APIRequests, *got.Steps[3].Payload.Range)
		}
	})
}

func TestParseBatchEnums(t *testing.T) {
	const types = "command, edit, read, message, other"
	runParseCases(t, []parseCase{
		// With an unknown type the payload's shape is unknown: only the type is reported.
		{"step type", with("steps[1].type", "shell"), []problem{{"steps[1].type", `expected one of ` + types + `, got "shell"`}}},
		{"step type empty", with("steps[1].type", ""), []problem{{"steps[1].type", `expected one of ` + types + `, got ""`}}},
		{"step type case", with("steps[1].type", "Command"), []problem{{"steps[1].type", `expected one of ` + types + `, got "Command"`}}},
		{"step type number", with("steps[1].type", 1), []problem{{"steps[1].type", "expected string, got number"}}},
		{"content_status", with("steps[0].content_status", "partial"),
			[]problem{{"steps[0].content_status", `expected one of inline, reference_only, got "partial"`}}},
		{"flag severity", with("steps[1].flags[0].severity", "high"),
			[]problem{{"steps[1].flags[0].severity", `expected one of info, warn, danger, got "high"`}}},
		// Open enumerations take any non-empty string.
		{"decision open", with("steps[1].decision", "asked-the-user"), nil},
		{"outcome open", with("steps[1].outcome", "timed_out"), nil},
		{"flag kind open", with("steps[1].flags[0].kind", "made_up"), nil},
		{"actor type open", with("actors[0].type", "helper"), nil},
		{"agent kind open", with("session.agent.kind", "some-new-agent"), nil},
		{"severity info", with("steps[1].flags[0].severity", "info"), nil},
		{"severity danger", with("steps[1].flags[0].severity", "danger"), nil},
		{"reference_only", with("steps[0].content_status", "reference_only"), nil},
		{"payload of the type: edit fields in a command step", func(b obj) {
			set(b, "steps[1].type", "edit")
		}, []problem{
			{"steps[1].payload.path", "required"}, {"steps[1].payload.is_full_write", "required"},
			{"steps[1].payload.command", "unknown field"}, {"steps[1].payload.cwd", "unknown field"},
			{"steps[1].payload.exit_code", "unknown field"}, {"steps[1].payload.stderr", "unknown field"},
			{"steps[1].payload.stdout", "unknown field"},
		}},
	})
}

func TestParseBatchStrings(t *testing.T) {
	nonEmpty := []string{
		"session.id", "session.agent.kind", "session.agent.version", "session.agent.format_version",
		"session.workspace.root", "session.workspace.repo", "session.source",
		"segments[0].start_reason", "actors[0].id", "actors[0].parent_id", "actors[0].type", "actors[0].label",
		"turns[0].id", "turns[0].session_id", "turns[0].actor_id", "turns[0].prompt_id", "turns[0].mode",
		"steps[0].id", "steps[0].session_id", "steps[0].turn_id", "steps[0].actor_id",
		"steps[0].decision", "steps[0].outcome", "steps[2].error.type",
		"steps[1].flags[0].kind", "steps[1].flags[0].reason",
		"steps[0].payload.role", "steps[2].payload.path", "steps[3].payload.path", "steps[4].payload.tool_name",
	}
	mayBeEmpty := []string{
		"steps[1].payload.command", "steps[1].payload.stdout", "steps[1].payload.stderr",
		"steps[1].payload.cwd", "steps[1].payload.output_ref",
		"steps[2].payload.old_string", "steps[2].payload.new_string", "steps[2].error.message",
		"steps[0].payload.text", "steps[0].payload.text_ref",
	}
	var cases []parseCase
	for _, f := range nonEmpty {
		cases = append(cases,
			parseCase{f + " empty", with(f, ""), []problem{{f, "must not be empty"}}},
			parseCase{f + " number", with(f, 5), []problem{{f, "expected string, got number"}}},
		)
	}
	for _, f := range mayBeEmpty {
		cases = append(cases,
			parseCase{f + " may be empty", with(f, ""), nil},
			parseCase{f + " object", with(f, obj{}), []problem{{f, "expected string, got object"}}},
		)
	}
	runParseCases(t, cases)
}

func TestParseBatchTypes(t *testing.T) {
	runParseCases(t, []parseCase{
		{"session string", with("session", "sess"), []problem{{"session", "expected object, got string"}}},
		{"agent array", with("session.agent", arr{}), []problem{{"session.agent", "expected object, got array"}}},
		{"workspace string", with("session.workspace", "/tmp"), []problem{{"session.workspace", "expected object, got string"}}},
		{"metrics number", with("session.metrics", 1), []problem{{"session.metrics", "expected object, got number"}}},
		{"tokens array", with("session.metrics.tokens", arr{}), []problem{{"session.metrics.tokens", "expected object, got array"}}},
		{"metrics empty", with("session.metrics", obj{}), []problem{
			{"session.metrics.api_requests", "required"}, {"session.metrics.cost_usd", "required"}, {"session.metrics.tokens", "required"}}},
		{"steps object", with("steps", obj{}), []problem{{"steps", "expected array, got object"}}},
		{"segments string", with("segments", "x"), []problem{{"segments", "expected array, got string"}}},
		{"actors number", with("actors", 1), []problem{{"actors", "expected array, got number"}}},
		{"turns boolean", with("turns", true), []problem{{"turns", "expected array, got boolean"}}},
		{"step item number", with("steps[0]", 1), []problem{{"steps[0]", "expected object, got number"}}},
		{"segment item null", with("segments[0]", nil), []problem{{"segments[0]", "expected object, got null"}}},
		{"actor item string", with("actors[0]", "root"), []problem{{"actors[0]", "expected object, got string"}}},
		{"turn item array", with("turns[0]", arr{}), []problem{{"turns[0]", "expected object, got array"}}},
		{"payload array", with("steps[0].payload", arr{}), []problem{{"steps[0].payload", "expected object, got array"}}},
		{"error string", with("steps[2].error", "boom"), []problem{{"steps[2].error", "expected object, got string"}}},
		{"channels string", with("steps[0].channels", "hook"), []problem{{"steps[0].channels", "expected array, got string"}}},
		{"channels item number", with("steps[0].channels", arr{"hook", 1}), []problem{{"steps[0].channels[1]", "expected string, got number"}}},
		{"channels item empty", with("steps[0].channels", arr{""}), []problem{{"steps[0].channels[0]", "must not be empty"}}},
		{"channels may be empty", with("steps[0].channels", arr{}), nil},
		{"flags object", with("steps[0].flags", obj{}), []problem{{"steps[0].flags", "expected array, got object"}}},
		{"flag item string", with("steps[1].flags[0]", "x"), []problem{{"steps[1].flags[0]", "expected object, got string"}}},
		{"flag empty", with("steps[1].flags[0]", obj{}), []problem{
			{"steps[1].flags[0].kind", "required"}, {"steps[1].flags[0].severity", "required"}, {"steps[1].flags[0].reason", "required"}}},
		{"source_files string", with("segments[0].source_files", "a.jsonl"), []problem{{"segments[0].source_files", "expected array, got string"}}},
		{"source_files item number", with("segments[0].source_files", arr{1}), []problem{{"segments[0].source_files[0]", "expected string, got number"}}},
		{"source_files item empty", with("segments[0].source_files", arr{""}), []problem{{"segments[0].source_files[0]", "must not be empty"}}},
		{"source_files listed", with("segments[0].source_files", arr{"/a.jsonl", "/b.jsonl"}), nil},
		{"step_ids string", with("turns[0].step_ids", "s1"), []problem{{"turns[0].step_ids", "expected array, got string"}}},
		{"step_ids contents ignored", with("turns[0].step_ids", arr{"nope", 1}), nil},
		{"is_full_write string", with("steps[2].payload.is_full_write", "yes"), []problem{{"steps[2].payload.is_full_write", "expected boolean, got string"}}},
		{"landed_in_final_state number", with("steps[2].payload.landed_in_final_state", 0), []problem{{"steps[2].payload.landed_in_final_state", "expected boolean, got number"}}},
		{"raw string", with("steps[4].payload.raw", "x"), []problem{{"steps[4].payload.raw", "expected object, got string"}}},
		{"raw array", with("steps[4].payload.raw", arr{}), []problem{{"steps[4].payload.raw", "expected object, got array"}}},
		{"raw empty object", with("steps[4].payload.raw", obj{}), nil},
		{"structured_patch scalar", with("steps[2].payload.structured_patch", "@@ -1 +1 @@"), nil},
	})
}

func TestParseBatchSchemaVersion(t *testing.T) {
	runParseCases(t, []parseCase{
		{"1.1", with("schema_version", "1.1"), []problem{{"schema_version", `expected "1.2", got "1.1"`}}},
		{"1.2.0", with("schema_version", "1.2.0"), []problem{{"schema_version", `expected "1.2", got "1.2.0"`}}},
		{"number", with("schema_version", 1.2), []problem{{"schema_version", `expected "1.2", got 1.2`}}},
		{"empty", with("schema_version", ""), []problem{{"schema_version", `expected "1.2", got ""`}}},
		// An object is shown as JSON all through, a member named raw too
		// (it once came out as base64).
		{"object", with("schema_version", obj{"raw": obj{"v": "1.2"}}), []problem{{"schema_version", `expected "1.2", got {"raw":{"v":"1.2"}}`}}},
	})
}

func TestParseBatchSeveralProblems(t *testing.T) {
	b := newBatch("sess")
	del(b, "session.id")
	set(b, "steps[1].seq", -3)
	set(b, "steps[3].payload.range", arr{1})
	set(b, "turns[0].started_at", "2026-01-02 10:00:00")
	set(b, "bogus", true)
	got := parseProblems(t, b)
	want := []problem{
		{"session.id", "required"},
		{"turns[0].started_at", "expected ISO 8601 date-time with timezone"},
		{"steps[1].seq", "expected integer >= 0, got -3"},
		{"steps[3].payload.range", "expected array of exactly two integers, got array"},
		{"bogus", "unknown field"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseBatch() problems = %+v; want %+v", got, want)
	}
}

func TestParseBatchProblemLimit(t *testing.T) {
	tests := []struct {
		name        string
		bad         int
		wantListed  int
		wantOmitted int
	}{
		{"exactly 100", 100, 100, 0},
		{"101", 101, 100, 1},
		{"250", 250, 100, 150},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBatch("sess")
			steps := arr{}
			for i := range tc.bad {
				st := step("sess", i+1, "message")
				st["seq"] = -1 // one problem per step
				steps = append(steps, st)
			}
			b["steps"] = steps
			_, err := store.ParseBatch(mustJSON(t, b))
			var inv *store.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("ParseBatch() = %v; want *InvalidError", err)
			}
			if len(inv.Problems) != tc.wantListed || inv.Omitted != tc.wantOmitted {
				t.Errorf("ParseBatch() listed %d, omitted %d; want %d, %d", len(inv.Problems), inv.Omitted, tc.wantListed, tc.wantOmitted)
			}
			for i, p := range inv.Problems {
				if want := (problem{fmt.Sprintf("steps[%d].seq", i), "expected integer >= 0, got -1"}); p != want {
					t.Fatalf("ParseBatch() problem %d = %+v; want %+v", i, p, want)
				}
			}
			if err.Error() != "invalid batch" {
				t.Errorf("InvalidError.Error() = %q; want %q", err.Error(), "invalid batch")
			}
		})
	}
}

func TestParseBatchNotJSON(t *testing.T) {
	for name, body := range map[string]string{
		"empty":           "",
		"whitespace":      "  \n",
		"truncated":       `{"schema_version": "1.2"`,
		"trailing object": `{} {}`,
		"trailing text":   `{"schema_version": "1.2"} x`,
		"trailing comma":  `{"a": 1,}`,
		"single quotes":   `{'a': 1}`,
		"bare word":       `nul`,
		"comment":         `// c` + "\n{}",
	} {
		t.Run(name, func(t *testing.T) {
			if b, err := store.ParseBatch([]byte(body)); err != store.ErrNotJSON {
				t.Errorf("ParseBatch(%q) = %v, %v; want ErrNotJSON", body, b, err)
			}
		})
	}
	t.Run("trailing whitespace is fine", func(t *testing.T) {
		if _, err := store.ParseBatch(append(mustJSON(t, newBatch("sess")), " \n\t"...)); err != nil {
			t.Errorf("ParseBatch(batch + whitespace) = %v; want no error", err)
		}
	})
}

func TestParseBatchNotObject(t *testing.T) {
	for _, body := range []string{`[]`, `[{"schema_version":"1.2"}]`, `"1.2"`, `12`, `true`, `null`} {
		t.Run(body, func(t *testing.T) {
			if b, err := store.ParseBatch([]byte(body)); err != store.ErrNotObject {
				t.Errorf("ParseBatch(%s) = %v, %v; want ErrNotObject", body, b, err)
			}
		})
	}
}

func TestParseBatchTooMany(t *testing.T) {
	for _, kind := range []string{"segments", "actors", "turns", "steps"} {
		t.Run(kind, func(t *testing.T) {
			b := newBatch("sess")
			items := make(arr, store.MaxItems+1)
			for i := range items {
				items[i] = obj{}
			}
			b[kind] = items
			_, err := store.ParseBatch(mustJSON(t, b))
			var tm *store.TooManyError
			if !errors.As(err, &tm) {
				t.Fatalf("ParseBatch(%d %s) = %v; want *TooManyError", len(items), kind, err)
			}
			if tm.Kind != kind || tm.Count != store.MaxItems+1 {
				t.Errorf("TooManyError = %+v; want kind %s, count %d", tm, kind, store.MaxItems+1)
			}
			want := fmt.Sprintf("too many %s in one batch: 5001 > 5000; split it into several pushes", kind)
			if err.Error() != want {
				t.Errorf("TooManyError.Error() = %q; want %q", err.Error(), want)
			}

			// MaxItems of a kind is within the limit: whatever else is wrong, it is not too many.
			b[kind] = items[:store.MaxItems]
			_, err = store.ParseBatch(mustJSON(t, b))
			if errors.As(err, &tm) {
				t.Errorf("ParseBatch(%d %s) = %v; want no *TooManyError", store.MaxItems, kind, err)
			}
		})
	}

	t.Run("5000 valid steps", func(t *testing.T) {
		b := newBatch("sess")
		steps := make(arr, store.MaxItems)
		for i := range steps {
			steps[i] = step("sess", i+1, "read")
		}
		b["steps"] = steps
		if got := mustParse(t, b); len(got.Steps) != store.MaxItems {
			t.Errorf("ParseBatch() steps = %d; want %d", len(got.Steps), store.MaxItems)
		}
	})
}

// The open payload shapes keep their content (as compact JSON) and the
// content fields keep empty strings, so a step reads back as pushed.
func TestParseBatchKeepsContent(t *testing.T) {
	b := newBatch("sess")
	set(b, "steps[1].payload.stdout", "")
	set(b, "steps[2].payload.structured_patch", arr{obj{"oldStart": 1, "lines": arr{"-a", "+b"}}})
	set(b, "steps[4].payload.raw", obj{"url": "https://example.com", "n": json.Number("1.50"), "tags": arr{}})
	got := mustParse(t, b)
	if p := got.Steps[1].Payload.Stdout; p == nil || *p != "" {
		t.Errorf("ParseBatch() stdout = %v; want a pointer to the empty string", p)
	}
	if p := got.Steps[1].Payload.OutputRef; p != nil {
		t.Errorf("ParseBatch() output_ref = %q; want nil when left out", *p)
	}
	if got, want := string(got.Steps[2].Payload.StructuredPatch), `[{"lines":["-a","+b"],"oldStart":1}]`; got != want {
		t.Errorf("ParseBatch() structured_patch = %s; want %s", got, want)
	}
	if got, want := string(got.Steps[4].Payload.Raw), `{"n":1.50,"tags":[],"url":"https://example.com"}`; got != want {
		t.Errorf("ParseBatch() raw = %s; want %s", got, want)
	}
	if !strings.Contains(string(mustJSON(t, got.Steps[1].Payload)), `"stdout":""`) {
		t.Errorf("Payload JSON %s; want the empty stdout kept", mustJSON(t, got.Steps[1].Payload))
	}
}

// A batch built in Go meets the same rules as one pushed as JSON, with the
// paths its JSON would have; Apply refuses it before writing anything.
// Steps 0..4 of newBatch are message, command, edit, read and other.
func TestValidateBuiltBatch(t *testing.T) {
	tests := []struct {
		name string
		edit func(*store.Batch)
		want []problem
	}{
		{"schema version", func(b *store.Batch) { b.SchemaVersion = "" }, []problem{{"schema_version", `expected "1.2", got ""`}}},
		{"empty required string", func(b *store.Batch) { b.Steps[2].Payload.Path = "" }, []problem{{"steps[2].payload.path", "must not be empty"}}},
		{"header", func(b *store.Batch) { b.Session.Agent = store.Agent{}; b.Session.EndedAt = "yesterday" }, []problem{
			{"session.agent.kind", "must not be empty"}, {"session.agent.version", "must not be empty"},
			{"session.ended_at", "expected ISO 8601 date-time with timezone"},
		}},
		{"timestamp without zone", func(b *store.Batch) { b.Steps[1].At = "2026-01-02 10:00:00" }, []problem{{"steps[1].at", "expected ISO 8601 date-time with timezone"}}},
		{"negative integers", func(b *store.Batch) { b.Steps[0].Seq = -1; b.Session.Metrics.Tokens.CacheRead = -2 }, []problem{
			{"session.metrics.tokens.cache_read", "expected integer >= 0, got -2"}, {"steps[0].seq", "expected integer >= 0, got -1"},
		}},
		{"cost not a number", func(b *store.Batch) { b.Session.Metrics.CostUSD = math.NaN() }, []problem{{"session.metrics.cost_usd", "expected number >= 0, got NaN"}}},
		{"cost infinite", func(b *store.Batch) { b.Session.Metrics.CostUSD = math.Inf(1) }, []problem{{"session.metrics.cost_usd", "expected number >= 0, got +Inf"}}},
		{"enums", func(b *store.Batch) {
			b.Steps[1].Type = "shell"
			b.Steps[1].Flags[0].Severity = "high"
			b.Steps[3].ContentStatus = ""
		}, []problem{
			{"steps[1].type", `expected one of command, edit, read, message, other, got "shell"`},
			{"steps[1].flags[0].severity", `expected one of info, warn, danger, got "high"`},
			{"steps[3].content_status", `expected one of inline, reference_only, got ""`},
		}},
		{"empty strings in arrays", func(b *store.Batch) {
			b.Steps[0].Channels = []string{"hook", ""}
			b.Segments[0].SourceFiles = []string{""}
		}, []problem{
			{"segments[0].source_files[0]", "must not be empty"}, {"steps[0].channels[1]", "must not be empty"},
		}},
		{"edit without is_full_write", func(b *store.Batch) { b.Steps[2].Payload.IsFullWrite = nil }, []problem{{"steps[2].payload.is_full_write", "required"}}},
		{"patch not JSON", func(b *store.Batch) { b.Steps[2].Payload.StructuredPatch = json.RawMessage(`{"lines":`) }, []problem{{"steps[2].payload.structured_patch", "expected a JSON value"}}},
		{"raw missing", func(b *store.Batch) { b.Steps[4].Payload.Raw = nil }, []problem{{"steps[4].payload.raw", "required"}}},
		{"raw not an object", func(b *store.Batch) { b.Steps[4].Payload.Raw = json.RawMessage(` ["x"]`) }, []problem{{"steps[4].payload.raw", "expected object, got array"}}},
		{"raw not JSON", func(b *store.Batch) { b.Steps[4].Payload.Raw = json.RawMessage(`{"url"}`) }, []problem{{"steps[4].payload.raw", "expected a JSON value"}}},
		{"error type", func(b *store.Batch) { b.Steps[2].Error.Type = "" }, []problem{{"steps[2].error.type", "must not be empty"}}},
		{"arrays left nil", func(b *store.Batch) {
			b.Segments[0].SourceFiles = nil
			b.Steps[0].Channels = nil
			b.Steps[0].Flags = nil
		}, []problem{
			{"segments[0].source_files", "required"}, {"steps[0].channels", "required"}, {"steps[0].flags", "required"},
		}},
		{"field of another step type", func(b *store.Batch) { b.Steps[1].Payload.Text = ptr(""); b.Steps[0].Payload.Path = "/x" }, []problem{
			{"steps[0].payload.path", "unknown field"}, {"steps[1].payload.text", "unknown field"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			b := mustParse(t, newBatch("sess"))
			tc.edit(b)
			err := b.Validate()
			var inv *store.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Validate() = %v; want *InvalidError", err)
			}
			if !reflect.DeepEqual(inv.Problems, tc.want) {
				t.Errorf("Validate() problems = %+v; want %+v", inv.Problems, tc.want)
			}

			before := snapshot(t, s)
			_, err = s.Apply(context.Background(), b)
			if !errors.As(err, &inv) || !reflect.DeepEqual(inv.Problems, tc.want) {
				t.Fatalf("Apply() = %v%s; want *InvalidError %+v", err, problems(err), tc.want)
			}
			// A writer that prints the error names the bad field.
			if want := tc.want[0].Path + ": " + tc.want[0].Message; !strings.Contains(err.Error(), want) {
				t.Errorf("Apply() error %q; want it to name %q", err, want)
			}
			assertUnchanged(t, s, before)
		})
	}
}

func TestValidateBuiltBatchTooMany(t *testing.T) {
	s := mustOpen(t)
	b := mustParse(t, newBatch("sess"))
	b.Actors = make([]store.Actor, store.MaxItems+1)
	before := snapshot(t, s)
	_, err := s.Apply(context.Background(), b)
	var tm *store.TooManyError
	if !errors.As(err, &tm) || tm.Kind != "actors" || tm.Count != store.MaxItems+1 {
		t.Fatalf("Apply(%d actors) = %v; want *TooManyError for actors", store.MaxItems+1, err)
	}
	assertUnchanged(t, s, before)
}

// A batch that ParseBatch accepts passes Validate as it is: they are one check.
func TestValidateParsedBatch(t *testing.T) {
	if err := mustParse(t, newBatch("sess")).Validate(); err != nil {
		t.Errorf("Validate(parsed batch) = %v%s; want nil", err, problems(err))
	}
}

// timestampRE is the v1.2 timestamp shape as the spec states it, the
// oracle for ParseTimestamp's hand-written matcher.
var timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// FuzzParseTimestamp checks ParseTimestamp accepts exactly the strings of
// the spec's shape that are real instants.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{
		tStart, "2026-01-02T10:00:00.123456789+05:30", "2026-01-02T10:00:00-00:00", "2026-01-02T10:00:00.Z",
		"2026-01-02 10:00:00", "2026-01-02T10:00:00", "2026-01-02t10:00:00z", "2026-13-02T10:00:00Z",
		"2026-01-02T10:00:00+0530", "2026-01-02T10:00:00+05:30x", "２026-01-02T10:00:00Z", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := time.Parse(time.RFC3339Nano, s)
		want := timestampRE.MatchString(s) && err == nil
		if _, got := store.ParseTimestamp(s); got != want {
			t.Errorf("ParseTimestamp(%q) ok = %v; want %v", s, got, want)
		}
	})
}
