package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// sessionEndPayload is a SessionEnd hook input as Claude Code sends it.
func sessionEndPayload(transcript string) string {
	b, _ := json.Marshal(map[string]any{
		"session_id": spotterSession, "transcript_path": transcript, "cwd": "/home/marco/projects/spotter",
		"hook_event_name": "SessionEnd", "reason": "exit",
	})
	return string(b)
}

// hookLines reads a session's hooks.ndjson under the captures folder beside
// db: each line's channel and payload.
func hookLines(t *testing.T, db, sid string) (channels []string, payloads []json.RawMessage) {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(db), "captures", sid, "hooks.ndjson"))
	if err != nil {
		t.Fatalf("hooks.ndjson of %s: %v", sid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			ReceivedAt string          `json:"received_at"`
			Channel    string          `json:"channel"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("hooks.ndjson line %q: %v", sc.Text(), err)
		}
		if _, err := time.Parse(time.RFC3339, line.ReceivedAt); err != nil {
			t.Errorf("received_at %q: %v", line.ReceivedAt, err)
		}
		channels = append(channels, line.Channel)
		payloads = append(payloads, line.Payload)
	}
	return channels, payloads
}

// compact is a JSON text without insignificant spaces.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every hook payload is appended to the session's hooks.ndjson, the events
// the hook does not import included, in owner-only folders and files.
func TestHookKeepsPayloads(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	transcript := claudeTranscript(t, dir)
	prompt := `{"session_id":"` + spotterSession + `","transcript_path":"` + transcript + `","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"<b>fix</b> it"}`
	sent := []string{prompt, hookPayload("Stop", transcript)}
	for _, in := range sent {
		runHook(t, db, in)
	}
	channels, payloads := hookLines(t, db, spotterSession)
	if len(payloads) != len(sent) {
		t.Fatalf("hooks.ndjson has %d lines; want %d", len(payloads), len(sent))
	}
	for i, in := range sent {
		if channels[i] != "hook" || string(payloads[i]) != compact(t, in) {
			t.Errorf("line %d = %s %s; want channel hook and payload %s", i, channels[i], payloads[i], in)
		}
	}
	captures := filepath.Join(dir, "captures")
	for path, want := range map[string]os.FileMode{
		captures: 0o700, filepath.Join(captures, spotterSession): 0o700,
		filepath.Join(captures, spotterSession, "hooks.ndjson"): 0o600,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("Stat(%s) = %v, %v; want mode %v", path, fi, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hook.log")); err == nil {
		t.Errorf("hook.log written: %s", b)
	}
}

// A session id that is not a plain token is never used in a path: no
// file, and hook.log says why without naming it.
func TestHookKeepsNoPayloadOfBadSessionID(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	for _, id := range []string{"../escape", "a/b", ".."} {
		runHook(t, db, `{"session_id":"`+id+`","hook_event_name":"UserPromptSubmit","prompt":"hi"}`)
	}
	for _, p := range []string{filepath.Join(dir, "captures"), filepath.Join(dir, "escape")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Lstat(%s) = %v; want nothing written", p, err)
		}
	}
	logged, _ := os.ReadFile(filepath.Join(dir, "hook.log"))
	if strings.Count(string(logged), "not a plain token") != 3 || strings.Contains(string(logged), "escape") {
		t.Errorf("hook.log = %q; want three refusals that do not name the id", logged)
	}
}

// SessionEnd imports the transcript and ends the session at the hook's
// time; a later import (a Stop after the transcript grew) keeps the end.
func TestHookSessionEndSetsEndedAt(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	transcript := claudeTranscript(t, dir)
	before := time.Now()
	runHook(t, db, sessionEndPayload(transcript))
	after := time.Now()

	d := hookDetail(t, db)
	ended, err := time.Parse(time.RFC3339Nano, d.EndedAt)
	if err != nil || ended.Before(before.Truncate(time.Microsecond)) || ended.After(after) {
		t.Fatalf("ended_at = %q (%v); want the hook's time, between %v and %v", d.EndedAt, err, before, after)
	}
	if b, _ := json.Marshal(d); !strings.Contains(string(b), `"ended_at":"`+d.EndedAt+`"`) {
		t.Errorf("the session's JSON has no ended_at: %.300s", b)
	}
	steps := len(d.Steps)

	f, err := os.OpenFile(transcript, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"parentUuid":"40003bdd-2613-4975-83d5-36fb0b6bbc59","isSidechain":false,"userType":"external","cwd":"/home/marco/projects/spotter","sessionId":"` + spotterSession + `","version":"2.1.38","type":"user","message":{"role":"user","content":"one more thing"},"uuid":"9d48cbd2-6615-4dd8-87f6-38f12b8167d6","timestamp":"2026-02-10T21:17:00.000Z"}` + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	runHook(t, db, hookPayload("Stop", transcript))
	d = hookDetail(t, db)
	if len(d.Steps) <= steps {
		t.Errorf("%d steps after the Stop; want the new prompt imported (more than %d)", len(d.Steps), steps)
	}
	if got := d.EndedAt; got != ended.UTC().Format(time.RFC3339Nano) {
		t.Errorf("ended_at after a Stop = %q; want %q kept", got, ended.UTC().Format(time.RFC3339Nano))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hook.log")); err == nil {
		t.Errorf("hook.log written: %s", b)
	}
}

func hookDetail(t *testing.T, db string) store.SessionDetail {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Detail(context.Background(), spotterSession, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail = %v; want the session the hook named", err)
	}
	return d
}

// `service delete` removes the session's capture files, and a hook of the
// deleted session makes none again.
func TestDeleteCommandRemovesCaptureFiles(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	transcript := claudeTranscript(t, dir)
	runHook(t, db, hookPayload("Stop", transcript))
	folder := filepath.Join(dir, "captures", spotterSession)
	if _, err := os.Stat(filepath.Join(folder, "hooks.ndjson")); err != nil {
		t.Fatalf("no capture file before the delete: %v", err)
	}
	other := filepath.Join(dir, "captures", "other-session")
	runHook(t, db, `{"session_id":"other-session","hook_event_name":"UserPromptSubmit"}`)

	var out bytes.Buffer
	if err := run(context.Background(), []string{"delete", spotterSession, "--db", db}, &out, &out); err != nil {
		t.Fatalf("delete = %v: %s", err, &out)
	}
	if _, err := os.Stat(folder); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("capture folder after delete: Stat = %v; want it gone", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("capture folder of another session after delete: %v; want it kept", err)
	}

	for _, in := range []string{hookPayload("UserPromptSubmit", transcript), hookPayload("Stop", transcript), sessionEndPayload(transcript)} {
		runHook(t, db, in)
	}
	if _, err := os.Stat(folder); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a hook of the deleted session made its capture folder again: Stat = %v", err)
	}
	if n := sessionCount(t, db); n != 0 {
		t.Errorf("%d sessions after hooks of the deleted session; want 0", n)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hook.log")); err == nil {
		t.Errorf("hook.log written: %s", b)
	}
}
