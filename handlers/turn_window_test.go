package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// longTurn is a session of a short turn (a prompt and a command) and a
// turn of n steps: its prompt, then commands "step <seq>".
func longTurn(sid string, n int, started time.Time) obj {
	b := sessionBatch(sid, "testagent", "1.0.0", started, "/tmp/ws", metricsOf(0.1, 1, 1, 1))
	b["turns"] = arr{turnRec(sid, 1, started, ""), turnRec(sid, 2, started.Add(time.Minute), "")}
	steps := arr{
		stepRec(sid, 1, 1, started, "message", userPrompt("a short turn")),
		stepRec(sid, 2, 1, started, "command", obj{"command": "step 2", "stdout": "ok"}),
		stepRec(sid, 3, 2, started.Add(time.Minute), "message", userPrompt("a long turn")),
	}
	for seq := 4; seq < 3+n; seq++ {
		steps = append(steps, stepRec(sid, seq, 2, started.Add(time.Minute+time.Duration(seq)*time.Second), "command",
			obj{"command": fmt.Sprintf("step %d", seq), "stdout": "ok"}))
	}
	b["steps"] = steps
	return b
}

// seqsOf are the seqs of the steps of a page or fragment under sel, in
// page order.
func seqsOf(t *testing.T, doc *goquery.Selection, sel string) []int {
	t.Helper()
	var out []int
	doc.Find(sel + ` details.step[data-testid="step"]`).Each(func(_ int, s *goquery.Selection) {
		n, err := strconv.Atoi(s.AttrOr("data-seq", ""))
		if err != nil {
			t.Fatalf("a step without a seq: %v", err)
		}
		out = append(out, n)
	})
	return out
}

func span(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// TestLongTurnShowsItsEnds: a turn of more steps than the page shows
// comes with its first step and its last recentSteps, and a control that
// adds the ones before those, earlierSteps at a time, until every step of
// the turn is on the page once and in order. A link to a step not shown
// shows the steps around it, with a control each side. The page is the
// same size whatever the length of the turn.
func TestLongTurnShowsItsEnds(t *testing.T) {
	s := newTestService(t)
	const n = 1234 // steps of the long turn: seqs 3 to 3+n-1
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	b := longTurn("long", n, at)
	s.mustPush(b, http.StatusCreated)
	last := 3 + n - 1

	page := mustDocument(t, s, "/session?id=long")
	long := page.Find(`section.turn[data-number="2"]`)
	if got, want := seqsOf(t, page.Selection, `section.turn[data-number="1"]`), span(1, 2); !slices.Equal(got, want) {
		t.Errorf("the short turn shows steps %v; want %v", got, want)
	}
	want := append([]int{3}, span(last-recentSteps+1, last)...)
	if got := seqsOf(t, long, ""); !slices.Equal(got, want) {
		t.Fatalf("the long turn shows %d steps (%v…); want its first and its last %d", len(got), got[:min(3, len(got))], recentSteps)
	}
	if got := long.Find(`.prompt`).Text(); !strings.Contains(got, "a long turn") {
		t.Errorf("the long turn's prompt = %q; want its first step's text", got)
	}
	// A step's time runs until the next step, shown or not: the first
	// step's next is the first the page leaves out.
	stepAt := func(i int) time.Time {
		at, err := time.Parse(time.RFC3339Nano, b["steps"].(arr)[i].(obj)["at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if got, want := long.Find(`#step-3 .dur`).Text(), views.Duration(stepAt(3).Sub(stepAt(2))); got != want {
		t.Errorf("the long turn's first step took %q; want %q, until seq 4, which the page does not show", got, want)
	}
	if got := long.Find(fmt.Sprintf(`#step-%d .dur`, last-1)).Text(); got != views.Duration(time.Second) {
		t.Errorf("the step before the last took %q; want a second", got)
	}
	hidden := n - 1 - recentSteps
	control := long.Find(`[data-testid="earlier-steps"]`)
	if got := strings.Join(strings.Fields(control.Text()), " "); got != fmt.Sprintf("Show %d earlier steps of this turn (%s not shown)", earlierSteps, views.Number(int64(hidden))) {
		t.Errorf("the earlier-steps control says %q", got)
	}
	if got := long.AttrOr("data-from", ""); got != strconv.Itoa(want[1]) {
		t.Errorf("the long turn's data-from = %q; want %d, its first step after the gap", got, want[1])
	}
	if page.Find(`section.turn[data-number="1"] [data-testid="earlier-steps"]`).Length() != 0 {
		t.Errorf("the short turn has an earlier-steps control")
	}

	// The control, followed until it goes, adds every step between.
	if calls := fillGaps(t, s, long); calls != (hidden+earlierSteps-1)/earlierSteps {
		t.Errorf("the earlier-steps control was used %d times; want %d", calls, (hidden+earlierSteps-1)/earlierSteps)
	}
	if got, want := seqsOf(t, long, ""), span(3, last); !slices.Equal(got, want) {
		t.Errorf("the long turn with every control followed shows %d steps (%v…); want its %d, in order", len(got), got[:min(3, len(got))], len(want))
	}
	// And each step but the last has its time until the next, the last of
	// each run a control added as well.
	for seq := 3; seq < last; seq++ {
		if got, want := long.Find(fmt.Sprintf(`#step-%d .dur`, seq)).Text(), views.Duration(stepAt(seq).Sub(stepAt(seq-1))); got != want {
			t.Errorf("with every control followed, step %d took %q; want %q", seq, got, want)
			break
		}
	}

	// A link to a step not shown: every turn, and the steps around it
	// between the gaps before and after them.
	const k = 600
	linked := mustDocument(t, s, fmt.Sprintf("/session?id=long&turns=all&step=%d", k)).Find(`section.turn[data-number="2"]`)
	want = append(append([]int{3}, span(k-store.AroundSteps, k+store.AroundSteps)...), span(last-recentSteps+1, last)...)
	if got := seqsOf(t, linked, ""); !slices.Equal(got, want) {
		t.Errorf("the page of a link to step %d shows %d steps of its turn (%v…); want %d", k, len(got), got[:min(3, len(got))], len(want))
	}
	if got := seqsOf(t, linked, ".turn-earlier .earlier-steps"); !slices.Equal(got, span(k-store.AroundSteps, k+store.AroundSteps)) {
		t.Errorf("the steps around step %d = %d steps; want the %d either side", k, len(got), store.AroundSteps)
	}
	fillGaps(t, s, linked)
	if got, want := seqsOf(t, linked, ""), span(3, last); !slices.Equal(got, want) {
		t.Errorf("the linked turn with every control followed shows %d steps (%v…); want its %d, in order", len(got), got[:min(3, len(got))], len(want))
	}

	// The page of a turn four times as long is no larger.
	s.mustPush(longTurn("longer", 4*n, at), http.StatusCreated)
	short, longer := s.get("/session?id=long").Body.Len(), s.get("/session?id=longer").Body.Len()
	if float64(longer) > 1.02*float64(short) {
		t.Errorf("the page of a turn of %d steps is %d bytes, of %d steps %d; want the same size", 4*n, longer, n, short)
	}

	for _, bad := range []string{"turn=long-t2&after=3&before=0", "turn=long-t2&after=3&before=x", "turn=long-t2&after=500&before=500", "turn=long-t2&after=-1&before=500",
		"turn=long-t2&before=500", "turn=long-t2", "after=3&before=500"} {
		if rec := s.get("/session/steps?id=long&" + bad); rec.Code != http.StatusBadRequest {
			t.Errorf("GET /session/steps?%s = %d; want 400", bad, rec.Code)
		}
	}
	// The API's from: a list of at most maxSeqs seqs.
	for n, want := range map[int]int{maxSeqs: http.StatusOK, maxSeqs + 1: http.StatusBadRequest} {
		from := strings.Repeat("3,", n-1) + "3"
		if rec := s.get("/api/sessions/long?turns=1&steps=10&from=" + from); rec.Code != want {
			t.Errorf("GET /api/sessions/long with from of %d seqs = %d; want %d", n, rec.Code, want)
		}
	}
	for _, q := range []string{"id=long&turn=nope&after=3&before=500", "id=nope&turn=long-t2&after=3&before=500"} {
		if rec := s.get("/session/steps?" + q); rec.Code != http.StatusNotFound {
			t.Errorf("GET /session/steps?%s = %d; want 404", q, rec.Code)
		}
	}
}

// TestLongTurnFromSeqZero: a turn whose first step is seq 0, the first a
// session may have, shows it, and its control adds every step after it.
func TestLongTurnFromSeqZero(t *testing.T) {
	s := newTestService(t)
	const n = 900
	x := longTurn("zero", n, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC))
	x["turns"] = x["turns"].(arr)[1:] // the long turn alone
	steps := x["steps"].(arr)[2:]
	for i, st := range steps {
		st.(obj)["seq"] = i
	}
	x["steps"] = steps
	s.mustPush(x, http.StatusCreated)
	turn := mustDocument(t, s, "/session?id=zero").Find(`section.turn`)
	if got := seqsOf(t, turn, ""); len(got) != 1+recentSteps || got[0] != 0 {
		t.Fatalf("the turn shows %d steps from %v; want its first, seq 0, and its last %d", len(got), got[:min(1, len(got))], recentSteps)
	}
	fillGaps(t, s, turn)
	if got, want := seqsOf(t, turn, ""), span(0, n-1); !slices.Equal(got, want) {
		t.Errorf("the turn with every control followed shows %d steps; want its %d, in order", len(got), n)
	}
}

// TestLongTurnNotes: the notes of a turn's first step, of the steps
// around a linked one and of its last steps show under them, with the
// button to add another.
func TestLongTurnNotes(t *testing.T) {
	s := newTestService(t)
	const n, linked = 1000, 500
	s.mustPush(longTurn("noted", n, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	last := 3 + n - 1
	for _, seq := range []int{3, linked, last} {
		req := httptest.NewRequest(http.MethodPost, "/api/sessions/noted/notes", strings.NewReader(fmt.Sprintf(`{"seq":%d,"author":"Ann","text":"note on %d"}`, seq, seq)))
		req.Header.Set("Content-Type", "application/json")
		if rec := s.do(req); rec.Code != http.StatusCreated {
			t.Fatalf("POST a note on step %d = %d %s", seq, rec.Code, rec.Body)
		}
	}
	for _, c := range []struct {
		path string
		seqs []int
	}{
		{"/session?id=noted", []int{3, last}},
		{fmt.Sprintf("/session?id=noted&turns=all&step=%d", linked), []int{3, linked, last}},
	} {
		doc := mustDocument(t, s, c.path)
		for _, seq := range c.seqs {
			notes := doc.Find(fmt.Sprintf(`[data-testid="step-notes"][data-seq="%d"]`, seq))
			if got := strings.TrimSpace(notes.Find(`[data-testid="note-text"]`).Text()); got != fmt.Sprintf("note on %d", seq) || notes.Find(`[data-testid="note-add"]`).Length() != 1 {
				t.Errorf("GET %s: step %d's notes = %q with %d add buttons; want its note and the button to add one", c.path, seq, got, notes.Find(`[data-testid="note-add"]`).Length())
			}
		}
	}
}

// TestLongTurnSubagentShown: a subagent's block in a turn shown by its
// ends counts the steps of it shown, and says so (TestBrowserSubagents
// checks the count of a turn shown whole).
func TestLongTurnSubagentShown(t *testing.T) {
	s := newTestService(t)
	const n = 1234
	x := longTurn("sub", n, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC))
	x["actors"] = append(x["actors"].(arr), obj{"id": "sub-worker", "parent_id": "sub-root", "type": "subagent", "label": "explore"})
	last := 3 + n - 1
	from, to := last-recentSteps-100, last-100 // the subagent's steps, across the gap
	for _, st := range x["steps"].(arr) {
		if seq := st.(obj)["seq"].(int); seq >= from && seq <= to {
			st.(obj)["actor_id"] = "sub-worker"
		}
	}
	s.mustPush(x, http.StatusCreated)
	shown := to - (last - recentSteps + 1) + 1
	page := mustDocument(t, s, "/session?id=sub")
	if got, want := strings.TrimSpace(page.Find(`[data-testid="subagent-steps"]`).Text()), fmt.Sprintf("%d steps shown", shown); got != want {
		t.Errorf("the subagent's block in a turn shown by its ends says %q; want %q", got, want)
	}
	whole := mustDocument(t, s, "/session?id=sub&turns=all&step="+strconv.Itoa(from))
	blocks := whole.Find(`[data-testid="subagent-steps"]`)
	if blocks.Length() != 2 {
		t.Errorf("a link into the subagent's steps shows %d blocks; want 2, each side of a gap", blocks.Length())
	}
	blocks.Each(func(_ int, b *goquery.Selection) {
		if got := strings.TrimSpace(b.Text()); !strings.HasSuffix(got, " steps shown") {
			t.Errorf("a block of the linked turn says %q; want the steps shown", got)
		}
	})
}

// fillGaps follows every earlier-steps control under turn, as htmx does
// (the control swapped for the answer), until none is left, checking each
// adds at most earlierSteps; it returns how many it followed.
func fillGaps(t *testing.T, s *testService, turn *goquery.Selection) int {
	t.Helper()
	calls := 0
	for c := turn.Find(`[data-testid="earlier-steps"]`).First(); c.Length() > 0; c = turn.Find(`[data-testid="earlier-steps"]`).First() {
		if calls++; calls > 100 {
			t.Fatalf("the earlier-steps controls do not end after %d uses", calls)
		}
		url := c.AttrOr("hx-get", "")
		rec := s.get(url)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", url, rec.Code, rec.Body)
		}
		if n := len(seqsOf(t, htmlDoc(t, rec.Body.String()).Selection, "")); n > earlierSteps {
			t.Errorf("GET %s added %d steps; want at most %d", url, n, earlierSteps)
		}
		c.ReplaceWithHtml(rec.Body.String())
	}
	return calls
}

// TestLongTurnLiveUpdate: a live update of a turn of many steps sends its
// last steps, with the control over the rest; asked to start where the
// page's first view did (from), every step from there on.
func TestLongTurnLiveUpdate(t *testing.T) {
	s := newTestService(t)
	const n, more = 700, 30
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := longTurn("live", n, at)
	s.mustPush(x, http.StatusCreated)
	page := mustDocument(t, s, "/session?id=live")
	stamp := page.Find("#session").AttrOr("data-stamp", "")
	from := page.Find(`section.turn[data-number="2"]`).AttrOr("data-from", "")
	updates := page.Find("#session").AttrOr("data-updates-url", "")
	if stamp == "" || from == "" || updates == "" {
		t.Fatalf("the page has stamp %q, from %q, updates %q", stamp, from, updates)
	}
	var steps arr
	last := 3 + n - 1
	for seq := last + 1; seq <= last+more; seq++ {
		steps = append(steps, stepRec("live", seq, 2, at.Add(time.Hour), "command", obj{"command": fmt.Sprintf("step %d", seq), "stdout": "ok"}))
	}
	s.mustPush(laterPush(x, nil, steps), http.StatusOK)
	last += more

	turn := func(query string) (*goquery.Selection, string) {
		t.Helper()
		rec := s.get(updates + "&since=" + url.QueryEscape(stamp) + query)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET updates%s = %d", query, rec.Code)
		}
		doc := htmlDoc(t, rec.Body.String())
		tpl := doc.Find(`template[data-turn]`)
		if tpl.Length() != 1 {
			t.Fatalf("GET updates%s = %d turns; want the long one", query, tpl.Length())
		}
		h, err := tpl.Html() // x/net/html keeps a template's content as its children
		if err != nil {
			t.Fatal(err)
		}
		inner := htmlDoc(t, h).Find("section.turn")
		return inner, strings.Join(strings.Fields(inner.Find(`[data-testid="earlier-steps"]`).Text()), " ")
	}
	fromSeq, _ := strconv.Atoi(from)
	for _, tc := range []struct {
		query   string
		want    []int
		control bool
	}{
		{"", append([]int{3}, span(last-recentSteps+1, last)...), true},
		{"&from=" + from, append([]int{3}, span(fromSeq, last)...), true},
	} {
		sel, control := turn(tc.query)
		if got := seqsOf(t, sel, ""); !slices.Equal(got, tc.want) {
			t.Errorf("GET updates%s: the turn has %d steps (%v…); want %d (%v…)", tc.query, len(got), got[:min(3, len(got))], len(tc.want), tc.want[:3])
		}
		if hidden := tc.want[1] - 4; tc.control != (control != "") || tc.control && !strings.Contains(control, "("+views.Number(int64(hidden))+" not shown)") {
			t.Errorf("GET updates%s: the control says %q; want %d not shown", tc.query, control, hidden)
		}
	}
	if rec := s.get(updates + "&since=" + url.QueryEscape(stamp) + "&from=1,x"); rec.Code != http.StatusOK {
		t.Errorf("GET updates with a bad from = %d; want the update, from left out", rec.Code)
	}
}

// TestTurnHeaderCountsProblems: a turn's header counts its failed steps
// and the flags on its steps, all of them, shown or not, each count a link
// to the first such step; a turn without has neither. The HTML report's
// headers say the same, a later push counts in, and a link to a step the
// page does not show names it.
func TestTurnHeaderCountsProblems(t *testing.T) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	b := longTurn("p", 800, at)
	steps := b["steps"].(arr)
	fail := func(st obj) {
		st["outcome"], st["error"] = "failed", obj{"type": "exit_code", "message": "exit status 1"}
	}
	flag := func(st obj, kinds ...string) {
		for _, k := range kinds {
			st["flags"] = append(st["flags"].(arr), obj{"kind": k, "severity": "warn", "reason": "test"})
		}
	}
	// Turn 1 none; turn 2 its problems in the steps the page leaves out:
	// failed 100 and 400, flagged 250 (twice) and 400.
	fail(steps[99].(obj))
	flag(steps[249].(obj), "dangerous_command", "secret")
	fail(steps[399].(obj))
	flag(steps[399].(obj), "failed")
	s.mustPush(b, http.StatusCreated)

	// What each turn's header should say, computed from the steps pushed.
	type problems struct {
		failed, flags             int
		firstFailed, firstFlagged string
	}
	want := func(steps arr) map[string]problems {
		out := map[string]problems{}
		for _, v := range steps {
			st := v.(obj)
			turn, seq := st["turn_id"].(string), fmt.Sprint(st["seq"])
			p := out[turn]
			if st["outcome"] == "failed" {
				if p.failed++; p.firstFailed == "" {
					p.firstFailed = "#step-" + seq
				}
			}
			if n := len(st["flags"].(arr)); n > 0 {
				if p.flags += n; p.firstFlagged == "" {
					p.firstFlagged = "#step-" + seq
				}
			}
			out[turn] = p
		}
		return out
	}
	check := func(what string, doc *goquery.Selection, want map[string]problems) {
		t.Helper()
		for n, turn := range []string{"p-t1", "p-t2"} {
			h := doc.Find(`section.turn h3`).Eq(n)
			w := want[turn]
			failed, flags := h.Find(`[data-testid="turn-failed"]`), h.Find(`[data-testid="turn-flags"]`)
			count := func(name string, got *goquery.Selection, n int, text, href string) {
				t.Helper()
				switch {
				case n == 0 && got.Length() != 0:
					t.Errorf("%s: turn %s's header says %q; want no count of %s", what, turn, got.Text(), name)
				case n > 0 && (got.Text() != text || got.AttrOr("href", "") != href):
					t.Errorf("%s: turn %s's count of %s is %q linking to %q; want %q linking to %q", what, turn, name, got.Text(), got.AttrOr("href", ""), text, href)
				}
			}
			count("failed steps", failed, w.failed, fmt.Sprintf("%d failed", w.failed), w.firstFailed)
			count("flags", flags, w.flags, views.Plural(w.flags, "flag"), w.firstFlagged)
		}
	}
	page := mustDocument(t, s, "/session?id=p")
	if page.Find("#step-100, #step-250, #step-400").Length() != 0 {
		t.Fatalf("the page shows a step the test needs left out")
	}
	check("the page", page.Selection, want(steps))
	linked := mustDocument(t, s, "/session?id=p&turns=all&step=250")
	if linked.Find("#step-250").Length() != 1 {
		t.Errorf("the page of a link to the first flagged step does not show it")
	}
	exp, err := goquery.NewDocumentFromReader(s.get("/api/sessions/p/export").Body)
	if err != nil {
		t.Fatal(err)
	}
	check("the HTML report", exp.Selection, want(steps))
	md := s.get("/api/sessions/p/export?format=md").Body.String()
	for n, turn := range []string{"p-t1", "p-t2"} {
		w, head := want(steps)[turn], fmt.Sprintf("### Turn %d ·", n+1)
		if w.failed > 0 {
			head += fmt.Sprintf(" %d failed ·", w.failed)
		}
		if w.flags > 0 {
			head += " " + views.Plural(w.flags, "flag") + " ·"
		}
		if !strings.Contains(md, "\n"+head+" ") {
			t.Errorf("the Markdown report has no line beginning %q", head)
		}
	}

	// A later push: a failed step of turn 1, and turn 2's first failure
	// earlier than it was.
	st := stepRec("p", 2, 1, at, "command", obj{"command": "step 2", "stdout": "no"})
	fail(st)
	early := withFields(steps[49].(obj))
	fail(early)
	s.mustPush(laterPush(b, nil, arr{st, early}), http.StatusOK)
	steps[1], steps[49] = st, early
	check("the page after a push", mustDocument(t, s, "/session?id=p").Selection, want(steps))
	// The live refresh of the page before it: both turns changed.
	rec := s.get(page.Find("#session").AttrOr("data-updates-url", "") + "&since=" + url.QueryEscape(page.Find("#session").AttrOr("data-stamp", "")))
	var turns strings.Builder
	htmlDoc(t, rec.Body.String()).Find(`template[data-turn]`).Each(func(_ int, tpl *goquery.Selection) {
		h, _ := tpl.Html() // x/net/html keeps a template's content as its children
		turns.WriteString(h)
	})
	check("the live refresh after a push", htmlDoc(t, turns.String()).Selection, want(steps))
}
