package codex

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
)

const crudSample = "testdata/agentlogs_crud_rollout.jsonl"

// rolloutLine is a line of a rollout, read without the parser.
type rolloutLine struct {
	Timestamp string                     `json:"timestamp"`
	Type      string                     `json:"type"`
	Payload   map[string]json.RawMessage `json:"payload"`
}

func readRollout(t *testing.T, path string) []rolloutLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rolloutLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ln rolloutLine
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatal(err)
		}
		out = append(out, ln)
	}
	return out
}

func payloadString(ln rolloutLine, key string) string {
	var s string
	json.Unmarshal(ln.Payload[key], &s)
	return s
}

func writeRollout(t *testing.T, lines []rolloutLine) string {
	t.Helper()
	var b strings.Builder
	for _, ln := range lines {
		j, err := json.Marshal(ln)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "rollout-2026-01-25T10-31-00-variant.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func parseFile(t *testing.T, path string) all {
	t.Helper()
	s := adapterstest.ParseUnit(t, Agent, adapters.Unit{Paths: []string{path}})
	mustValid(t, s)
	return gather(s)
}

// TestApplyPatchEdits derives a variant of the real rollout whose
// apply_patch names its file relative to the turn's cwd and also adds and
// deletes a file: each file is one edit step with an absolute path, its
// removed and added lines as a structured patch the app can show as a
// diff, added and deleted files marked, and the patch text kept.
func TestApplyPatchEdits(t *testing.T) {
	lines := readRollout(t, crudSample)
	cwd, at := "", -1
	for i, ln := range lines {
		switch {
		case ln.Type == "turn_context" && at < 0:
			cwd = payloadString(ln, "cwd")
		case payloadString(ln, "name") == "apply_patch":
			at = i
		}
	}
	if cwd == "" || at < 0 {
		t.Fatalf("%s: no turn cwd or apply_patch call", crudSample)
	}
	orig := payloadString(lines[at], "input")
	var removed, added []string
	for _, l := range strings.Split(orig, "\n") {
		switch {
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l)
		case strings.HasPrefix(l, "+"):
			added = append(added, l)
		}
	}
	rel := strings.Replace(orig, cwd+"/", "", 1)
	if rel == orig {
		t.Fatalf("the patch names no file under the turn's cwd %s", cwd)
	}
	variant := strings.Replace(rel, "*** End Patch", "*** Add File: notes/NEW.md\n+one\n+two\n*** Delete File: OLD.md\n*** End Patch", 1)
	lines[at].Payload["input"], _ = json.Marshal(variant)
	a := parseFile(t, writeRollout(t, lines))

	id := payloadString(lines[at], "call_id")
	upd, add, del := a.step(t, id), a.step(t, id+"#1"), a.step(t, id+"#2")
	var hunks []adapters.PatchHunk
	if err := json.Unmarshal(upd.Payload.StructuredPatch, &hunks); err != nil {
		t.Fatalf("structured_patch = %s: %v; want hunks", upd.Payload.StructuredPatch, err)
	}
	var gotRemoved, gotAdded []string
	for _, h := range hunks {
		for _, l := range h.Lines {
			switch l[0] {
			case '-':
				gotRemoved = append(gotRemoved, l)
			case '+':
				gotAdded = append(gotAdded, l)
			}
		}
	}
	wantPath := filepath.Join(cwd, strings.TrimPrefix(strings.SplitN(strings.SplitN(rel, "*** Update File: ", 2)[1], "\n", 2)[0], "/"))
	if upd.Payload.Path != wantPath || *upd.Payload.IsFullWrite || !slices.Equal(gotRemoved, removed) || !slices.Equal(gotAdded, added) {
		t.Errorf("update = %s full %v removed %q added %q; want %s, removed %q added %q",
			upd.Payload.Path, *upd.Payload.IsFullWrite, gotRemoved, gotAdded, wantPath, removed, added)
	}
	if len(hunks) == 0 || hunks[0].Op != "update" || !strings.Contains(variant, hunks[0].Patch) {
		t.Errorf("first hunk = %+v; want op update and the file's patch text", hunks)
	}
	if got := deref(upd.Payload.OldString); got != strings.TrimPrefix(strings.Join(removed, "\n"), "-") {
		t.Errorf("old_string = %q; want the removed line", got)
	}
	if add.Payload.Path != filepath.Join(cwd, "notes/NEW.md") || !*add.Payload.IsFullWrite || deref(add.Payload.NewString) != "one\ntwo" {
		t.Errorf("added file = %s full %v new %q; want %s created with its lines", add.Payload.Path, *add.Payload.IsFullWrite, deref(add.Payload.NewString), filepath.Join(cwd, "notes/NEW.md"))
	}
	json.Unmarshal(del.Payload.StructuredPatch, &hunks)
	if del.Payload.Path != filepath.Join(cwd, "OLD.md") || *del.Payload.IsFullWrite || len(hunks) != 1 || hunks[0].Op != "delete" {
		t.Errorf("deleted file = %s full %v patch %s; want %s marked deleted", del.Payload.Path, *del.Payload.IsFullWrite, del.Payload.StructuredPatch, filepath.Join(cwd, "OLD.md"))
	}
}

// TestCompactionAndAbortedTurn derives a variant of the real rollout with
// a compaction (its summary) and a turn aborted while a command ran: the
// summary is a summary message in the compaction segment, the command that
// never got its output failed as aborted, and the next turn starts a
// segment (AGENT-FORMATS 7.1).
func TestCompactionAndAbortedTurn(t *testing.T) {
	lines := readRollout(t, crudSample)
	last := lines[len(lines)-1].Timestamp
	mk := func(typ string, payload map[string]any) rolloutLine {
		ln := rolloutLine{Timestamp: last, Type: typ, Payload: map[string]json.RawMessage{}}
		for k, v := range payload {
			ln.Payload[k], _ = json.Marshal(v)
		}
		return ln
	}
	const summary = "The user asked for CRUD on JOKE.md; it was done."
	lines = append(lines,
		mk("compacted", map[string]any{"message": summary}),
		mk("event_msg", map[string]any{"type": "context_compacted"}),
		mk("event_msg", map[string]any{"type": "user_message", "message": "run the tests"}),
		mk("response_item", map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"sleep 100"}`, "call_id": "call_slow"}),
		mk("event_msg", map[string]any{"type": "turn_aborted", "reason": "interrupted"}),
		mk("event_msg", map[string]any{"type": "user_message", "message": "never mind"}),
	)
	a := parseFile(t, writeRollout(t, lines))

	var reasons []string
	for _, g := range a.segs {
		reasons = append(reasons, g.StartReason)
	}
	if want := []string{"start", "compaction", "turn_aborted"}; !slices.Equal(reasons, want) {
		t.Errorf("segments = %v; want %v", reasons, want)
	}
	var summaries []string
	for _, st := range a.steps {
		if st.Payload.Role == "summary" {
			summaries = append(summaries, deref(st.Payload.Text))
			if st.SegmentIndex != 1 {
				t.Errorf("summary in segment %d; want 1", st.SegmentIndex)
			}
		}
	}
	if !slices.Equal(summaries, []string{summary}) {
		t.Errorf("summaries = %q; want the compacted message once", summaries)
	}
	slow := a.step(t, "call_slow")
	if slow.Outcome != "failed" || slow.Error == nil || slow.Error.Type != "aborted" || slow.SegmentIndex != 1 {
		t.Errorf("aborted command = %s %+v in segment %d; want failed, aborted, in segment 1", slow.Outcome, slow.Error, slow.SegmentIndex)
	}
}

// TestLongFolderOfManyCalls derives a variant of the real rollout whose
// turns ran in a 64 KiB folder and whose last turn makes 3,000 more
// exec_command calls and 3,000 apply_patch calls of a relative file: each
// call is still a step, but the folder the turn recorded once is copied
// into them only while the copies stay within twice the file and 64 KiB
// (adapters.Builder.Folder), so the steps hold a small multiple of the
// file, not 6,000 copies of the folder (384 MB).
func TestLongFolderOfManyCalls(t *testing.T) {
	const calls = 3000
	lines := readRollout(t, crudSample)
	folder, _ := json.Marshal("/" + strings.Repeat("d", 64<<10))
	var exec, patch rolloutLine
	for i, ln := range lines {
		switch {
		case ln.Type == "session_meta" || ln.Type == "turn_context":
			lines[i].Payload["cwd"] = folder
		case payloadString(ln, "name") == "exec_command" && exec.Payload == nil:
			exec = ln
		case payloadString(ln, "name") == "apply_patch":
			patch = ln
		}
	}
	if exec.Payload == nil || patch.Payload == nil {
		t.Fatalf("%s: no exec_command or apply_patch call", crudSample)
	}
	with := func(ln rolloutLine, key string, v any) rolloutLine {
		p := maps.Clone(ln.Payload)
		p[key], _ = json.Marshal(v)
		ln.Payload = p
		return ln
	}
	for i := range calls {
		id := fmt.Sprintf("call_many_%d", i)
		lines = append(lines,
			with(with(exec, "arguments", `{"cmd":"ls"}`), "call_id", id),
			with(with(patch, "input", fmt.Sprintf("*** Begin Patch\n*** Add File: f%d\n+x\n*** End Patch", i)), "call_id", id+"p"))
	}
	path := writeRollout(t, lines)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := adapterstest.ParseUnit(t, Agent, adapters.Unit{Paths: []string{path}})
	mustValid(t, s)
	a := gather(s)
	for i := range calls {
		id := fmt.Sprintf("call_many_%d", i)
		if a.step(t, id).Type != "command" || a.step(t, id+"p").Type != "edit" {
			t.Fatalf("call %d: not a command and an edit", i)
		}
	}
	size := int(fi.Size())
	cwdBytes, pathBytes, withCwd := adapterstest.Folders(t, s)
	if limit := 2*size + 64<<10; cwdBytes > limit || withCwd == 0 {
		t.Errorf("a %d-byte rollout: %d steps record the folder, %d bytes; want some, at most %d", size, withCwd, cwdBytes, limit)
	}
	if limit := 3*size + 64<<10; pathBytes > limit {
		t.Errorf("a %d-byte rollout: paths of %d bytes; want at most %d", size, pathBytes, limit)
	}
}

// TestLongSessionID derives a variant of the real rollout whose
// session_meta names a 64 KiB id: the session is still read, and its id,
// which every step and usage record carries, is cut to at most 256 bytes
// (adapters' boundedID), the same each time the file is read.
func TestLongSessionID(t *testing.T) {
	lines := readRollout(t, crudSample)
	long, _ := json.Marshal(strings.Repeat("0", 64<<10))
	for i, ln := range lines {
		if ln.Type == "session_meta" {
			lines[i].Payload["id"] = long
		}
	}
	path := writeRollout(t, lines)
	s := adapterstest.ParseUnit(t, Agent, adapters.Unit{Paths: []string{path}})
	mustValid(t, s)
	again := adapterstest.ParseUnit(t, Agent, adapters.Unit{Paths: []string{path}})
	if len(s.ID) > 256 || s.ID != again.ID || len(s.Batches) == 0 {
		t.Fatalf("session id of %d bytes (%q, then %q), %d batches; want at most 256, the same twice, and batches", len(s.ID), s.ID, again.ID, len(s.Batches))
	}
	for _, st := range gather(s).steps {
		if st.SessionID != s.ID {
			t.Fatalf("step %s: session %.40q; want %q", st.ID, st.SessionID, s.ID)
		}
	}
}
