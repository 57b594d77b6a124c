package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

func mustOpen(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// records builds a session of n message steps spread over turns.
func records(sid string, turns, n int) adapters.Records {
	at := "2026-01-02T03:04:05Z"
	r := adapters.Records{
		Header:   store.SessionHeader{ID: sid, Agent: store.Agent{Kind: "test", Version: "1"}, Workspace: store.Workspace{Root: "/w"}, StartedAt: at},
		Segments: []store.Segment{{Index: 0, StartReason: "start", StartedAt: at}},
		Actors:   []store.Actor{{ID: "root", Type: "root"}, {ID: "sub", ParentID: "root", Type: "subagent"}},
	}
	for i := range turns {
		r.Turns = append(r.Turns, store.Turn{ID: fmt.Sprintf("t%d", i), ActorID: "root", Index: int64(i + 1), StartedAt: at})
	}
	for i := range n {
		r.Steps = append(r.Steps, store.Step{
			ID: fmt.Sprintf("s%d", i), TurnID: fmt.Sprintf("t%d", i%turns), ActorID: "root", At: at,
			Type: store.TypeMessage, Decision: "n/a", Outcome: "ok", ContentStatus: store.ContentInline,
			Payload: store.Payload{Role: "assistant", Text: adapters.Text("hi")},
		})
	}
	return r
}

func mustParse(t testing.TB, b *store.Batch) {
	t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ParseBatch(body); err != nil {
		var inv *store.InvalidError
		if errors.As(err, &inv) {
			t.Fatalf("ParseBatch = %v %+v", err, inv.Problems)
		}
		t.Fatalf("ParseBatch = %v", err)
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		name        string
		turns, n    int
		wantBatches []int // steps per batch
		wantTurns   []int
	}{
		{"small", 2, 3, []int{3}, []int{2}},
		{"exactly the limit", 1, store.MaxItems, []int{store.MaxItems}, []int{1}},
		{"steps over the limit", 3, 2*store.MaxItems + 1, []int{store.MaxItems, store.MaxItems, 1}, []int{3, 0, 0}},
		{"turns over the limit", store.MaxItems + 2, 4, []int{0, 4}, []int{store.MaxItems, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batches := adapters.Split(records("s-"+strings.ReplaceAll(c.name, " ", "-"), c.turns, c.n))
			if len(batches) != len(c.wantBatches) {
				t.Fatalf("Split gave %d batches; want %d", len(batches), len(c.wantBatches))
			}
			st := mustOpen(t)
			seq := int64(1)
			for i, b := range batches {
				if len(b.Steps) != c.wantBatches[i] || len(b.Turns) != c.wantTurns[i] {
					t.Errorf("batch %d has %d steps, %d turns; want %d, %d", i, len(b.Steps), len(b.Turns), c.wantBatches[i], c.wantTurns[i])
				}
				if (i == 0) != (len(b.Segments) > 0) || (i == 0) != (len(b.Actors) > 0) {
					t.Errorf("batch %d has %d segments and %d actors; want them all in the first", i, len(b.Segments), len(b.Actors))
				}
				for _, s := range b.Steps {
					if s.Seq != seq || s.SessionID != b.Session.ID {
						t.Fatalf("step %s has seq %d session %q; want %d and %q", s.ID, s.Seq, s.SessionID, seq, b.Session.ID)
					}
					seq++
				}
				mustParse(t, b)
				if _, err := st.Apply(context.Background(), b); err != nil {
					t.Fatalf("Apply(batch %d) = %v; want nil (parents first)", i, err)
				}
			}
		})
	}
}

func TestSplitRepeatedIDs(t *testing.T) {
	r := records("s", 1, 3)
	r.Steps[2].ID = r.Steps[0].ID
	r.Turns = append(r.Turns, r.Turns[0])
	b := adapters.Split(r)[0]
	if len(b.Turns) != 1 {
		t.Errorf("a repeated turn id gave %d turns; want 1", len(b.Turns))
	}
	if b.Steps[2].ID != "s0#2" {
		t.Errorf("a repeated step id became %q; want s0#2", b.Steps[2].ID)
	}
	mustParse(t, b)
}

// TestKeepStoredSeqs checks that the builder numbers a session so that it
// agrees with the seqs the store holds for it (Unit.Stored), before it is
// split, and that a step Join adds with a provisional seq keeps it.
func TestKeepStoredSeqs(t *testing.T) {
	cases := []struct {
		name   string
		stored map[string]int64
		read   []string // step ids in reading order, numbered 1..n
		want   []int64
	}{
		{"new session", nil, []string{"a", "b"}, []int64{1, 2}},
		{"same order, grown", map[string]int64{"a": 1, "b": 2}, []string{"a", "b", "c"}, []int64{1, 2, 3}},
		{"new step in the middle", map[string]int64{"a": 1, "b": 2}, []string{"a", "x", "b"}, []int64{1, 3, 2}},
		{"stored seqs differ", map[string]int64{"a": 7, "b": 3}, []string{"a", "b", "c"}, []int64{7, 3, 8}},
		{"a provisional step gets its place", map[string]int64{"a": 1, "x": adapters.ProvisionalSeq + 1}, []string{"a", "x", "b"}, []int64{1, 2, 3}},
		{"only provisional steps stored", map[string]int64{"x": adapters.ProvisionalSeq + 1}, []string{"a", "x"}, []int64{1, 2}},
		{"renumbering leaves provisional seqs", map[string]int64{"a": 7, "x": adapters.ProvisionalSeq + 1}, []string{"a", "x", "c"}, []int64{7, 8, 9}},
	}
	at := mustTime(t, "2026-01-02T03:04:05Z")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := adapters.Unit{ID: "s", Stored: func(string) (adapters.Stored, error) { return adapters.Stored{Seqs: c.stored}, nil }}
			b := adapters.NewBuilder(u, "test")
			s := b.Stream("f")
			for _, id := range c.read {
				s.Message(nil, id, "assistant", id, at)
			}
			b.Join = func(r *adapters.Records, _ []*adapters.SpilledStep, _ adapters.Stored) func(*store.Step) {
				// A step telemetry alone knows comes with its provisional seq.
				otel := r.Steps[0]
				otel.ID, otel.Seq = "otel", adapters.ProvisionalSeq+2
				r.Steps = append(r.Steps, otel)
				return nil
			}
			_, batch := built(t, b)
			for i, id := range c.read {
				if s := stepByID(t, batch, id); s.Seq != c.want[i] {
					t.Errorf("step %s got seq %d; want %d", s.ID, s.Seq, c.want[i])
				}
			}
			if s := stepByID(t, batch, "otel"); s.Seq != adapters.ProvisionalSeq+2 {
				t.Errorf("a provisional step got seq %d; want it kept", s.Seq)
			}
		})
	}
}

// TestStoredLookupFails checks that a session whose stored records cannot
// be read is not written (it could undo them) and is reported.
func TestStoredLookupFails(t *testing.T) {
	u := adapters.Unit{ID: "s", Stored: func(string) (adapters.Stored, error) { return adapters.Stored{}, errors.New("store busy") }}
	b := adapters.NewBuilder(u, "test")
	b.Stream("f.jsonl").Message(nil, "a", "assistant", "hi", mustTime(t, "2026-01-02T03:04:05Z"))
	sess := b.Finish()
	if len(sess.Batches) != 0 || len(sess.Problems) != 1 || sess.Problems[0].Path != "f.jsonl" {
		t.Errorf("Finish = %d batches, problems %v; want none and one problem naming f.jsonl", len(sess.Batches), sess.Problems)
	}
}

func TestPatchFiles(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: /w/new.txt\n+hello\n*** Update File: /w/a.go\n@@\n-old\n+new\n*** Delete File: /w/gone\n*** End Patch"
	got := adapters.PatchFiles(patch)
	want := []adapters.PatchFile{
		{Path: "/w/new.txt", Op: "add", Text: "*** Add File: /w/new.txt\n+hello"},
		{Path: "/w/a.go", Op: "update", Text: "*** Update File: /w/a.go\n@@\n-old\n+new"},
		{Path: "/w/gone", Op: "delete", Text: "*** Delete File: /w/gone"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PatchFiles = %q; want %q", got, want)
	}
	if got := adapters.PatchFiles("just text"); len(got) != 0 {
		t.Errorf("PatchFiles(text) = %v; want none", got)
	}
}

// A patch's relative paths are made absolute against the working folder,
// but a patch of many short names in a long folder keeps the paths past
// the session's bound (Builder.Folder: twice what was read and 64 KiB of
// folders copied) as the patch wrote them: every file is still an edit,
// and the paths stay a small multiple of the patch.
func TestPatchEditsOfALongFolder(t *testing.T) {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "*** Add File: f%d\n+x\n", i)
	}
	b.WriteString("*** End Patch")
	patch := b.String()
	for _, cwd := range []string{"/w", "/" + strings.Repeat("d", 64<<10)} {
		bld := adapters.NewBuilder(adapters.Unit{ID: "s"})
		bld.Read(len(patch) + len(cwd)) // the patch's line and the folder's
		edits := bld.PatchEdits(patch, cwd)
		size, joined := 0, 0 // the bytes and count of the paths made absolute
		for _, e := range edits {
			if strings.HasPrefix(e.Path, cwd+"/") {
				size += len(e.Path)
				joined++
			}
		}
		if limit := 3*(len(patch)+len(cwd)) + 64<<10; len(edits) != 10000 || size > limit || joined == 0 {
			t.Errorf("PatchEdits(10,000 files, a folder of %d bytes) = %d edits, %d joined to it, paths of %d bytes; want 10,000, some joined, at most %d",
				len(cwd), len(edits), joined, size, limit)
		}
		if cwd == "/w" && joined != 10000 {
			t.Errorf("PatchEdits(10,000 files in /w): %d joined to it; want all", joined)
		}
	}
}

func TestReadLines(t *testing.T) {
	var got []string
	problems := adapters.ReadLines(adapters.File{Path: "f.jsonl", Body: strings.NewReader("a\r\n\nb\nc")}, func(n int, line []byte, term bool) {
		got = append(got, fmt.Sprintf("%d:%s:%v", n, line, term))
	})
	want := "[1:a:true 2::true 3:b:true 4:c:false]"
	if len(problems) > 0 || fmt.Sprint(got) != want {
		t.Errorf("ReadLines = %v, %v; want %s", got, problems, want)
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"2025-10-12T21:35:53.825Z", "2025-10-12T21:35:53.825Z", true},
		{"2025-10-12T21:35:53+02:00", "2025-10-12T21:35:53+02:00", true},
		{"2025-10-12T21:35:53.1+02:00", "2025-10-12T21:35:53.1+02:00", true},
		{"2025-10-12 21:35:53", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := adapters.ParseTime(c.in)
		if ok != c.ok || got.Text != c.want {
			t.Errorf("ParseTime(%q) = %q, %v; want %q, %v", c.in, got.Text, ok, c.want, c.ok)
		}
	}
	if got := adapters.UnixMilli(1770913324842).Text; got != "2026-02-12T16:22:04.842Z" {
		t.Errorf("UnixMilli = %s", got)
	}
}

func TestSummaryString(t *testing.T) {
	s := adapters.Summary{Files: 12, Sessions: 12, New: 2, Updated: 1, Unchanged: 9, Steps: 1840, Deleted: 1,
		Problems: []adapters.Problem{{Path: "/p/x.jsonl", Line: 17, Message: "invalid JSON"}}}
	want := "imported 12 files: 12 sessions (2 new, 1 updated, 9 unchanged), 1840 steps written; 1 deleted session skipped; 1 problem skipped: /p/x.jsonl:17: invalid JSON"
	if got := s.String(); got != want {
		t.Errorf("Summary.String() =\n%s\nwant\n%s", got, want)
	}
}

// fakeAgent serves sessions from memory, built with the builder: one unit
// per file in dir, whose content is the session's step count.
func fakeAgent(dir string, parsed *int) adapters.Agent {
	return adapters.Agent{
		Kind: "fake",
		Discover: func(roots []string) ([]adapters.Unit, []adapters.Problem) {
			entries, _ := os.ReadDir(dir)
			var units []adapters.Unit
			for _, e := range entries {
				units = append(units, adapters.Unit{ID: e.Name(), Paths: []string{filepath.Join(dir, e.Name())}})
			}
			return units, nil
		},
		Parse: func(u adapters.Unit, files []adapters.File) *adapters.Session {
			*parsed++
			var n int
			var order string
			fmt.Fscan(files[0].Body, &n, &order)
			r := records(u.ID, 1, n)
			if order == "reversed" {
				for i, j := 0, len(r.Steps)-1; i < j; i, j = i+1, j-1 {
					r.Steps[i], r.Steps[j] = r.Steps[j], r.Steps[i]
				}
			}
			at := adapters.TimeOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			b := adapters.NewBuilder(u, "test")
			b.Header.Agent, b.Header.Workspace = r.Header.Agent, r.Header.Workspace
			b.SetStart(at) // not the file's time: a session the file's touch does not change
			s := b.Stream("")
			for _, st := range r.Steps {
				s.Add(nil, st, at)
			}
			return b.Finish()
		},
	}
}

func TestImporter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string, mod time.Time) {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		os.Chtimes(p, mod, mod)
	}
	t0 := time.Now().Add(-time.Hour)
	write("a", "2", t0)
	write("b", "3", t0)
	st := mustOpen(t)
	parsed := 0
	im := &adapters.Importer{Store: st}
	run := func(want string) {
		t.Helper()
		sum, err := im.Run(ctx, fakeAgent(dir, &parsed), nil)
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := sum.String(); got != want {
			t.Errorf("Run =\n%s\nwant\n%s", got, want)
		}
	}
	run("imported 2 files: 2 sessions (2 new, 0 updated, 0 unchanged), 5 steps written")
	stamp, _ := st.LatestStamp(ctx)
	run("imported 2 files: 2 sessions (0 new, 0 updated, 2 unchanged), 0 steps written")
	if parsed != 2 {
		t.Errorf("the second run parsed %d sessions; want none (files unchanged)", parsed-2)
	}
	if again, _ := st.LatestStamp(ctx); again != stamp {
		t.Errorf("a run over unchanged files moved the change stamp %d -> %d", stamp, again)
	}

	// A grown file is read again; its steps keep their seqs even when the
	// parser now reads them in another order.
	write("b", "4 reversed", t0.Add(time.Minute))
	run("imported 2 files: 2 sessions (0 new, 1 updated, 1 unchanged), 4 steps written")
	seqs, _ := st.StepSeqs(ctx, "b")
	if len(seqs) != 4 || seqs["s0"] != 1 || seqs["s2"] != 3 || seqs["s3"] != 4 {
		t.Errorf("after a reordered re-read, seqs = %v; want s0..s2 kept at 1..3 and s3 at 4", seqs)
	}

	// A session deleted in the service is counted, not an error.
	if err := st.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	write("a", "3", t0.Add(time.Minute))
	run("imported 2 files: 1 session (0 new, 0 updated, 1 unchanged), 0 steps written; 1 deleted session skipped")
	run("imported 2 files: 1 session (0 new, 0 updated, 1 unchanged), 0 steps written; 1 deleted session skipped")

	// --rescan reads everything and still writes nothing new.
	stamp, _ = st.LatestStamp(ctx)
	im.Rescan = true
	run("imported 2 files: 1 session (0 new, 0 updated, 1 unchanged), 0 steps written; 1 deleted session skipped")
	if again, _ := st.LatestStamp(ctx); again != stamp {
		t.Errorf("a rescan of unchanged sessions moved the change stamp %d -> %d", stamp, again)
	}
}

func TestSplitFlagsSecretsInOutput(t *testing.T) {
	r := records("s-secret", 1, 2)
	r.Steps[0].Type, r.Steps[0].Decision = store.TypeCommand, "accepted"
	r.Steps[0].Payload = store.Payload{Command: adapters.Text("printenv"), Stdout: adapters.Text("AWS_ACCESS_KEY_ID=AKIA" + "QWERTYUIOPASDFGH\n")}
	steps := adapters.Split(r)[0].Steps
	if f := steps[0].Flags; len(f) != 1 || f[0].Kind != "secret_in_output" || f[0].Severity != "danger" || !strings.Contains(f[0].Reason, "aws-access-key") {
		t.Errorf("flags of a command that printed a key = %+v; want secret_in_output naming aws-access-key", f)
	}
	if f := steps[1].Flags; len(f) != 0 {
		t.Errorf("flags of a clean message = %+v; want none", f)
	}
}

// An adapter bug that builds an invalid batch fails that session's import
// with the path and rule of the bad field, and the store keeps what it had:
// Apply validates every batch, not only those pushed as JSON.
func TestImporterRefusesInvalidBatch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good"), []byte("2"), 0o600)
	st := mustOpen(t)
	parsed := 0
	good := fakeAgent(dir, &parsed)
	im := &adapters.Importer{Store: st}
	if _, err := im.Run(ctx, good, nil); err != nil {
		t.Fatalf("Run = %v", err)
	}
	state := func() string {
		t.Helper()
		l, err := st.List(ctx, store.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := st.Detail(ctx, "good", store.DetailQuery{})
		if err != nil {
			t.Fatal(err)
		}
		stamp, err := st.LatestStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		files, err := st.ImportedFiles(ctx, "fake")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{l, d, stamp, files})
		return string(b)
	}
	before := state()

	os.WriteFile(filepath.Join(dir, "bad"), []byte("3"), 0o600)
	buggy := good
	buggy.Parse = func(u adapters.Unit, files []adapters.File) *adapters.Session {
		s := good.Parse(u, files)
		if u.ID == "bad" {
			s.Batches[0].Steps[2].At = "2026-01-02 03:04:05" // no zone: not v1.2
		}
		return s
	}
	sum, err := im.Run(ctx, buggy, nil)
	var inv *store.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Run(invalid batch) = %v; want an *InvalidError", err)
	}
	want := "session bad: store: apply batch: invalid batch: steps[2].at: expected ISO 8601 date-time with timezone"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Run(invalid batch) error = %q; want it to say %q", err, want)
	}
	if len(sum.Failed) != 1 || sum.New != 0 {
		t.Errorf("Run(invalid batch) summary = %+v; want one failed session, none new", sum)
	}
	if after := state(); after != before {
		t.Errorf("the store changed on a refused import:\nbefore %s\nafter  %s", before, after)
	}
}

// TestImporterWaitsForTheGroupBeingWritten: small sessions are written a
// group at a time beside the parse of the next ones. A session read again
// from a later file while its group is being written must see what that
// write stored, so its steps keep their seqs.
func TestImporterWaitsForTheGroupBeingWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Five files of 1 MiB (the largest a grouped session may have): the
	// first four fill a group, written while the fifth, more of the first
	// file's session and in reverse, is parsed.
	files := []struct{ name, body string }{
		{"1-x", "2 inorder"}, {"2-a", "1 inorder"}, {"3-b", "1 inorder"}, {"4-c", "1 inorder"}, {"5-x", "3 reversed"},
	}
	for _, f := range files {
		body := f.body + " " + strings.Repeat(" ", 1<<20-len(f.body)-1)
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	parsed := 0
	agent := fakeAgent(dir, &parsed)
	agent.Discover = func([]string) ([]adapters.Unit, []adapters.Problem) {
		var units []adapters.Unit
		for _, f := range files {
			_, id, _ := strings.Cut(f.name, "-")
			units = append(units, adapters.Unit{ID: id, Paths: []string{filepath.Join(dir, f.name)}})
		}
		return units, nil
	}
	for round := range 3 { // the timing varies: give the write several chances to be in flight
		st := mustOpen(t)
		sum, err := (&adapters.Importer{Store: st}).Run(ctx, agent, nil)
		if err != nil || sum.New != 4 || sum.Updated != 1 {
			t.Errorf("Run = %v, %v; want 4 new sessions, x updated once", sum, err)
		}
		// x's steps s0 and s1 came first from 1-x, in order; 5-x adds s2.
		seqs, err := st.StepSeqs(ctx, "x")
		if err != nil || len(seqs) != 3 || seqs["s0"] != 1 || seqs["s1"] != 2 || seqs["s2"] != 3 {
			t.Fatalf("round %d: seqs of x = %v, %v; want s0, s1, s2 at 1, 2, 3", round, seqs, err)
		}
	}
}

// TestReadRange: a read of limit lines from a 0-based offset covers lines
// offset+1 to offset+limit; without either, or with values no read has,
// there is no range.
func TestReadRange(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		offset, limit *int64
		want          string
	}{
		{n(0), n(5), "&[1 5]"},
		{n(10), n(1), "&[11 11]"},
		{nil, n(5), "<nil>"},
		{n(3), nil, "<nil>"},
		{n(-1), n(5), "<nil>"},
		{n(0), n(0), "<nil>"},
		{n(1 << 40), n(1), "<nil>"},
		{n(0), n(1 << 62), "<nil>"},
	} {
		if got := fmt.Sprint(adapters.ReadRange(c.offset, c.limit)); got != c.want {
			t.Errorf("ReadRange(%v, %v) = %s; want %s", c.offset, c.limit, got, c.want)
		}
	}
}
