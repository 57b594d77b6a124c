package store_test

import (
	"bufio"
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

// received is the time every test capture line is received at.
var received = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func mustAppendCapture(t testing.TB, s *store.Store, id, channel, payload string) {
	t.Helper()
	if err := s.AppendCapture(context.Background(), id, channel, json.RawMessage(payload), received); err != nil {
		t.Fatalf("AppendCapture(%s, %s) = %v; want no error", id, channel, err)
	}
}

// capturesDir is the captures folder beside the store file.
func capturesDir(s *store.Store) string { return filepath.Join(filepath.Dir(s.Path()), "captures") }

// captureLines reads a capture file's lines as JSON objects.
func captureLines(t testing.TB, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q of %s is not a JSON object: %v", sc.Text(), path, err)
		}
		out = append(out, line)
	}
	return out
}

// wantMode checks a file's permission bits.
func wantMode(t testing.TB, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("Stat(%s) = %v", path, err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %v; want %v", path, got, want)
	}
}

func wantGone(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lstat(%s) = %v; want it gone", path, err)
	}
}

func TestAppendCapture(t *testing.T) {
	s := mustOpen(t)
	mustAppendCapture(t, s, "a", store.ChannelHook, `{"session_id": "a",
		"hook_event_name": "Stop", "text": "<b>&</b>"}`)
	mustAppendCapture(t, s, "a", store.ChannelHook, `{"session_id":"a","hook_event_name":"SessionEnd"}`)
	mustAppendCapture(t, s, "a", store.ChannelOTel, `{"resourceLogs":[]}`)

	dir, err := s.CaptureDir("a")
	if err != nil || dir != filepath.Join(capturesDir(s), "a") {
		t.Fatalf("CaptureDir(a) = %q, %v; want captures/a beside the store", dir, err)
	}
	wantMode(t, capturesDir(s), 0o700)
	wantMode(t, dir, 0o700)
	for _, name := range []string{"hooks.ndjson", "otlp-logs.ndjson"} {
		wantMode(t, filepath.Join(dir, name), 0o600)
	}
	hooks := captureLines(t, filepath.Join(dir, "hooks.ndjson"))
	if len(hooks) != 2 {
		t.Fatalf("hooks.ndjson has %d lines; want 2", len(hooks))
	}
	first := hooks[0]
	if string(first["received_at"]) != `"2026-03-01T10:00:00Z"` || string(first["channel"]) != `"hook"` ||
		string(first["payload"]) != `{"session_id":"a","hook_event_name":"Stop","text":"<b>&</b>"}` {
		t.Errorf("first hook line = %s %s %s; want the time, channel hook and the payload compacted as given",
			first["received_at"], first["channel"], first["payload"])
	}
	otel := captureLines(t, filepath.Join(dir, "otlp-logs.ndjson"))
	if len(otel) != 1 || string(otel[0]["channel"]) != `"otel"` || string(otel[0]["payload"]) != `{"resourceLogs":[]}` {
		t.Errorf("otlp-logs.ndjson = %v; want one otel line", otel)
	}
}

func TestAppendCaptureRefuses(t *testing.T) {
	cases := []struct {
		name, id, channel, payload string
		want                       func(error) bool
	}{
		{"dot dot", "..", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"dot", ".", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"a path", "../x", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"a slash", "a/b", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"a space", "a b", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"empty", "", store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"too long", strings.Repeat("a", 201), store.ChannelHook, `{}`, isErr(store.ErrNotPlainID)},
		{"unknown channel", "a", "metrics", `{}`, func(err error) bool { return err != nil }},
		{"payload not JSON", "a", store.ChannelHook, `{not json`, func(err error) bool { return err != nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpen(t)
			err := s.AppendCapture(context.Background(), c.id, c.channel, json.RawMessage(c.payload), received)
			if !c.want(err) {
				t.Errorf("AppendCapture(%q, %s) = %v; want a refusal", c.id, c.channel, err)
			}
			entries, _ := os.ReadDir(filepath.Dir(s.Path()))
			for _, e := range entries {
				if e.Name() != "s.db" && !strings.HasPrefix(e.Name(), "s.db-") {
					t.Errorf("refused AppendCapture left %s beside the store", e.Name())
				}
			}
		})
	}
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func TestDeleteRemovesCaptures(t *testing.T) {
	s := mustOpen(t)
	for _, id := range []string{"a", "b"} {
		mustApply(t, s, newBatch(id))
		mustAppendCapture(t, s, id, store.ChannelHook, `{}`)
		mustAppendCapture(t, s, id, store.ChannelOTel, `{}`)
	}
	dirA, _ := s.CaptureDir("a")
	dirB, _ := s.CaptureDir("b")

	mustDelete(t, s, "a")
	wantGone(t, dirA)
	if _, err := os.Stat(filepath.Join(dirB, "hooks.ndjson")); err != nil {
		t.Errorf("Delete(a) touched the capture files of b: %v", err)
	}

	// A deleted session gets no capture file again.
	var de *store.DeletedError
	if err := s.AppendCapture(context.Background(), "a", store.ChannelHook, json.RawMessage(`{}`), received); !errors.As(err, &de) {
		t.Errorf("AppendCapture(a) after Delete = %v; want *DeletedError", err)
	}
	wantGone(t, dirA)

	// Files of a deleted session left behind (by a writer of an older
	// build, or a removal that failed) go with the next Delete of its id.
	if err := os.MkdirAll(dirA, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete(a) again = %v; want ErrNotFound", err)
	}
	wantGone(t, dirA)

	// An id never stored leaves every folder alone, its own included: it
	// is no deleted session.
	mustAppendCapture(t, s, "never-stored", store.ChannelHook, `{}`)
	if err := s.Delete(context.Background(), "never-stored"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete(never-stored) = %v; want ErrNotFound", err)
	}
	for _, id := range []string{"b", "never-stored"} {
		if dir, _ := s.CaptureDir(id); !exists(dir) {
			t.Errorf("Delete(never-stored) removed %s", dir)
		}
	}
}

// A delete overwrites the capture files before it removes them: a hard
// link made beforehand keeps the file's blocks, which then hold zeros, as
// many as the file had bytes, and none of its text.
func TestDeleteOverwritesCaptures(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	mustAppendCapture(t, s, "a", store.ChannelHook, `{"prompt":"CAPTUREMARKER-7d2e"}`)
	dir, _ := s.CaptureDir("a")
	file := filepath.Join(dir, "hooks.ndjson")
	before, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(before), "CAPTUREMARKER") {
		t.Fatalf("capture file = %q, %v; want the marker in it", before, err)
	}
	link := filepath.Join(t.TempDir(), "kept")
	if err := os.Link(file, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	mustDelete(t, s, "a")
	wantGone(t, dir)
	after, err := os.ReadFile(link)
	if err != nil || len(after) != len(before) || strings.Trim(string(after), "\x00") != "" {
		t.Errorf("the capture file's blocks after Delete = %q, %v; want %d zero bytes", after, err, len(before))
	}
}

// A session whose id is no plain token has no capture folder, and its
// Delete removes nothing outside the store: not the captures folder for
// "..", not the store's own folder.
func TestDeleteOfUnsafeIDRemovesNoFiles(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("keep"))
	mustAppendCapture(t, s, "keep", store.ChannelHook, `{}`)
	keep, _ := s.CaptureDir("keep")
	for _, id := range []string{"..", ".", "../keep", "keep/..", "../../x"} {
		b := newBatch(id)
		mustApply(t, s, b)
		mustDelete(t, s, id)
		if !exists(keep) || !exists(s.Path()) {
			t.Fatalf("Delete(%q) removed files outside its session", id)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Capture writers racing a Delete never leave files behind it: whichever
// commits first, the folder is gone once both are done.
func TestAppendCaptureRacingDelete(t *testing.T) {
	for i := range 20 {
		s := mustOpen(t)
		mustApply(t, s, newBatch("a"))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 20 {
				err := s.AppendCapture(context.Background(), "a", store.ChannelHook, json.RawMessage(`{}`), received)
				var de *store.DeletedError
				if errors.As(err, &de) {
					return
				}
				if err != nil {
					t.Errorf("AppendCapture = %v", err)
					return
				}
			}
		}()
		mustDelete(t, s, "a")
		<-done
		if dir, _ := s.CaptureDir("a"); exists(dir) {
			t.Fatalf("run %d: capture folder of a deleted session left after a racing append", i)
		}
	}
}

func TestEndSession(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	ctx := context.Background()
	end := time.Date(2026, 3, 1, 11, 0, 0, 500_000_000, time.FixedZone("", 3600))

	stamp := mustLatest(t, s)
	if changed, err := s.EndSession(ctx, "a", end); err != nil || !changed {
		t.Fatalf("EndSession(a) = %v, %v; want a change", changed, err)
	}
	if got := mustDetail(t, s, "a").EndedAt; got != "2026-03-01T10:00:00.5Z" {
		t.Errorf("ended_at = %q; want the end in UTC", got)
	}
	if cs, _ := mustChanges(t, s, stamp); len(cs) != 1 || cs[0].SessionID != "a" {
		t.Errorf("ChangesSince after EndSession = %+v; want a change of a", cs)
	}

	// An earlier or equal end keeps the later one; a push without
	// ended_at keeps it too.
	before := snapshot(t, s)
	for _, at := range []time.Time{end, end.Add(-time.Hour)} {
		if changed, err := s.EndSession(ctx, "a", at); err != nil || changed {
			t.Errorf("EndSession(a, %v) = %v, %v; want no change", at, changed, err)
		}
	}
	assertUnchanged(t, s, before)
	mustApply(t, s, stepsBatch("a", step("a", 6, "message")))
	if got := mustDetail(t, s, "a").EndedAt; got != "2026-03-01T10:00:00.5Z" {
		t.Errorf("ended_at after a push without it = %q; want it kept", got)
	}
	if _, err := s.EndSession(ctx, "a", end.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := mustDetail(t, s, "a").EndedAt; got != "2026-03-01T11:00:00.5Z" {
		t.Errorf("ended_at after a later end = %q; want the later end", got)
	}

	t.Run("unknown", func(t *testing.T) {
		before := snapshot(t, s)
		if _, err := s.EndSession(ctx, "nope", end); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("EndSession(nope) = %v; want ErrNotFound", err)
		}
		assertUnchanged(t, s, before)
	})
	t.Run("deleted", func(t *testing.T) {
		mustDelete(t, s, "a")
		before := snapshot(t, s)
		var de *store.DeletedError
		if _, err := s.EndSession(ctx, "a", end); !errors.As(err, &de) {
			t.Errorf("EndSession(a) after Delete = %v; want *DeletedError", err)
		}
		assertUnchanged(t, s, before)
	})
}
