package storetest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// listed is a session the list tests push, with what the filters look at.
type listed struct {
	id, agent, start, root string
	cost                   *float64 // nil: no metrics
	failed, flagged        bool
	verdict                string
	noted                  bool // a note on its first step
}

func (l listed) batch() *store.Batch {
	b := smallBatch(l.id)
	b.Session.Agent.Kind, b.Session.StartedAt, b.Session.Workspace.Root = l.agent, l.start, l.root
	b.Session.Metrics = nil
	if l.cost != nil {
		b.Session.Metrics = &store.Metrics{CostUSD: *l.cost}
	}
	if !l.failed {
		b.Steps[2].Outcome, b.Steps[2].Error = "ok", nil
	}
	if !l.flagged {
		b.Steps[1].Flags = []store.Flag{}
	}
	return b
}

// queryName names a list query by the filters it sets.
func queryName(q store.ListQuery) string {
	var parts []string
	for _, f := range []struct {
		name  string
		value any
		set   bool
	}{
		{"agent", q.Agent, q.Agent != ""}, {"verdict", q.Verdict, q.Verdict != ""}, {"unreviewed", q.Unreviewed, q.Unreviewed},
		{"workspace", q.Workspace, q.Workspace != ""},
		{"since", q.Since, q.Since != ""}, {"until", q.Until, q.Until != ""}, {"failed", q.Failed, q.Failed},
		{"flagged", q.Flagged, q.Flagged}, {"noted", q.Noted, q.Noted}, {"cost", q.Cost, q.Cost != ""}, {"limit", q.Limit, q.Limit != 0}, {"page-only", q.PageOnly, q.PageOnly},
	} {
		if f.set {
			parts = append(parts, fmt.Sprintf("%s=%v", f.name, f.value))
		}
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ",")
}

func (l listed) started() time.Time {
	at, ok := store.ParseTimestamp(l.start)
	if !ok {
		panic("bad start " + l.start)
	}
	return at
}

var listSessions = []listed{
	{id: "a", agent: "claude-code", start: "2026-03-01T10:00:00Z", root: "/home/dev/alpha", cost: genPtr(1.5), failed: true, flagged: true, verdict: "approved"},
	{id: "b", agent: "cline", start: "2026-03-05T09:00:00+02:00", root: "/home/dev/beta", flagged: true, noted: true},
	{id: "c", agent: "claude-code", start: "2026-03-05T07:00:00Z", root: "/home/dev/gamma", cost: genPtr(0.5)}, // same start as b
	{id: "d", agent: "codex", start: "2026-02-20T00:00:00Z", root: "/srv/alpha-two", cost: genPtr(0.25), failed: true, verdict: "needs_attention", noted: true},
	{id: "e", agent: "cline", start: "2026-03-10T12:00:00.5Z", root: "/home/dev/delta", cost: genPtr(2.0), verdict: "approved"},
}

func pushListSessions(t *testing.T, s store.Backend) {
	t.Helper()
	for _, l := range listSessions {
		mustApply(t, s, l.batch())
		if l.verdict != "" {
			if err := s.SetVerdict(bg, l.id, store.Verdict{State: l.verdict}); err != nil {
				t.Fatalf("SetVerdict(%s) = %v", l.id, err)
			}
		}
		if l.noted {
			if _, err := s.AddNote(bg, l.id, store.NoteInput{Seq: 1, Author: "ann", Text: "look"}); err != nil {
				t.Fatalf("AddNote(%s) = %v", l.id, err)
			}
		}
	}
}

// wantList is the list of the sessions keep holds, newest start first
// (by id among sessions that started at once), with its chip counts and
// total; except names the filter a chip count leaves out.
func wantList(keep func(l listed, except string) bool) (order []string, agents []store.AgentCount, verdicts []store.VerdictCount, unreviewed int, total store.Total) {
	ls := slices.Clone(listSessions)
	slices.SortFunc(ls, func(x, y listed) int { return cmp.Or(y.started().Compare(x.started()), cmp.Compare(x.id, y.id)) })
	agentN, verdictN := map[string]int{}, map[string]int{}
	order = []string{}
	for _, l := range ls {
		if keep(l, "") {
			order = append(order, l.id)
			total.Sessions++
			if l.cost == nil {
				total.CostNotRecorded++
			} else {
				total.CostUSD += *l.cost
			}
		}
		if keep(l, "agent") {
			agentN[l.agent]++
		}
		if keep(l, "verdict") && l.verdict != "" {
			verdictN[l.verdict]++
		}
		if keep(l, "verdict") && l.verdict == "" {
			unreviewed++
		}
	}
	agents, verdicts = []store.AgentCount{}, []store.VerdictCount{}
	for _, k := range slices.Sorted(maps.Keys(agentN)) {
		agents = append(agents, store.AgentCount{Kind: k, Sessions: agentN[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(verdictN)) {
		verdicts = append(verdicts, store.VerdictCount{State: k, Sessions: verdictN[k]})
	}
	return order, agents, verdicts, unreviewed, total
}

// keepFor is the spec of each ListQuery filter, over the pushed sessions.
func keepFor(q store.ListQuery) func(l listed, except string) bool {
	day := func(v string) time.Time {
		if t, err := time.Parse(time.DateOnly, v); err == nil {
			return t
		}
		t, _ := time.Parse(time.RFC3339, v)
		return t
	}
	return func(l listed, except string) bool {
		return (q.Agent == "" || except == "agent" || l.agent == q.Agent) &&
			(q.Verdict == "" || except == "verdict" || l.verdict == q.Verdict) &&
			(!q.Unreviewed || except == "verdict" || l.verdict == "") &&
			(q.Workspace == "" || strings.Contains(l.root, q.Workspace)) &&
			(q.Since == "" || !l.started().Before(day(q.Since))) &&
			(q.Until == "" || l.started().Before(day(q.Until))) &&
			(!q.Failed || l.failed) && (!q.Flagged || l.flagged) && (!q.Noted || l.noted) &&
			(q.Cost == "" || (q.Cost == "recorded") == (l.cost != nil))
	}
}

// The list: newest start first, every filter, the chip counts (each
// keeping the other filters) and the total; a filter out of its form is
// refused.
func testList(t *testing.T, s store.Backend) {
	if l := mustList(t, s, store.ListQuery{}); len(l.Sessions) != 0 || l.Total != (store.Total{}) {
		t.Errorf("List() of an empty store = %+v; want nothing", l)
	}
	pushListSessions(t, s)
	for _, q := range []store.ListQuery{
		{},
		{Agent: "cline"},
		{Agent: "no-such-agent"},
		{Verdict: "approved"},
		{Workspace: "alpha"},
		{Since: "2026-03-05"},
		{Since: "2026-03-05T07:00:00Z"},
		{Until: "2026-03-05T07:00:00Z"},
		{Since: "2026-03-01", Until: "2026-03-06"},
		{Failed: true},
		{Flagged: true},
		{Noted: true},
		{Noted: true, Agent: "codex", Failed: true},
		{Cost: "recorded"},
		{Cost: "not_recorded"},
		{Agent: "claude-code", Verdict: "approved"},
		{Unreviewed: true},
		{Unreviewed: true, Agent: "cline"},
		{Unreviewed: true, Failed: true},
		{Unreviewed: true, Verdict: "approved"},
		{Agent: "cline", Flagged: true, Workspace: "/home/"},
	} {
		t.Run(queryName(q), func(t *testing.T) {
			order, agents, verdicts, unreviewed, total := wantList(keepFor(q))
			l := mustList(t, s, q)
			if got := ids(l.Sessions); !slices.Equal(got, order) {
				t.Errorf("List(%+v) = %v; want %v", q, got, order)
			}
			if !reflect.DeepEqual(l.Agents, agents) {
				t.Errorf("List(%+v).Agents = %+v; want %+v", q, l.Agents, agents)
			}
			if !reflect.DeepEqual(l.Verdicts, verdicts) || l.Unreviewed != unreviewed {
				t.Errorf("List(%+v).Verdicts = %+v, Unreviewed %d; want %+v, %d", q, l.Verdicts, l.Unreviewed, verdicts, unreviewed)
			}
			if l.Total.Sessions != total.Sessions || l.Total.CostNotRecorded != total.CostNotRecorded || math.Abs(l.Total.CostUSD-total.CostUSD) > 1e-9 {
				t.Errorf("List(%+v).Total = %+v; want %+v", q, l.Total, total)
			}
			if l.Next != "" {
				t.Errorf("List(%+v).Next = %q; want none without a limit", q, l.Next)
			}
		})
	}
	// Each row carries its session and the summary of its steps.
	for _, o := range mustList(t, s, store.ListQuery{}).Sessions {
		i := slices.IndexFunc(listSessions, func(l listed) bool { return l.id == o.ID })
		b := listSessions[i].batch()
		want := wantSummary(mergeSteps(b), len(b.Turns), len(b.Segments))
		if listSessions[i].noted {
			want.Notes = 1
		}
		if !reflect.DeepEqual(o.Summary, want) {
			t.Errorf("List: %s summary = %+v; want %+v", o.ID, o.Summary, want)
		}
		if o.Agent != b.Session.Agent || o.StartedAt != b.Session.StartedAt || !reflect.DeepEqual(o.Metrics, b.Session.Metrics) {
			t.Errorf("List: %s = %+v; want the header pushed %+v", o.ID, o.Session, b.Session)
		}
		if v := listSessions[i].verdict; (v == "") != (o.Verdict == nil) || (o.Verdict != nil && o.Verdict.State != v) {
			t.Errorf("List: %s verdict = %+v; want %q", o.ID, o.Verdict, v)
		}
	}
	for _, q := range []store.ListQuery{{Since: "yesterday"}, {Until: "2026-13-01"}, {Cost: "maybe"}} {
		if _, err := s.List(bg, q); !errors.Is(err, store.ErrBadFilter) {
			t.Errorf("List(%+v) = %v; want ErrBadFilter", q, err)
		}
	}
}

// Keyset pages: following Next gives every session once, in list order,
// with or without a filter (two sessions start at the same instant); a
// page alone (PageOnly) is the same page without the counts; a cursor the
// store did not give is refused.
func testListPages(t *testing.T, s store.Backend) {
	pushListSessions(t, s)
	for _, q := range []store.ListQuery{{Limit: 2}, {Limit: 1, Agent: "claude-code"}, {Limit: 3, Workspace: "/home/dev/"}, {Limit: 5},
		{Limit: 1, Unreviewed: true}, {Limit: 2, PageOnly: true}, {Limit: 1, Unreviewed: true, PageOnly: true}} {
		t.Run(queryName(q), func(t *testing.T) {
			order, _, _, _, total := wantList(keepFor(q))
			var got []string
			for pages := 0; ; pages++ {
				if pages > len(listSessions) {
					t.Fatalf("List(%+v) gave more pages than sessions: %v", q, got)
				}
				l := mustList(t, s, q)
				if len(l.Sessions) > q.Limit {
					t.Errorf("List(%+v) = %d sessions; want at most %d", q, len(l.Sessions), q.Limit)
				}
				if want := total.Sessions; q.PageOnly && (l.Total != store.Total{} || len(l.Agents)+len(l.Verdicts)+l.Unreviewed != 0) {
					t.Errorf("List(%+v) counts %+v, %v, %v, %d; want none for a page alone", q, l.Total, l.Agents, l.Verdicts, l.Unreviewed)
				} else if !q.PageOnly && l.Total.Sessions != want {
					t.Errorf("List(%+v).Total.Sessions = %d; want %d on every page", q, l.Total.Sessions, want)
				}
				got = append(got, ids(l.Sessions)...)
				if l.Next == "" {
					break
				}
				q.After = l.Next
			}
			if !slices.Equal(got, order) {
				t.Errorf("pages of List = %v; want %v", got, order)
			}
		})
	}
	for _, c := range []string{"not-a-cursor", "::", "x:y"} {
		if _, err := s.List(bg, store.ListQuery{Limit: 2, After: c}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("List(after %q) = %v; want ErrBadCursor", c, err)
		}
	}
}

// generated is a session of two pushes of the realistic batch: 120
// steps of every type in six turns, by two actors.
func generated(t *testing.T, s store.Backend, sid string) (pushes []*store.Batch, stamps []int64) {
	t.Helper()
	for push := range 2 {
		b := Batch(sid, push, 60)
		mustApply(t, s, b)
		pushes = append(pushes, b)
		stamps = append(stamps, mustLatest(t, s))
	}
	return pushes, stamps
}

// withStepIDs fills each turn's step ids from the steps, in seq order.
func withStepIDs(turns []store.Turn, steps []store.Step) []store.Turn {
	for i := range turns {
		turns[i].StepIDs = []string{}
		for _, st := range steps {
			if st.TurnID == turns[i].ID {
				turns[i].StepIDs = append(turns[i].StepIDs, st.ID)
			}
		}
	}
	return turns
}

// A session of more than one block of steps (store.BlockShift) has the
// summary and report computed from all its steps: the blocks' partial
// results add up to them, a command's first run and first failure
// included wherever its runs fall, and a turn's failures.
func testDetailAcrossBlocks(t *testing.T, s store.Backend) {
	b := Batch("blocks", 0, 1<<store.BlockShift+300)
	// One turn of more steps than a block, the first and last of them
	// failed: its failures fall in two blocks.
	mid := b.Steps[len(b.Steps)/2].TurnID
	run := b.Steps[len(b.Steps)/2-600 : len(b.Steps)/2+600]
	for i := range run {
		run[i].TurnID = mid
	}
	for _, i := range []int{0, len(run) - 1} {
		run[i].Outcome, run[i].Error = "failed", &store.StepError{Type: "tool_error", Message: "failed"}
	}
	mustApply(t, s, b)
	d := mustDetail(t, s, "blocks")
	want := wantReport(b.Steps, d.Turns)
	if !reflect.DeepEqual(d.Report, want) {
		t.Errorf("Detail(blocks).Report =\n%+v\nwant\n%+v", d.Report, want)
	}
	if want := wantSummary(b.Steps, len(b.Turns), len(b.Segments)); !reflect.DeepEqual(d.Summary, want) {
		t.Errorf("Detail(blocks).Summary = %+v; want %+v", d.Summary, want)
	}
	// The batch has what the test is for: a command failing first in a
	// later block than it first ran.
	if !slices.ContainsFunc(want.Commands, func(c store.CommandRun) bool {
		return c.FirstFailedSeq != nil && *c.FirstFailedSeq>>store.BlockShift > c.FirstSeq>>store.BlockShift
	}) {
		t.Errorf("no command of the batch fails first in a later block than its first run: %+v", want.Commands)
	}
}

// A whole session: the summary and report computed from its steps,
// turns in order with their steps, steps in seq order.
func testDetail(t *testing.T, s store.Backend) {
	pushes, _ := generated(t, s, "g")
	steps, turns := mergeSteps(pushes...), mergeTurns(pushes...)
	d := mustDetail(t, s, "g")
	if want := wantSummary(steps, len(turns), len(pushes[0].Segments)); !reflect.DeepEqual(d.Summary, want) {
		t.Errorf("Detail(g).Summary = %+v; want %+v", d.Summary, want)
	}
	if want := wantReport(steps, d.Turns); !reflect.DeepEqual(d.Report, want) {
		t.Errorf("Detail(g).Report =\n%+v\nwant\n%+v", d.Report, want)
	}
	if !sameJSON(t, d.Steps, steps) {
		t.Errorf("Detail(g).Steps differ from the steps pushed")
	}
	if want := withStepIDs(turns, steps); !reflect.DeepEqual(d.Turns, want) {
		t.Errorf("Detail(g).Turns =\n%+v\nwant\n%+v", d.Turns, want)
	}
	if d.Window != nil {
		t.Errorf("Detail(g).Window = %+v; want none for a whole read", d.Window)
	}
	if !reflect.DeepEqual(d.Metrics, pushes[1].Session.Metrics) {
		t.Errorf("Detail(g).Metrics = %+v; want the last reported %+v", d.Metrics, pushes[1].Session.Metrics)
	}
	for _, id := range []string{"nope", "", "G", "g "} {
		if _, err := s.Detail(bg, id, store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Detail(%q) = %v; want ErrNotFound", id, err)
		}
	}
}

// A narrowed read keeps the whole summary and report and only the turns
// and steps asked for.
func testDetailQuery(t *testing.T, s store.Backend) {
	pushes, stamps := generated(t, s, "g")
	steps := mergeSteps(pushes...)
	turns := withStepIDs(mergeTurns(pushes...), steps)
	whole := mustDetail(t, s, "g")
	stepsOf := func(ts []store.Turn) []store.Step {
		out := []store.Step{}
		for _, st := range steps {
			if slices.ContainsFunc(ts, func(tn store.Turn) bool { return tn.ID == st.TurnID }) {
				out = append(out, st)
			}
		}
		return out
	}
	read := func(q store.DetailQuery) store.SessionDetail {
		t.Helper()
		d, err := s.Detail(bg, "g", q)
		if err != nil {
			t.Fatalf("Detail(g, %+v) = %v", q, err)
		}
		// The report's turns are those the read returns.
		report := whole.Report
		report.Turns = wantReport(steps, d.Turns).Turns
		if !reflect.DeepEqual(d.Summary, whole.Summary) || !reflect.DeepEqual(d.Report, report) {
			t.Errorf("Detail(g, %+v) summary or report differ from the whole session's", q)
		}
		return d
	}
	n := len(turns)
	for _, tc := range []struct {
		q     store.DetailQuery
		first int
		turns []store.Turn
	}{
		{store.DetailQuery{Turns: 2}, n - 2, turns[n-2:]},
		{store.DetailQuery{Turns: 1, Before: 2}, 1, turns[1:2]},
		{store.DetailQuery{Turns: n + 5}, 0, turns},
	} {
		d := read(tc.q)
		if !reflect.DeepEqual(d.Turns, tc.turns) {
			t.Errorf("Detail(g, %+v).Turns = %v; want %v", tc.q, turnIDs(d.Turns), turnIDs(tc.turns))
		}
		if !sameJSON(t, d.Steps, stepsOf(tc.turns)) {
			t.Errorf("Detail(g, %+v).Steps = %d steps; want the %d of its turns", tc.q, len(d.Steps), len(stepsOf(tc.turns)))
		}
		if want := (&store.TurnWindow{First: tc.first, Total: n}); !reflect.DeepEqual(d.Window, want) {
			t.Errorf("Detail(g, %+v).Window = %+v; want %+v", tc.q, d.Window, want)
		}
	}

	// Since: only the turns the second push wrote.
	d := read(store.DetailQuery{Since: stamps[0]})
	var changed []store.Turn
	for _, tn := range turns {
		if slices.ContainsFunc(pushes[1].Turns, func(x store.Turn) bool { return x.ID == tn.ID }) {
			changed = append(changed, tn)
		}
	}
	if !reflect.DeepEqual(turnIDs(d.Turns), turnIDs(changed)) || !sameJSON(t, d.Steps, stepsOf(changed)) {
		t.Errorf("Detail(g, since the first push) = turns %v, %d steps; want %v, %d", turnIDs(d.Turns), len(d.Steps), turnIDs(changed), len(stepsOf(changed)))
	}
	if d := read(store.DetailQuery{Since: stamps[1]}); len(d.Turns) != 0 || len(d.Steps) != 0 {
		t.Errorf("Detail(g, since the last write) = %v, %d steps; want none", turnIDs(d.Turns), len(d.Steps))
	}
	// MostChanged: the last of those, and the count of them all.
	if len(changed) < 2 {
		t.Fatalf("the second push changed %d turns; want more than one", len(changed))
	}
	most := len(changed) - 1
	d = read(store.DetailQuery{Since: stamps[0], MostChanged: most})
	if !reflect.DeepEqual(turnIDs(d.Turns), turnIDs(changed[1:])) || !sameJSON(t, d.Steps, stepsOf(changed[1:])) || d.Window == nil || d.Window.Changed != len(changed) {
		t.Errorf("Detail(g, since the first push, at most %d) = turns %v, %d steps, window %+v; want %v, %d, %d changed",
			most, turnIDs(d.Turns), len(d.Steps), d.Window, turnIDs(changed[1:]), len(stepsOf(changed[1:])), len(changed))
	}

	// Seq: one step.
	one := steps[len(steps)/2]
	if d := read(store.DetailQuery{Seq: &one.Seq}); len(d.Steps) != 1 || !sameJSON(t, d.Steps[0], one) {
		t.Errorf("Detail(g, seq %d).Steps = %s; want that step", one.Seq, mustJSON(t, d.Steps))
	}
	// NoSteps: the turns without steps.
	if d := read(store.DetailQuery{NoSteps: true}); len(d.Steps) != 0 || len(d.Turns) != n {
		t.Errorf("Detail(g, no steps) = %d turns, %d steps; want %d turns, none", len(d.Turns), len(d.Steps), n)
	}

	// Head: each text field cut to its first characters, with its length.
	const head = 10
	d = read(store.DetailQuery{Head: head})
	if len(d.Steps) != len(steps) {
		t.Fatalf("Detail(g, head %d) = %d steps; want %d", head, len(d.Steps), len(steps))
	}
	for i, st := range steps {
		want := st
		p := want.Payload
		for name, f := range map[string]**string{"stdout": &p.Stdout, "stderr": &p.Stderr, "text": &p.Text, "old_string": &p.OldString, "new_string": &p.NewString} {
			if *f == nil {
				continue
			}
			if n := utf8.RuneCountInString(**f); n > head {
				if want.Cut == nil {
					want.Cut = map[string]int{}
				}
				want.Cut[name] = n
				*f = genPtr(string([]rune(**f)[:head]))
			}
		}
		want.Payload = p
		if !sameJSON(t, d.Steps[i], want) {
			t.Errorf("Detail(g, head %d).Steps[%d] =\n%s\nwant\n%s", head, i, mustJSON(t, d.Steps[i]), mustJSON(t, want))
		}
	}
}

// A window of each turn's steps (DetailQuery.Steps): a turn of more steps
// keeps its first and its last ones, or those from a step of From on, and
// the read says what it left out; the steps left out read a window at a
// time (Turn, StepsBefore) come back whole, each once.
func testDetailStepWindow(t *testing.T, s store.Backend) {
	pushes, stamps := generated(t, s, "g")
	steps := mergeSteps(pushes...)
	turns := mergeTurns(pushes...)
	byTurn := map[string][]store.Step{}
	for _, st := range steps {
		byTurn[st.TurnID] = append(byTurn[st.TurnID], st)
	}
	read := func(q store.DetailQuery) store.SessionDetail {
		t.Helper()
		d, err := s.Detail(bg, "g", q)
		if err != nil {
			t.Fatalf("Detail(g, %+v) = %v", q, err)
		}
		return d
	}
	// want is a window of n of each of ts, each turn's window starting at
	// its step of from when it has one.
	want := func(ts []store.Turn, n int, from map[string]int) ([]store.Step, []store.StepGap) {
		var keep []store.Step
		var gaps []store.StepGap
		for _, tn := range ts {
			all := byTurn[tn.ID]
			first, ok := from[tn.ID]
			if !ok {
				first = len(all) - n
			}
			if first <= 1 {
				keep = append(keep, all...)
				continue
			}
			keep = append(append(keep, all[0]), all[first:]...)
			gaps = append(gaps, store.StepGap{TurnID: tn.ID, After: all[0].Seq, Before: all[first].Seq, Steps: first - 1,
				First: all[1].Seq, FirstAt: all[1].At})
		}
		slices.SortFunc(keep, func(a, b store.Step) int { return cmp.Compare(a.Seq, b.Seq) })
		return keep, gaps
	}
	check := func(q store.DetailQuery, ts []store.Turn, from map[string]int) {
		t.Helper()
		d := read(q)
		wantSteps, wantGaps := want(ts, q.Steps, from)
		if !sameJSON(t, d.Steps, wantSteps) {
			t.Errorf("Detail(g, %+v).Steps = %d steps; want %d", q, len(d.Steps), len(wantSteps))
		}
		if !reflect.DeepEqual(d.Gaps, wantGaps) {
			t.Errorf("Detail(g, %+v).Gaps = %+v; want %+v", q, d.Gaps, wantGaps)
		}
		if !reflect.DeepEqual(turnIDs(d.Turns), turnIDs(ts)) {
			t.Errorf("Detail(g, %+v).Turns = %v; want %v", q, turnIDs(d.Turns), turnIDs(ts))
		}
	}
	n := len(turns)
	long := len(byTurn[turns[0].ID])
	if long < 8 {
		t.Fatalf("the generated turns have %d steps; the test needs 8", long)
	}
	check(store.DetailQuery{Steps: 5}, turns, nil)
	check(store.DetailQuery{Steps: 5, Turns: 2}, turns[n-2:], nil)
	check(store.DetailQuery{Steps: long - 1}, turns, nil) // a window of all but the first: no gap
	check(store.DetailQuery{Steps: long - 2}, turns, nil) // one step left out
	// From: the last turn from its third step on, the others as before.
	last := byTurn[turns[n-1].ID]
	check(store.DetailQuery{Steps: 5, From: []int64{last[2].Seq}}, turns, map[string]int{turns[n-1].ID: 2})
	// Since: the turns of the second push, each a window.
	var changed []store.Turn
	for _, tn := range turns {
		if slices.ContainsFunc(pushes[1].Turns, func(x store.Turn) bool { return x.ID == tn.ID }) {
			changed = append(changed, tn)
		}
	}
	check(store.DetailQuery{Steps: 5, Since: stamps[0]}, changed, nil)

	// The steps a gap leaves out, read back a window of 4 at a time from
	// its end, are the turn's steps between, each once and in order.
	tn := turns[0]
	gap := read(store.DetailQuery{Steps: 3}).Gaps[0]
	if got, want := readGap(t, s, "g", gap, 4), byTurn[tn.ID][1:1+gap.Steps]; !sameJSON(t, got, want) {
		t.Errorf("the gap's steps read a window at a time = %d steps; want the %d of the turn between seq %d and %d", len(got), len(want), gap.After, gap.Before)
	}
	testDetailAround(t, s)
}

// A link to a step of a turn of many: the steps around it are kept
// besides the turn's first and last, and each gap reads back whole, the
// first after the turn's first step, of seq 0.
func testDetailAround(t *testing.T, s store.Backend) {
	const n, last, around = 300, 20, 150
	b := Batch("w", 0, n) // one turn of all its steps, from seq 0, the first a session may have
	b.Turns = b.Turns[:1]
	for i := range b.Steps {
		b.Steps[i].TurnID, b.Steps[i].ActorID, b.Steps[i].Seq = b.Turns[0].ID, b.Turns[0].ActorID, int64(i)
	}
	mustApply(t, s, b)
	seqs := make([]int64, n)
	for i, st := range b.Steps {
		seqs[i] = st.Seq
	}
	d, err := s.Detail(bg, "w", store.DetailQuery{Steps: last, Around: seqs[around]})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := around-store.AroundSteps, around+store.AroundSteps
	var want []int64
	want = append(append(append(want, seqs[0]), seqs[lo:hi+1]...), seqs[n-last:]...)
	got := make([]int64, len(d.Steps))
	for i, st := range d.Steps {
		got[i] = st.Seq
	}
	if !slices.Equal(got, want) {
		t.Errorf("Detail(w, around seq %d).Steps = %v; want the first, %d either side of it and the last %d", seqs[around], got, store.AroundSteps, last)
	}
	wantGaps := []store.StepGap{
		{TurnID: b.Turns[0].ID, After: seqs[0], Before: seqs[lo], Steps: lo - 1, First: seqs[1], FirstAt: b.Steps[1].At},
		{TurnID: b.Turns[0].ID, After: seqs[hi], Before: seqs[n-last], Steps: n - last - hi - 1, First: seqs[hi+1], FirstAt: b.Steps[hi+1].At},
	}
	if !reflect.DeepEqual(d.Gaps, wantGaps) {
		t.Errorf("Detail(w, around seq %d).Gaps = %+v; want %+v", seqs[around], d.Gaps, wantGaps)
	}
	for _, g := range d.Gaps {
		var want []store.Step
		for _, st := range b.Steps {
			if st.Seq > g.After && st.Seq < g.Before {
				want = append(want, st)
			}
		}
		if got := readGap(t, s, "w", g, 7); !sameJSON(t, got, want) {
			t.Errorf("the steps of the gap %+v read 7 at a time = %d steps; want its %d", g, len(got), len(want))
		}
	}
}

// A link to a step of an older turn than the last ones: a read of a few
// turns around its step (Turns and Around, no Before) keeps its turn, the
// AroundTurns after it (fewer at the end) and those before it, not the
// last turns; a step not stored keeps the last turns.
func testDetailAroundTurn(t *testing.T, s store.Backend) {
	b := Batch("at", 0, 600)
	mustApply(t, s, b)
	d := mustDetail(t, s, "at")
	total := len(d.Turns)
	if total < store.AroundTurns+8 {
		t.Fatalf("the batch has %d turns; want more than %d", total, store.AroundTurns+8)
	}
	const turns = 5
	for _, pos := range []int{0, 2, total / 2, total - store.AroundTurns, total - 1} {
		turn := d.Turns[pos]
		seq := b.Steps[slices.IndexFunc(b.Steps, func(st store.Step) bool { return st.TurnID == turn.ID })].Seq
		end := min(total, pos+1+store.AroundTurns)
		first := max(0, end-turns)
		got, err := s.Detail(bg, "at", store.DetailQuery{Turns: turns, Steps: 10, Around: seq})
		if err != nil {
			t.Fatal(err)
		}
		if ids, want := turnIDs(got.Turns), turnIDs(d.Turns[first:end]); !slices.Equal(ids, want) || got.Window == nil || got.Window.First != first || got.Window.Total != total {
			t.Errorf("Detail(at, %d turns around seq %d of turn %d) = turns %v, window %+v; want %v from %d of %d", turns, seq, pos, ids, got.Window, want, first, total)
		}
	}
	got, err := s.Detail(bg, "at", store.DetailQuery{Turns: turns, Steps: 10, Around: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if ids, want := turnIDs(got.Turns), turnIDs(d.Turns[total-turns:]); !slices.Equal(ids, want) {
		t.Errorf("Detail(at, around a step not stored) = turns %v; want the last %v", ids, want)
	}
}

// readGap reads the steps a gap of session sid left out, n at a time from
// its end, as the review app's control does (DetailQuery.StepsAfter and
// StepsBefore), checking that each read keeps only those.
func readGap(t *testing.T, s store.Backend, sid string, gap store.StepGap, n int) []store.Step {
	t.Helper()
	var got []store.Step
	for before := gap.Before; ; {
		w, err := s.Detail(bg, sid, store.DetailQuery{Turn: gap.TurnID, Steps: n, StepsAfter: &gap.After, StepsBefore: before})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Turns) != 1 || w.Turns[0].ID != gap.TurnID || len(w.Steps) == 0 || len(w.Steps) > n ||
			w.Steps[0].Seq <= gap.After || w.Steps[len(w.Steps)-1].Seq >= before {
			t.Fatalf("Detail(%s, turn %s between %d and %d) = turns %v, %d steps; want the turn, up to %d of its steps between", sid, gap.TurnID, gap.After, before, turnIDs(w.Turns), len(w.Steps), n)
		}
		got = append(w.Steps, got...)
		if len(w.Gaps) == 0 {
			return got
		}
		if len(w.Gaps) != 1 || w.Gaps[0].After != gap.After || w.Gaps[0].Before != w.Steps[0].Seq || len(got) > gap.Steps ||
			w.Gaps[0].First != gap.First || w.Gaps[0].FirstAt != gap.FirstAt {
			t.Fatalf("Detail(%s, turn %s between %d and %d).Gaps = %+v; want the one before its steps", sid, gap.TurnID, gap.After, before, w.Gaps)
		}
		before = w.Gaps[0].Before
	}
}

func turnIDs(ts []store.Turn) []string {
	out := []string{}
	for _, tn := range ts {
		out = append(out, tn.ID)
	}
	return out
}

// TurnSteps reads a turn's steps a few at a time, in seq order, and ends
// with an empty read.
func testTurnSteps(t *testing.T, s store.Backend) {
	pushes, _ := generated(t, s, "g")
	steps := mergeSteps(pushes...)
	for _, tn := range mergeTurns(pushes...) {
		var want []store.Step
		for _, st := range steps {
			if st.TurnID == tn.ID {
				want = append(want, st)
			}
		}
		var got []store.Step
		after := int64(0)
		for calls := 0; ; calls++ {
			page, err := s.TurnSteps(bg, "g", tn.ID, after, 2000)
			if err != nil {
				t.Fatalf("TurnSteps(g, %s, %d) = %v", tn.ID, after, err)
			}
			if len(page) == 0 {
				break
			}
			if calls > len(want) {
				t.Fatalf("TurnSteps(g, %s) does not end: %d calls", tn.ID, calls)
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		if !sameJSON(t, got, want) {
			t.Errorf("TurnSteps(g, %s) read %d steps; want the turn's %d in seq order", tn.ID, len(got), len(want))
		}
	}
	if got, err := s.TurnSteps(bg, "g", "no-such-turn", 0, 2000); err != nil || len(got) != 0 {
		t.Errorf("TurnSteps(g, no-such-turn) = %v, %v; want no steps", got, err)
	}
	if _, err := s.TurnSteps(bg, "nope", pushes[0].Turns[0].ID, 0, 2000); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TurnSteps(nope) = %v; want ErrNotFound", err)
	}
}

// FileChanges: the files a session created or edited, in order of their
// first edit, with every edit and, for a file it created, the content
// before and after.
func testFileChanges(t *testing.T, s store.Backend) {
	b := smallBatch("f")
	created := "package main\n\nfunc a() {}\n"
	write := stepOf("f", 6, store.TypeEdit)
	write.Outcome, write.Error = "ok", nil
	write.Payload = store.Payload{Path: "/tmp/ws/new.go", NewString: genPtr(created), IsFullWrite: genPtr(true)}
	edit := stepOf("f", 7, store.TypeEdit)
	edit.Outcome, edit.Error = "ok", nil
	edit.Payload = store.Payload{Path: "/tmp/ws/new.go", OldString: genPtr("func a() {}"), NewString: genPtr("func b() {}"), IsFullWrite: genPtr(false)}
	b.Steps = append(b.Steps, write, edit)
	mustApply(t, s, b)

	failed := b.Steps[2] // the small batch's failed edit of main.go, seq 3
	want := []store.FileChange{
		{Path: failed.Payload.Path, Failed: true, Edits: []store.FileEdit{
			{Seq: failed.Seq, Failed: true, Old: failed.Payload.OldString, New: failed.Payload.NewString}}},
		{Path: write.Payload.Path, Known: true, Created: true, Before: "",
			After: strings.Replace(created, *edit.Payload.OldString, *edit.Payload.NewString, 1),
			Edits: []store.FileEdit{
				{Seq: write.Seq, FullWrite: true, New: write.Payload.NewString},
				{Seq: edit.Seq, Old: edit.Payload.OldString, New: edit.Payload.NewString}}},
	}
	got, err := s.FileChanges(bg, "f")
	if err != nil {
		t.Fatalf("FileChanges(f) = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FileChanges(f) =\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, want))
	}
	if _, err := s.FileChanges(bg, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileChanges(nope) = %v; want ErrNotFound", err)
	}
}

// Image serves a picture a step's raw holds (an image block as Claude
// writes one), as its bytes show.
func testImage(t *testing.T, s store.Backend) {
	const w, h = 7, 5
	pic := adapterstest.MustPNG(t, w, h)
	b := smallBatch("i")
	shot := stepOf("i", 6, store.TypeOther)
	shot.Payload = store.Payload{ToolName: "Read", Raw: []byte(fmt.Sprintf(
		`{"file_path":"/tmp/ws/shot.png","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]}`,
		base64.StdEncoding.EncodeToString(pic)))}
	b.Steps = append(b.Steps, shot)
	mustApply(t, s, b)

	img, err := s.Image(bg, "i", shot.Seq, 1)
	if err != nil {
		t.Fatalf("Image(i, %d, 1) = %v", shot.Seq, err)
	}
	if img.MediaType != "image/png" || !bytes.Equal(img.Data, pic) || img.Width != w || img.Height != h {
		t.Errorf("Image(i, %d, 1) = %s %dx%d, %d bytes; want image/png %dx%d, the %d bytes pushed",
			shot.Seq, img.MediaType, img.Width, img.Height, len(img.Data), w, h, len(pic))
	}
	for _, tc := range []struct {
		id  string
		seq int64
		n   int
	}{{"i", shot.Seq, 2}, {"i", 1, 1}, {"i", 99, 1}, {"nope", shot.Seq, 1}} {
		if _, err := s.Image(bg, tc.id, tc.seq, tc.n); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Image(%s, %d, %d) = %v; want ErrNotFound", tc.id, tc.seq, tc.n, err)
		}
	}
}

// NextProblem finds, from any seq, the next and the previous failed or
// flagged step of the session's steps, as a later push changes them; a
// session without any has none, and one not stored (or deleted) is not
// found.
func testNextProblem(t *testing.T, s store.Backend) {
	pushes, _ := generated(t, s, "np")
	steps := mergeSteps(pushes...)
	check := func(when string, steps []store.Step) {
		t.Helper()
		var problems []int64
		for _, st := range steps {
			if st.Outcome == "failed" || len(st.Flags) > 0 {
				problems = append(problems, st.Seq)
			}
		}
		if len(problems) < 3 || len(problems) == len(steps) {
			t.Fatalf("%s: %d problems in %d steps; the batch should have some, not all", when, len(problems), len(steps))
		}
		last := steps[len(steps)-1].Seq
		for seq := int64(-1); seq <= last+1; seq++ {
			i, _ := slices.BinarySearch(problems, seq+1)
			wantNext, wantOK := int64(0), i < len(problems)
			if wantOK {
				wantNext = problems[i]
			}
			next, ok, err := s.NextProblem(bg, "np", seq, false)
			if err != nil || next != wantNext || ok != wantOK {
				t.Fatalf("%s: NextProblem(np, %d) = %d, %v, %v; want %d, %v", when, seq, next, ok, err, wantNext, wantOK)
			}
			j, _ := slices.BinarySearch(problems, seq)
			wantPrev, wantOK := int64(0), j > 0
			if wantOK {
				wantPrev = problems[j-1]
			}
			prev, ok, err := s.NextProblem(bg, "np", seq, true)
			if err != nil || prev != wantPrev || ok != wantOK {
				t.Fatalf("%s: NextProblem(np, %d, back) = %d, %v, %v; want %d, %v", when, seq, prev, ok, err, wantPrev, wantOK)
			}
		}
	}
	check("first pushes", steps)

	// A later push: the first problem mended (neither failed nor flagged),
	// and the last step that was neither fails.
	first := slices.IndexFunc(steps, func(st store.Step) bool { return st.Outcome == "failed" || len(st.Flags) > 0 })
	mended := steps[first]
	mended.Outcome, mended.Error, mended.Flags = "ok", nil, []store.Flag{}
	var failing store.Step
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Outcome != "failed" && len(steps[i].Flags) == 0 {
			failing = steps[i]
			failing.Outcome, failing.Error = "failed", &store.StepError{Type: "tool_error", Message: "failed later"}
			steps[i] = failing
			break
		}
	}
	steps[first] = mended
	mustApply(t, s, stepsBatch("np", mended, failing))
	check("after a later push", steps)

	b := smallBatch("calm")
	for i := range b.Steps {
		b.Steps[i].Outcome, b.Steps[i].Error, b.Steps[i].Flags = "ok", nil, []store.Flag{}
	}
	mustApply(t, s, b)
	for _, back := range []bool{false, true} {
		if next, ok, err := s.NextProblem(bg, "calm", 3, back); ok || err != nil {
			t.Errorf("NextProblem(calm, 3, %v) = %d, %v, %v; want none", back, next, ok, err)
		}
	}
	if err := s.Delete(bg, "np"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"np", "nope"} {
		if _, _, err := s.NextProblem(bg, id, 0, false); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("NextProblem(%s) = %v; want ErrNotFound", id, err)
		}
	}
}
