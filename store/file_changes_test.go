package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// editStep is an edit of path at seq: a full write of newText when old is
// nil, else old replaced by newText.
func editStep(sid string, seq int, path string, old *string, newText string) obj {
	st := step(sid, seq, "edit")
	st["outcome"] = "ok"
	delete(st, "error")
	p := obj{"path": path, "new_string": newText, "is_full_write": old == nil}
	if old != nil {
		p["old_string"] = *old
	}
	st["payload"] = p
	return st
}

func commandStep(sid string, seq int, command, cwd string) obj {
	st := step(sid, seq, "command")
	st["payload"] = obj{"command": command, "cwd": cwd, "exit_code": 0}
	return st
}

func readStep(sid string, seq int, path string) obj {
	st := step(sid, seq, "read")
	st["payload"] = obj{"path": path}
	return st
}

func failedStep(st obj, outcome, decision string) obj {
	st["outcome"], st["decision"] = outcome, decision
	return st
}

func TestFileChanges(t *testing.T) {
	s := mustOpen(t)
	sid := "changes"
	b := newBatch(sid)
	b["steps"] = arr{
		step(sid, 1, "message"),
		// created, edited, one edit failed, one rejected, then removed
		editStep(sid, 2, "/tmp/ws/new.go", nil, "package main\n\nfunc a() {}\n"),
		editStep(sid, 3, "/tmp/ws/new.go", ptr("func a() {}"), "func a() { b() }"),
		failedStep(editStep(sid, 4, "/tmp/ws/new.go", ptr("package main"), "package other"), "failed", "accepted"),
		failedStep(editStep(sid, 5, "/tmp/ws/new.go", ptr("package main"), "package rejected"), "not_run", "rejected"),
		editStep(sid, 6, "/tmp/ws/new.go", ptr("\n\n"), "\n\nimport \"fmt\"\n\n"),
		commandStep(sid, 7, "go build && rm new.go", "/tmp/ws"),
		// edited, never created here: only the edits are known
		editStep(sid, 8, "/tmp/ws/old.go", ptr("x := 1"), "x := 2"),
		// read first, then written whole: it existed before
		readStep(sid, 9, "/tmp/ws/read.go"),
		editStep(sid, 10, "/tmp/ws/read.go", nil, "whole\n"),
		// created, then an edit whose old string is not in it
		editStep(sid, 11, "/tmp/ws/lost.go", nil, "one\n"),
		editStep(sid, 12, "/tmp/ws/lost.go", ptr("two"), "three"),
		// removed files the session never read or edited are not listed
		commandStep(sid, 13, "rm -rf /tmp/ws/build", "/tmp/ws"),
	}
	mustApply(t, s, b)

	got, err := s.FileChanges(context.Background(), sid)
	if err != nil {
		t.Fatalf("FileChanges = %v", err)
	}
	seven := int64(7)
	want := []store.FileChange{
		{Path: "/tmp/ws/new.go", Known: true, After: "package main\n\nimport \"fmt\"\n\nfunc a() { b() }\n", Created: true, DeletedAt: &seven, Failed: true},
		{Path: "/tmp/ws/old.go"},
		{Path: "/tmp/ws/read.go"},
		{Path: "/tmp/ws/lost.go", Created: true},
	}
	if len(got) != len(want) {
		t.Fatalf("FileChanges = %d files %+v; want %d", len(got), got, len(want))
	}
	edits := map[string][]int64{"/tmp/ws/new.go": {2, 3, 4, 5, 6}, "/tmp/ws/old.go": {8}, "/tmp/ws/read.go": {10}, "/tmp/ws/lost.go": {11, 12}}
	for i, w := range want {
		g := got[i]
		var seqs []int64
		for _, e := range g.Edits {
			seqs = append(seqs, e.Seq)
		}
		w.Edits, g.Edits = nil, nil
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("FileChanges()[%d] = %s; want %s", i, gj, wj)
		}
		if ws := edits[w.Path]; fmt.Sprint(seqs) != fmt.Sprint(ws) {
			t.Errorf("edits of %s = %v; want %v", w.Path, seqs, ws)
		}
	}
	if e := got[0].Edits; !e[2].Failed || !e[3].Failed || e[0].Failed || e[1].New == nil || *e[1].New != "func a() { b() }" {
		t.Errorf("edits of new.go = %+v; want 4 and 5 failed, the strings kept", e)
	}

	// Remembered per change stamp: a later write shows at once, and what
	// a caller changes in its copy is not remembered.
	got[0].Edits[0].Seq = 99
	mustApply(t, s, stepsBatch(sid, editStep(sid, 14, "/tmp/ws/old.go", ptr("x := 2"), "x := 3")))
	again, err := s.FileChanges(context.Background(), sid)
	if err != nil || len(again[1].Edits) != 2 || again[1].Edits[1].Seq != 14 || again[0].Edits[0].Seq != 2 {
		t.Errorf("FileChanges after a push = %+v, %v; want old.go's new edit, step 14", again, err)
	}
	again[0].Edits[0].Seq = 99
	if third, _ := s.FileChanges(context.Background(), sid); third[0].Edits[0].Seq != 2 {
		t.Errorf("FileChanges remembered a caller's change: first edit seq %d", third[0].Edits[0].Seq)
	}

	if _, err := s.FileChanges(context.Background(), "never-stored"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileChanges(unknown) = %v; want ErrNotFound", err)
	}
}

// Edits longer than MaxChangeBytes are listed without their text, and the
// file's content is then not known.
func TestFileChangesBounded(t *testing.T) {
	s := mustOpen(t)
	sid := "big"
	b := newBatch(sid)
	big := strings.Repeat("line of a large generated file\n", store.MaxChangeBytes/31+1)
	b["steps"] = arr{
		step(sid, 1, "message"),
		editStep(sid, 2, "/tmp/ws/gen.go", nil, "small\n"),
		editStep(sid, 3, "/tmp/ws/gen.go", ptr("small\n"), big),
	}
	mustApply(t, s, b)
	got, err := s.FileChanges(context.Background(), sid)
	if err != nil || len(got) != 1 {
		t.Fatalf("FileChanges = %+v, %v", got, err)
	}
	f := got[0]
	if f.Known || f.After != "" || f.Edits[1].New != nil || !f.Edits[1].Cut || f.Edits[0].New == nil {
		t.Errorf("FileChanges past the bound: known %v, edits %+v; want the large edit cut and the content unknown", f.Known, f.Edits)
	}
}

// The files a command removes are read from its words as a shell reads
// them: quoted paths, several commands, a cd before the rm, a comment;
// a line whose words would be expanded or that does more than run
// commands names none.
func TestRemovedPaths(t *testing.T) {
	for _, c := range []struct {
		command, cwd string
		want         []string
	}{
		{"rm new.go", "/tmp/ws", []string{"/tmp/ws/new.go"}},
		{"go build && rm new.go", "/tmp/ws", []string{"/tmp/ws/new.go"}},
		{`rm "/Users/p/JOKE.md"`, "/tmp/ws", []string{"/Users/p/JOKE.md"}},
		{`rm 'a b.txt'`, "/tmp/ws", []string{"/tmp/ws/a b.txt"}},
		{`rm -f "x.go" y.go; git rm --cached z.go`, "/tmp/ws", []string{"/tmp/ws/x.go", "/tmp/ws/y.go", "/tmp/ws/z.go"}},
		{`rm a"b"'c'`, "/tmp/ws", []string{"/tmp/ws/abc"}},
		{"cd sub && rm a.go", "/tmp/ws", []string{"/tmp/ws/sub/a.go"}},
		{"cd /other; git rm b.go", "/tmp/ws", []string{"/other/b.go"}},
		{"rm a.go # the old one", "/tmp/ws", []string{"/tmp/ws/a.go"}},
		{"rm a.go\n# done\nrm b.go", "/tmp/ws", []string{"/tmp/ws/a.go", "/tmp/ws/b.go"}},
		{"rm a", "", []string{"/root/a"}}, // no cwd: the workspace root
		{"echo rm a", "/tmp/ws", nil},
		// Not for certain: nothing.
		{"rm *.go", "/tmp/ws", nil},
		{`rm "$HOME/x"`, "/tmp/ws", nil},
		{"rm ~/x", "/tmp/ws", nil},
		{"rm x > /dev/null", "/tmp/ws", nil},
		{`rm "unclosed`, "/tmp/ws", nil},
		{`rm x\ y "q\"uote"`, "/tmp/ws", []string{"/tmp/ws/x y", `/tmp/ws/q"uote`}},
		{"cd - && rm a", "/tmp/ws", nil},
		{"cd && rm a", "/tmp/ws", nil},
		{"(cd sub; rm a)", "/tmp/ws", nil},
		{"find . -name x | xargs rm", "/tmp/ws", nil},
		{"make || rm a", "/tmp/ws", nil},
	} {
		if got := store.RemovedPaths(c.command, c.cwd, "/root"); !slices.Equal(got, c.want) {
			t.Errorf("RemovedPaths(%q, %q) = %q; want %q", c.command, c.cwd, got, c.want)
		}
	}
}

// The Codex sample writes a file with a here-document, reads it with cat,
// changes a line with apply_patch and removes it with rm. Its Changes
// show the file created by the command with what the here-document
// held, the patch applied to it, and the removal; its report counts the
// command's write and read. What is expected is read from the raw
// rollout: the here-document between its first line and EOF, the patch's
// - and + lines.
func TestFileChangesOfAFileWrittenByACommand(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "adapters", "codex", "testdata", "agentlogs_crud_rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var heredoc, patch string
	for _, line := range strings.Split(string(raw), "\n") {
		var rec struct {
			Payload struct{ Type, Name, Arguments, Input string }
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch p := rec.Payload; {
		case p.Name == "exec_command" && strings.Contains(p.Arguments, "<<'EOF'"):
			var args struct{ Cmd string }
			if err := json.Unmarshal([]byte(p.Arguments), &args); err != nil {
				t.Fatal(err)
			}
			heredoc = args.Cmd
		case p.Name == "apply_patch":
			patch = p.Input
		}
	}
	first, rest, _ := strings.Cut(heredoc, "\n")
	file := strings.TrimSpace(first[strings.LastIndex(first, ">")+1:])
	content := strings.TrimSuffix(rest, "EOF") // each line of the body ends in a new line
	var minus, plus string
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "-"):
			minus = l[1:]
		case strings.HasPrefix(l, "+"):
			plus = l[1:]
		}
	}
	if file == "" || !strings.Contains(content, minus) || minus == "" {
		t.Fatalf("the sample is not the one this test reads: file %q, content %q, patch %q", file, content, patch)
	}

	// The adapter's batch of the rollout (its golden file).
	golden, err := os.ReadFile(filepath.Join("..", "adapters", "codex", "testdata", "golden", "agentlogs_crud_rollout.json"))
	if err != nil {
		t.Fatal(err)
	}
	var batches []*store.Batch
	if err := json.Unmarshal(golden, &batches); err != nil || len(batches) != 1 {
		t.Fatalf("golden: %d batches, %v; want one", len(batches), err)
	}
	s := mustOpen(t)
	b := batches[0]
	sid, rmSeq := b.Session.ID, int64(0)
	for _, st := range b.Steps {
		if c := st.Payload.Command; st.Type == store.TypeCommand && c != nil && *c == "rm "+file {
			rmSeq = st.Seq
		}
	}
	if _, err := s.Apply(context.Background(), b); err != nil || rmSeq == 0 {
		t.Fatalf("Apply = %v; the rm step's seq %d", err, rmSeq)
	}
	changes, err := s.FileChanges(context.Background(), sid)
	if err != nil || len(changes) != 1 {
		t.Fatalf("FileChanges = %+v, %v; want one file", changes, err)
	}
	f := changes[0]
	after := strings.Replace(content, minus, plus, 1)
	if f.Path != file || !f.Created || !f.Known || f.Before != "" || f.After != after || f.DeletedAt == nil || *f.DeletedAt != rmSeq {
		t.Errorf("FileChanges()[0] = path %q created %v known %v before %q after %q deleted at %v; want %q created, known, after %q, deleted at %d",
			f.Path, f.Created, f.Known, f.Before, f.After, f.DeletedAt, file, after, rmSeq)
	}
	if len(f.Edits) != 2 || !f.Edits[0].Command || !f.Edits[0].FullWrite || f.Edits[0].New == nil || *f.Edits[0].New != content || f.Edits[1].Command {
		t.Errorf("FileChanges()[0].Edits = %+v; want the command's whole write of the here-document, then the patch", f.Edits)
	}
	d, err := s.Detail(context.Background(), sid, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := store.FileTouched{Path: file, Created: 1, Edited: 1, Read: 1, ByCommand: 2}
	if len(d.Report.Files) != 1 || d.Report.Files[0] != want {
		t.Errorf("Report.Files = %+v; want %+v (the here-document's write and cat's read by commands)", d.Report.Files, want)
	}
}

// A path recorded relative to the workspace is placed in its root: a file
// edited by its relative path and by its whole path is one entry, and a
// rm with no working folder recorded removes the file read by its
// relative path.
func TestFileChangesPlaceRelativePaths(t *testing.T) {
	s := mustOpen(t)
	sid := "rel" // root /tmp/ws-rel
	b := newBatch(sid)
	b["steps"] = arr{
		step(sid, 1, "message"),
		editStep(sid, 2, "src/a.go", nil, "package a\n"),
		editStep(sid, 3, "/tmp/ws-rel/src/a.go", ptr("package a"), "package b"),
		readStep(sid, 4, "notes.md"),
		commandStep(sid, 5, "rm notes.md", ""),
	}
	mustApply(t, s, b)
	got, err := s.FileChanges(context.Background(), sid)
	if err != nil || len(got) != 2 {
		t.Fatalf("FileChanges = %+v, %v; want two files", got, err)
	}
	if a := got[0]; a.Path != "/tmp/ws-rel/src/a.go" || len(a.Edits) != 2 || !a.Known || a.After != "package b\n" {
		t.Errorf("FileChanges()[0] = %+v; want /tmp/ws-rel/src/a.go with both edits, after package b", a)
	}
	if n := got[1]; n.Path != "/tmp/ws-rel/notes.md" || n.DeletedAt == nil || *n.DeletedAt != 5 {
		t.Errorf("FileChanges()[1] = %+v; want /tmp/ws-rel/notes.md removed at step 5", n)
	}
}

// Relative paths are placed in the workspace root, but not without
// bound: 2,000 edits of short relative names in a root of 64 KiB give
// Changes paths of a small multiple of the batch, not 2,000 times the
// root; in a root of ordinary length every one is placed.
func TestFileChangesOfManyRelativePathsStayBounded(t *testing.T) {
	s := mustOpen(t)
	for _, root := range []string{"/" + strings.Repeat("r", 64<<10), "/tmp/ws"} {
		sid := fmt.Sprintf("rel%d", len(root))
		b := newBatch(sid)
		set(b, "session.workspace.root", root)
		steps := arr{step(sid, 1, "message")}
		for i := range 2000 {
			steps = append(steps, editStep(sid, i+2, fmt.Sprintf("f%d.go", i), nil, "x"))
		}
		b["steps"] = steps
		mustApply(t, s, b)
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.FileChanges(context.Background(), sid)
		if err != nil || len(got) != 2000 {
			t.Fatalf("FileChanges(root of %d bytes) = %d files, %v; want 2,000", len(root), len(got), err)
		}
		size, placed := 0, 0
		for _, f := range got {
			size += len(f.Path)
			if strings.HasPrefix(f.Path, root+"/") {
				placed++
			}
		}
		if size > 2*len(body) {
			t.Errorf("FileChanges(root of %d bytes): paths of %d bytes; want at most twice the batch, %d", len(root), size, 2*len(body))
		}
		if root == "/tmp/ws" && placed != 2000 {
			t.Errorf("FileChanges(root /tmp/ws): %d of 2,000 placed in it; want all", placed)
		}
	}
}
