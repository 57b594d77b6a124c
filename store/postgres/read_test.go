package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// The read side is tested by equality with the SQLite store: the same
// batches go to a SQLite file and to PostgreSQL, and every read must give
// the same answer, once the fields that legitimately differ (change
// stamps, the machine that wrote) are set aside.

// samples is the repository's shared folder of real transcripts.
const samples = "../../../shared/samples"

// pair is a SQLite store and a PostgreSQL store holding the same data.
type pair struct {
	lite *store.Store
	pg   *Store
}

func newPair(t testing.TB) pair {
	t.Helper()
	lite, _ := mustOpenSQLite(t)
	return pair{lite: lite, pg: mustOpen(t)}
}

// apply writes b to both stores; both must take it or refuse it alike.
func (p pair) apply(t testing.TB, b *store.Batch) {
	t.Helper()
	_, errLite := p.lite.Apply(context.Background(), b)
	_, errPG := p.pg.Apply(context.Background(), b)
	if errLite != nil || errPG != nil {
		t.Fatalf("Apply(%s) = %v on SQLite, %v on PostgreSQL; want both nil", b.Session.ID, errLite, errPG)
	}
}

// fixture fills both stores with the real samples and generated sessions
// that set every list filter apart: agents, owners, workspaces, start
// times, costs recorded and not, verdicts, notes, failed and flagged
// steps, and a session deleted. It returns the stamps of both stores
// taken between two pushes of session gen-a.
func fixture(t *testing.T) (p pair, sinceLite, sincePG int64) {
	t.Helper()
	ctx := context.Background()
	p = newPair(t)
	for _, b := range storetest.AgentSamples(t) {
		p.apply(t, b)
	}
	for push := range 2 {
		p.apply(t, gen("gen-a", push, 60))
	}
	// Notes, before the stamps: a note moves its turn's stamp on.
	for _, in := range []store.NoteInput{{Seq: 12, Author: "lee", Text: "why this?"}, {Seq: 3, Author: "kim", Text: "ok"}, {Seq: 12, Author: "kim", Text: "agreed"}} {
		if _, err := p.lite.AddNote(ctx, "gen-a", in); err != nil {
			t.Fatal(err)
		}
		if _, err := p.pg.AddNote(ctx, "gen-a", in); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if sinceLite, err = p.lite.LatestStamp(ctx); err != nil {
		t.Fatal(err)
	}
	sincePG = mustLatest(t, p.pg)
	a := gen("gen-a", 2, 60)
	a.Steps = append(a.Steps[:10], gen("gen-a", 0, 60).Steps[5:8]...) // a later push changes earlier turns too
	p.apply(t, a)

	b := gen("gen-b", 0, 40) // same start as gen-a: ordered by id
	b.Session.Agent.Kind = "codex"
	b.Session.Workspace.Root = "/srv/other"
	b.Session.Metrics = nil
	b.Owner = "alice"
	p.apply(t, b)

	c := gen("gen-c", 0, 20)
	c.Session.StartedAt = "2026-03-01T09:00:00Z"
	c.Owner = "bob"
	for i := range c.Steps { // nothing failed or flagged
		c.Steps[i].Outcome, c.Steps[i].Error, c.Steps[i].Flags = "ok", nil, c.Steps[i].Flags[:0]
	}
	p.apply(t, c)
	p.apply(t, gen("gen-gone", 0, 10))
	if err := p.lite.Delete(ctx, "gen-gone"); err != nil {
		t.Fatal(err)
	}
	if err := p.pg.Delete(ctx, "gen-gone"); err != nil {
		t.Fatal(err)
	}

	for id, v := range map[string]store.Verdict{
		"gen-a": {State: "approved", Note: "fine", Reviewer: "lee"},
		"gen-b": {State: "needs_attention"},
		"gen-c": {State: "approved"},
	} {
		if err := p.lite.SetVerdict(ctx, id, v); err != nil {
			t.Fatal(err)
		}
		if err := p.pg.SetVerdict(ctx, id, v); err != nil {
			t.Fatal(err)
		}
	}
	return p, sinceLite, sincePG
}

// comparable is v's JSON with what legitimately differs set aside: change
// stamps, the writing machine, and the times a note was written.
func comparable(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch k {
				case "updated_at", "created_at", "captured_on":
					v[k] = "-"
				default:
					strip(e)
				}
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(x)
	out, _ := json.MarshalIndent(x, "", " ")
	return string(out)
}

// same fails unless the two answers are equal, showing where they part.
func same(t *testing.T, what string, lite, pg any, errLite, errPG error) {
	t.Helper()
	if (errLite == nil) != (errPG == nil) || errLite != nil && errLite.Error() != errPG.Error() {
		t.Errorf("%s: error %v on SQLite, %v on PostgreSQL", what, errLite, errPG)
		return
	}
	a, b := comparable(t, lite), comparable(t, pg)
	if a == b {
		return
	}
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	i := 0
	for i < len(la) && i < len(lb) && la[i] == lb[i] {
		i++
	}
	from := max(0, i-8)
	t.Errorf("%s differs from line %d:\nSQLite:\n%s\nPostgreSQL:\n%s", what, i+1,
		strings.Join(la[from:min(len(la), i+8)], "\n"), strings.Join(lb[from:min(len(lb), i+8)], "\n"))
}

func TestListMatchesSQLite(t *testing.T) {
	p, _, _ := fixture(t)
	ctx := context.Background()
	queries := map[string]store.ListQuery{
		"all":              {},
		"agent":            {Agent: "claude-code"},
		"agent none":       {Agent: "nobody"},
		"verdict":          {Verdict: "approved"},
		"owner":            {Owner: "alice"},
		"owner local":      {Owner: store.OwnerLocal},
		"workspace":        {Workspace: "widget"},
		"since date":       {Since: "2026-02-01"},
		"until time":       {Until: "2026-01-02T10:00:01Z"},
		"since until":      {Since: "2025-01-01", Until: "2026-02-01"},
		"failed":           {Failed: true},
		"flagged":          {Flagged: true},
		"cost recorded":    {Cost: "recorded"},
		"cost not":         {Cost: "not_recorded"},
		"verdict and cost": {Verdict: "approved", Cost: "recorded", Agent: "claude-code"},
		"bad cursor":       {After: "nope"},
		"bad cursor ns":    {After: "x:gen-a"},
		"bad since":        {Since: "yesterday"},
		"bad until":        {Until: "2026-13-01"},
		"bad cost":         {Cost: "some"},
	}
	for name, q := range queries {
		lite, errLite := p.lite.List(ctx, q)
		pg, errPG := p.pg.List(ctx, q)
		same(t, "List "+name, lite, pg, errLite, errPG)
		if strings.HasPrefix(name, "bad") {
			want := store.ErrBadFilter
			if q.After != "" {
				want = store.ErrBadCursor
			}
			if !errors.Is(errPG, want) {
				t.Errorf("List %s on PostgreSQL = %v; want %v", name, errPG, want)
			}
			continue
		}
		if errPG != nil {
			t.Fatalf("List %s = %v", name, errPG)
		}
		// The filters must set something apart, or this test proves little.
		if name != "agent none" && len(pg.Sessions) == 0 {
			t.Errorf("List %s found nothing: the fixture does not exercise it", name)
		}
	}
	// Pages: the cursor of each backend, followed to the end, and every
	// session listed once.
	for _, q := range []store.ListQuery{{Limit: 2}, {Limit: 3, Agent: "claude-code"}, {Limit: 1, Verdict: "approved"}} {
		var seen []string
		for page := 0; ; page++ {
			lite, errLite := p.lite.List(ctx, q)
			pg, errPG := p.pg.List(ctx, q)
			same(t, fmt.Sprintf("List %+v page %d", q, page), lite, pg, errLite, errPG)
			if errPG != nil || errLite != nil {
				break
			}
			for _, o := range pg.Sessions {
				seen = append(seen, o.ID)
			}
			if pg.Next == "" || lite.Next != pg.Next {
				break
			}
			q.After = pg.Next
		}
		all, _ := p.pg.List(ctx, store.ListQuery{Agent: q.Agent, Verdict: q.Verdict})
		if len(seen) != all.Total.Sessions || len(seen) != len(slices.Compact(slices.Sorted(slices.Values(seen)))) {
			t.Errorf("pages of %+v listed %v; want each of %d sessions once", q, seen, all.Total.Sessions)
		}
	}
}

func TestDetailMatchesSQLite(t *testing.T) {
	p, sinceLite, sincePG := fixture(t)
	ctx := context.Background()
	l, err := p.pg.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seq := func(n int64) *int64 { return &n }
	for _, o := range l.Sessions {
		for name, q := range map[string]store.DetailQuery{
			"whole":        {},
			"last turns":   {Turns: 2},
			"before":       {Turns: 3, Before: 4},
			"before past":  {Turns: 2, Before: 1000},
			"seq":          {Seq: seq(3)},
			"seq missing":  {Seq: seq(100000)},
			"head":         {Head: 40},
			"head turns":   {Head: 5, Turns: 1},
			"no steps":     {NoSteps: true},
			"no steps few": {NoSteps: true, Turns: 2},
		} {
			lite, errLite := p.lite.Detail(ctx, o.ID, q)
			pg, errPG := p.pg.Detail(ctx, o.ID, q)
			same(t, fmt.Sprintf("Detail(%s, %s)", o.ID, name), lite, pg, errLite, errPG)
		}
	}
	// Since: each backend's own stamp between the pushes.
	for _, q := range []store.DetailQuery{{}, {Turns: 2}, {Head: 10}} {
		ql, qp := q, q
		ql.Since, qp.Since = sinceLite, sincePG
		lite, errLite := p.lite.Detail(ctx, "gen-a", ql)
		pg, errPG := p.pg.Detail(ctx, "gen-a", qp)
		same(t, fmt.Sprintf("Detail(gen-a, since %+v)", q), lite, pg, errLite, errPG)
		if errPG == nil && (len(pg.Turns) == 0 || pg.Window == nil || len(pg.Turns) == pg.Window.Total) {
			t.Errorf("Detail(gen-a, since %+v) kept %d turns: the fixture does not exercise it", q, len(pg.Turns))
		}
	}
	for _, id := range []string{"nobody", "gen-gone"} {
		_, err := p.pg.Detail(ctx, id, store.DetailQuery{})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Detail(%s) = %v; want ErrNotFound", id, err)
		}
	}
	// A sanity check on the counting itself, from the batches: not only
	// equal to SQLite, but right.
	d, err := p.pg.Detail(ctx, "gen-c", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	c := gen("gen-c", 0, 20)
	byType := map[string]int{}
	for _, st := range c.Steps {
		byType[st.Type]++
	}
	for typ, n := range byType {
		if d.Summary.StepsByType[typ] != n {
			t.Errorf("Detail(gen-c) %s steps = %d; want %d", typ, d.Summary.StepsByType[typ], n)
		}
	}
	if d.Summary.Steps != len(c.Steps) || d.Summary.Failed != 0 || d.Summary.Flags != 0 || d.Summary.Turns != len(c.Turns) {
		t.Errorf("Detail(gen-c) summary %+v; want %d steps, %d turns, none failed or flagged", d.Summary, len(c.Steps), len(c.Turns))
	}
}

func TestTurnStepsAndFileChangesMatchSQLite(t *testing.T) {
	p, _, _ := fixture(t)
	ctx := context.Background()
	l, err := p.pg.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, o := range l.Sessions {
		lite, errLite := p.lite.FileChanges(ctx, o.ID)
		pg, errPG := p.pg.FileChanges(ctx, o.ID)
		same(t, "FileChanges("+o.ID+")", lite, pg, errLite, errPG)
		changed += len(pg)
		d, err := p.pg.Detail(ctx, o.ID, store.DetailQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for i, turn := range d.Turns {
			if i > 3 && i < len(d.Turns)-2 {
				continue // a few turns from each end are enough
			}
			after := int64(0)
			if len(turn.StepIDs) > 1 {
				after = d.Steps[slices.IndexFunc(d.Steps, func(s store.Step) bool { return s.ID == turn.StepIDs[0] })].Seq
			}
			for _, budget := range []int{0, 1500, 1 << 20} {
				for _, from := range []int64{0, after} {
					lite, errLite := p.lite.TurnSteps(ctx, o.ID, turn.ID, from, budget)
					pg, errPG := p.pg.TurnSteps(ctx, o.ID, turn.ID, from, budget)
					same(t, fmt.Sprintf("TurnSteps(%s, %s, %d, %d)", o.ID, turn.ID, from, budget), lite, pg, errLite, errPG)
				}
			}
		}
	}
	if changed == 0 {
		t.Error("no session changed a file: the fixture does not exercise FileChanges")
	}
	for _, id := range []string{"nobody", "gen-gone"} {
		if _, err := p.pg.FileChanges(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FileChanges(%s) = %v; want ErrNotFound", id, err)
		}
		if _, err := p.pg.TurnSteps(ctx, id, "t", 0, 100); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TurnSteps(%s) = %v; want ErrNotFound", id, err)
		}
	}
	// A turn with no steps left: empty, not an error, on both.
	lite, errLite := p.lite.TurnSteps(ctx, "gen-a", "no such turn", 0, 100)
	pg, errPG := p.pg.TurnSteps(ctx, "gen-a", "no such turn", 0, 100)
	same(t, "TurnSteps of no turn", lite, pg, errLite, errPG)
}

func TestImageMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	p := newPair(t)
	img := adapterstest.MustImageSample(t, filepath.Join(samples, "claude-code", "agentlogs_crud.jsonl"))
	sessions := adapterstest.ParseRoots(t, claudecode.Agent, img.Path)
	s := sessions[img.SessionID]
	if s == nil {
		t.Fatalf("no session %s in the image sample", img.SessionID)
	}
	if err := s.Each(func(b *store.Batch) error { p.apply(t, b); return nil }); err != nil {
		t.Fatal(err)
	}
	// A step whose image claims png but holds other bytes.
	bad := gen("gen-img", 0, 3)
	bad.Steps[2].Type, bad.Steps[2].Payload = store.TypeOther, store.Payload{ToolName: "shot",
		Raw: json.RawMessage(`{"media_type":"image/png","data":"aGVsbG8gd29ybGQ="}`)}
	bad.Steps[2].Outcome, bad.Steps[2].Error, bad.Steps[2].ContentStatus = "ok", nil, "inline"
	p.apply(t, bad)

	found := 0
	for _, id := range []string{img.SessionID, "gen-img", "nobody"} {
		d, _ := p.pg.Detail(ctx, id, store.DetailQuery{})
		seqs := []int64{1, 999}
		for _, st := range d.Steps {
			if n := len(store.FindImages(st.Payload.Raw)); n > 0 {
				seqs = append(seqs, st.Seq)
				found += n
			}
		}
		for _, seq := range seqs {
			for n := range 4 {
				lite, errLite := p.lite.Image(ctx, id, seq, n)
				pg, errPG := p.pg.Image(ctx, id, seq, n)
				lite.Stamp, pg.Stamp = 0, 0
				same(t, fmt.Sprintf("Image(%s, %d, %d)", id, seq, n), lite, pg, errLite, errPG)
				if errors.Is(errLite, store.ErrNotFound) != errors.Is(errPG, store.ErrNotFound) ||
					errors.Is(errLite, store.ErrNotImage) != errors.Is(errPG, store.ErrNotImage) {
					t.Errorf("Image(%s, %d, %d) = %v on PostgreSQL; want the kind of %v", id, seq, n, errPG, errLite)
				}
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d images; want the sample's two and the bad one", found)
	}
	if _, err := p.pg.Image(ctx, "gen-img", 3, 1); !errors.Is(err, store.ErrNotImage) {
		t.Errorf("Image(gen-img, 3, 1) = %v; want ErrNotImage", err)
	}
	got, err := p.pg.Image(ctx, img.SessionID, firstImageSeq(t, p.pg, img.SessionID), 1)
	if err != nil || got.MediaType != "image/png" || string(got.Data) != string(img.Prompt) {
		t.Errorf("Image of the pasted prompt = %s, %d bytes, %v; want the pasted png", got.MediaType, len(got.Data), err)
	}
}

// firstImageSeq is the seq of the first step of session id holding an image.
func firstImageSeq(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	d, err := s.Detail(context.Background(), id, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range d.Steps {
		if len(store.FindImages(st.Payload.Raw)) > 0 {
			return st.Seq
		}
	}
	t.Fatalf("no image in %s", id)
	return 0
}

// TestTalliesFollowWrites: a server process remembers a session's counts
// by block of steps and its list summary by change stamp; another
// process's writes (a new push, a step written again with another
// outcome, a delete) show in its next read, equal to SQLite's answer after
// the same writes.
func TestTalliesFollowWrites(t *testing.T) {
	ctx := context.Background()
	p := newPair(t)
	writer := p.pg
	reader := mustOpenDSN(t, pgDSN(t, p.pg))
	check := func(what string) {
		t.Helper()
		lite, errLite := p.lite.Detail(ctx, "gen-w", store.DetailQuery{Turns: 2})
		pg, errPG := reader.Detail(ctx, "gen-w", store.DetailQuery{Turns: 2})
		same(t, "Detail after "+what, lite, pg, errLite, errPG)
		liteFiles, errLite := p.lite.FileChanges(ctx, "gen-w")
		pgFiles, errPG := reader.FileChanges(ctx, "gen-w")
		same(t, "FileChanges after "+what, liteFiles, pgFiles, errLite, errPG)
		liteList, errLite := p.lite.List(ctx, store.ListQuery{})
		pgList, errPG := reader.List(ctx, store.ListQuery{})
		same(t, "List after "+what, liteList, pgList, errLite, errPG)
	}
	p.apply(t, gen("gen-w", 0, 1500)) // more than one block of rows
	check("the first push")
	p.apply(t, gen("gen-w", 1, 1500))
	check("a second push")
	again := gen("gen-w", 0, 1500)
	again.Steps = again.Steps[:3]
	again.Steps[1].Outcome, again.Steps[1].Error = "failed", &store.StepError{Type: "tool_error", Message: "now it failed"}
	p.apply(t, again)
	check("a step written again")
	if err := writer.Delete(ctx, "gen-w"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Detail(ctx, "gen-w", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Detail after another process deleted it = %v; want ErrNotFound", err)
	}
	if _, err := reader.FileChanges(ctx, "gen-w"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileChanges after another process deleted it = %v; want ErrNotFound", err)
	}
	if l, err := reader.List(ctx, store.ListQuery{}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("List after another process deleted the one session = %d sessions, %v; want none", len(l.Sessions), err)
	}
}

// pgDSN is the database s is connected to, for a second process.
func pgDSN(t *testing.T, s *Store) string {
	t.Helper()
	return s.pool.Config().ConnString()
}

// Every filter store.ListQuery.Filters can name has a PostgreSQL condition.
func TestListConditions(t *testing.T) {
	since, until := int64(1), int64(2)
	q := store.ListQuery{Agent: "a", Verdict: "v", Unreviewed: true, Owner: "o", Workspace: "w", Failed: true, Flagged: true, Noted: true, Cost: "recorded"}
	fs := q.Filters(store.ListBounds{Since: &since, Until: &until}, "")
	for _, f := range fs {
		if listConds[f.Name] == "" {
			t.Errorf("filter %q has no PostgreSQL condition", f.Name)
		}
	}
	if len(fs) != len(listConds) {
		t.Errorf("Filters names %d filters, PostgreSQL has %d conditions", len(fs), len(listConds))
	}
}
