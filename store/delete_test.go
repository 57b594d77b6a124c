package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestDelete(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("a"))
	b := newBatch("b")
	set(b, "session.agent.kind", "otheragent")
	mustApply(t, s, b)
	keep := mustDetail(t, s, "b")
	stamp := mustLatest(t, s)

	mustDelete(t, s, "a")

	if _, err := s.Detail(context.Background(), "a", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Detail(a) after Delete = %v; want ErrNotFound", err)
	}
	if got := mustDetail(t, s, "b"); !reflect.DeepEqual(got, keep) {
		t.Errorf("Detail(b) after Delete(a) =\n%+v\nwant\n%+v", got, keep)
	}
	l := mustList(t, s, "")
	if got := listIDs(l); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("List() after Delete(a) = %v; want [b]", got)
	}
	if want := []store.AgentCount{{Kind: "otheragent", Sessions: 1}}; !reflect.DeepEqual(l.Agents, want) {
		t.Errorf("List().Agents after Delete(a) = %+v; want %+v", l.Agents, want)
	}
	if l := mustList(t, s, "testagent"); len(l.Sessions) != 0 {
		t.Errorf("List(testagent) after Delete(a) = %v; want none", listIDs(l))
	}

	// Every row of a is gone; only its id stays, in the tombstone.
	dump := dumpTables(t, s.Path())
	if strings.Contains(dump, `"a-`) || strings.Contains(dump, "ws-a") {
		t.Errorf("tables after Delete(a) still hold records of a:\n%s", dump)
	}
	if !strings.Contains(dump, "table tombstones (1 rows)\n\"a\"|") {
		t.Errorf("tables after Delete(a) have no tombstone for a:\n%s", dump)
	}

	cs, latest := mustChanges(t, s, stamp)
	if len(cs) != 1 || cs[0].SessionID != "a" || cs[0].Stamp <= stamp || latest != cs[0].Stamp {
		t.Errorf("ChangesSince(%d) after Delete(a) = %+v, %d; want one change of a, later", stamp, cs, latest)
	}

	t.Run("tombstone refuses a push", func(t *testing.T) {
		before := snapshot(t, s)
		var de *store.DeletedError
		if err := applyErr(t, s, newBatch("a")); !errors.As(err, &de) {
			t.Errorf("Apply(a) after Delete = %v; want *DeletedError", err)
		}
		assertUnchanged(t, s, before)
	})
	for _, id := range []string{"a", "never-stored"} {
		t.Run("delete again "+id, func(t *testing.T) {
			before := snapshot(t, s)
			if err := s.Delete(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Delete(%s) = %v; want ErrNotFound", id, err)
			}
			assertUnchanged(t, s, before)
		})
	}
}

// TestDeleteOverwrites checks the secure-delete promise: after Delete
// returns, no byte of the session's content is left in the database file,
// the search index's file or their write-ahead logs.
func TestDeleteOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})

	marker := func(place string) string {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		return place + "-" + hex.EncodeToString(b[:])
	}
	m := map[string]string{}
	for _, place := range []string{"stdout", "stdout-rewritten", "stderr", "text", "new-string", "raw", "patch", "root", "label", "source-file", "error", "reason",
		"command", "old-string", "edit-path", "read-path", "tool-name", "repo", "error-type", "cwd"} {
		m[place] = marker(place)
	}
	b := newBatch("gone")
	// A long output spills into overflow pages; the marker sits in the middle.
	big := strings.Repeat("output line of a long build\n", 4000)
	set(b, "steps[1].payload.stdout", big+m["stdout-rewritten"]+big)
	set(b, "steps[1].payload.stderr", m["stderr"])
	set(b, "steps[0].payload.text", "Please "+m["text"])
	set(b, "steps[2].payload.new_string", m["new-string"])
	set(b, "steps[2].payload.structured_patch", arr{m["patch"]})
	set(b, "steps[2].error.message", m["error"])
	set(b, "steps[4].payload.raw", obj{"secret": m["raw"]})
	set(b, "steps[1].flags[0].reason", m["reason"])
	set(b, "steps[1].payload.command", "rm -rf "+m["command"])
	set(b, "steps[1].payload.cwd", m["cwd"])
	set(b, "steps[2].payload.old_string", m["old-string"])
	set(b, "steps[2].payload.path", "handlers/"+m["edit-path"]+".go")
	set(b, "steps[2].error.type", m["error-type"])
	set(b, "steps[3].payload.path", m["read-path"])
	set(b, "steps[4].payload.tool_name", m["tool-name"])
	set(b, "session.workspace.repo", m["repo"])
	set(b, "session.workspace.root", "/home/"+m["root"])
	set(b, "actors[0].label", m["label"])
	set(b, "segments[0].source_files", arr{"/log/" + m["source-file"]})
	mustApply(t, s, b)
	// What a reviewer wrote goes with the session too: a note on a step,
	// edited so its first text sits in an older page, and the verdict.
	for _, place := range []string{"note", "note-edited", "verdict-note", "verdict-reviewer"} {
		m[place] = marker(place)
	}
	n, err := s.AddNote(context.Background(), "gone", store.NoteInput{Seq: 2, Author: "ann", Text: "check " + m["note"]})
	if err != nil {
		t.Fatalf("AddNote = %v", err)
	}
	if _, err := s.AddNote(context.Background(), "gone", store.NoteInput{Seq: 3, Author: "ann", Text: "second"}); err != nil {
		t.Fatalf("AddNote = %v", err)
	}
	if err := s.SetVerdict(context.Background(), "gone", store.Verdict{State: "needs_attention", Note: m["verdict-note"], Reviewer: m["verdict-reviewer"]}); err != nil {
		t.Fatalf("SetVerdict = %v", err)
	}
	// Token usage goes with it too: the model name is the marker.
	m["usage-model"] = marker("usage-model")
	ub := mustParse(t, b)
	ub.Usage = []store.UsageRecord{{ID: "msg_1", At: "2026-01-01T00:00:00Z", Model: m["usage-model"], ActorID: "root", TurnID: "t1", Tokens: pricing.Tokens{Input: 7}, Source: store.UsageFromFile}}
	if _, err := s.Apply(context.Background(), ub); err != nil {
		t.Fatalf("Apply(usage) = %v", err)
	}
	keepMarker := marker("keep")
	k := newBatch("keep")
	set(k, "steps[1].payload.stdout", keepMarker)
	mustApply(t, s, k)

	// Deleting another session checkpoints the log, so the first version of
	// the steps sits in the database file and the rewrite below in the log.
	mustApply(t, s, newBatch("other"))
	// With the index current, no catch-up holds its lock during Delete's
	// log truncation, so the truncation is done before Delete returns, not
	// retried in the background after the rewrite below (which would then
	// checkpoint the rewrite over the first version too).
	if err := s.CatchUpIndex(); err != nil {
		t.Fatalf("CatchUpIndex() = %v", err)
	}
	mustDelete(t, s, "other")
	set(b, "steps[1].payload.stdout", big+m["stdout"]+big)
	mustApply(t, s, b)
	if _, err := s.EditNote(context.Background(), "gone", n.ID, store.NoteInput{Author: "ann", Text: "check " + m["note-edited"]}); err != nil {
		t.Fatalf("EditNote = %v", err)
	}

	files := func() []byte { return storeFiles(t, path) }
	// The search index holds each marker's random part as a term of its
	// own (the tokenizer splits at "-"), in its segment b-trees as well as
	// its content copy: look for the part too.
	word := func(mk string) string { _, hexPart, _ := strings.Cut(mk, "-"); return hexPart }
	indexed := map[string]bool{"patch": false, "label": false, "source-file": false, "usage-model": false} // not searched
	// The grep must be able to find what it looks for.
	before := files()
	for place, mk := range m {
		if !bytes.Contains(before, []byte(mk)) || !bytes.Contains(before, []byte(word(mk)[8:])) {
			t.Fatalf("marker %s not found in the store files before Delete; the check below would prove nothing", place)
		}
		if _, no := indexed[place]; no || strings.HasPrefix(place, "note") || strings.HasPrefix(place, "verdict") || strings.HasPrefix(place, "stdout") { // glued to the text around it
			continue
		}
		if r, err := s.Search(context.Background(), store.SearchQuery{Q: word(mk)}); err != nil || len(r.Hits) != 1 {
			t.Fatalf("Search(%s marker) before Delete = %+v, %v; want one hit", place, r.Hits, err)
		}
	}

	mustDelete(t, s, "gone")

	// Read while the store is still open, as a running server leaves it:
	// Delete itself must have overwritten the rows and truncated the log.
	check := func(when string) {
		t.Helper()
		after := files()
		for place, mk := range m {
			if bytes.Contains(after, []byte(mk)) || bytes.Contains(after, []byte(word(mk)[8:])) {
				t.Errorf("%s: the %s marker of the deleted session is still in the store files", when, place)
			}
		}
		if !bytes.Contains(after, []byte(keepMarker)) {
			t.Errorf("%s: the marker of the kept session is missing from the store files", when)
		}
	}
	check("after Delete, store open")
	for place, mk := range m {
		if r, err := s.Search(context.Background(), store.SearchQuery{Q: word(mk)}); err != nil || len(r.Hits) != 0 {
			t.Errorf("Search(%s marker) after Delete = %+v, %v; want no hits", place, r.Hits, err)
		}
	}
	for _, log := range []string{path + "-wal", store.IndexPath(path) + "-wal"} {
		if wal, err := os.Stat(log); err == nil && wal.Size() != 0 {
			t.Errorf("write-ahead log %s after Delete is %d bytes; want it truncated", filepath.Base(log), wal.Size())
		}
	}

	// Closing checkpoints and removes the log; nothing may come back.
	closed = true
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	check("after Close")
}

// A reader in another process that holds an old snapshot keeps the log
// from being checkpointed and truncated. Delete succeeds all the same, as
// the deletion committed; the overwrite finishes in the background once
// the reader ends, or at the next Open if the process stopped first.
func TestDeleteWhileReading(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "finished in the background"
		if restart {
			name = "resumed at the next open"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "s.db")
			s, err := store.Open(ctx, path)
			if err != nil {
				t.Fatalf("Open(%s) = %v", path, err)
			}
			defer func() { s.Close() }()
			var rnd [24]byte
			rand.Read(rnd[:])
			marker := "gone-" + hex.EncodeToString(rnd[:])
			b := newBatch("a")
			set(b, "steps[1].payload.stdout", marker)
			mustApply(t, s, b)
			// Deleting another session puts a's rows into the database file.
			mustApply(t, s, newBatch("other"))
			mustDelete(t, s, "other")

			reader, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			end := sqlitex.Transaction(reader)
			if err := sqlitex.Execute(reader, `SELECT count(*) FROM steps`, nil); err != nil {
				t.Fatal(err)
			}

			if err := s.Delete(ctx, "a"); err != nil {
				t.Fatalf("Delete(a) while another connection holds a snapshot = %v; want nil: the deletion committed", err)
			}
			if _, err := s.Detail(ctx, "a", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Detail(a) after Delete = %v; want ErrNotFound", err)
			}
			if !bytes.Contains(storeFiles(t, path), []byte(marker)) {
				t.Fatal("the marker left the store files while the reader held its snapshot; this test would prove nothing")
			}
			if restart {
				if err := s.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
			}
			var endErr error
			end(&endErr)
			reader.Close()
			if restart {
				if !bytes.Contains(storeFiles(t, path), []byte(marker)) {
					t.Fatal("the marker left the store files with no store open; this test would prove nothing")
				}
				if s, err = store.Open(ctx, path); err != nil {
					t.Fatalf("Open(%s) again = %v", path, err)
				}
			}
			for deadline := time.Now().Add(5 * time.Second); bytes.Contains(storeFiles(t, path), []byte(marker)); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("5 s after the reader ended, the deleted session's content is still in the store files")
				}
			}
		})
	}
}

// storeFiles is the content of every file of the store at path
// (store.Files: the database and its search index, each with its -wal,
// -shm and -journal files), end to end.
func storeFiles(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	files := store.Files(path)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read %s: %v", name, err)
		}
		all = append(all, data...)
	}
	if !slices.Contains(files, store.IndexPath(path)) {
		t.Fatalf("store.Files(%s) = %v; want the search index's file among them", path, files)
	}
	return all
}
