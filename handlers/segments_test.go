package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
)

// importCompactedMidTurn imports the real Claude Code sample compacted in
// the middle of its one turn (adapterstest.CompactedMidTurn) and returns
// it with the seq of the first main-agent step of the new segment, where
// the divider belongs, found from the stored steps.
func importCompactedMidTurn(t *testing.T, s *testService) (store.SessionDetail, int64) {
	t.Helper()
	ctx := context.Background()
	path := adapterstest.CompactedMidTurn(t, "../adapters/claudecode/testdata", t.TempDir(), 14)
	if _, err := (&adapters.Importer{Store: s.store}).Run(ctx, claudecode.Agent, []string{path}); err != nil {
		t.Fatalf("import %s = %v", path, err)
	}
	list, err := s.store.List(ctx, store.ListQuery{})
	if err != nil || len(list.Sessions) != 1 {
		t.Fatalf("List = %d sessions, %v; want 1", len(list.Sessions), err)
	}
	d, err := s.store.Detail(ctx, list.Sessions[0].ID, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail = %v", err)
	}
	if len(d.Turns) != 1 || d.Turns[0].SegmentIndex != 0 {
		t.Fatalf("turns %+v; want one in segment 0", d.Turns)
	}
	for _, st := range d.Steps {
		if st.ActorID == adapters.RootActor && st.SegmentIndex == 1 {
			return d, st.Seq
		}
	}
	t.Fatal("no main-agent step in segment 1")
	return d, 0
}

func mustDoc(t *testing.T, rec interface{ Result() *http.Response }) *goquery.Document {
	t.Helper()
	res := rec.Result()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d; want 200", res.StatusCode)
	}
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSegmentDividerInsideTurn: the page and the export show one divider
// inside the turn, right before the first step after the compaction,
// named for it, and none before the turn's header.
func TestSegmentDividerInsideTurn(t *testing.T) {
	s := newTestService(t)
	d, seq := importCompactedMidTurn(t, s)
	n := strconv.FormatInt(seq, 10)
	for name, path := range map[string]string{
		"page": "/session?id=" + url.QueryEscape(d.ID), "all turns": "/session?id=" + url.QueryEscape(d.ID) + "&turns=all",
		"export": "/api/sessions/" + url.PathEscape(d.ID) + "/export",
	} {
		t.Run(name, func(t *testing.T) {
			doc := mustDoc(t, s.get(path))
			div := doc.Find(`[data-testid="segment-divider"]`)
			if div.Length() != 1 {
				t.Fatalf("%d segment dividers; want 1", div.Length())
			}
			if role, _ := div.Attr("role"); role != "separator" {
				t.Errorf("divider role %q; want separator", role)
			}
			if got := strings.Join(strings.Fields(div.Text()), " "); !strings.HasPrefix(got, "Context compacted · segment 2 begins ·") {
				t.Errorf("divider says %q; want Context compacted · segment 2 begins · <time>", got)
			}
			if div.Parent().Is("section.turn") == false || div.Prev().Is("h3") == false && div.Prev().Length() == 0 {
				t.Errorf("divider is not inside the turn after its header")
			}
			next := div.Next()
			if !next.Is("details.step") || !strings.Contains(next.Find("summary .seq").Text(), "#"+n) {
				t.Errorf("divider is before %q; want step #%s, the first after the compaction", next.Find("summary .seq").Text(), n)
			}
		})
	}
}

// segmentedSession is a pushed session of four turns: a compaction inside
// turn 2 (before step 4), turn 3 in that segment, and turn 4 after a clear.
func segmentedSession(sid string, at time.Time) obj {
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["segments"] = arr{
		obj{"index": 0, "start_reason": "start", "started_at": isoUTC(at), "source_files": arr{}},
		obj{"index": 1, "start_reason": "compaction", "started_at": isoUTC(at.Add(3 * time.Second)), "source_files": arr{}},
		obj{"index": 2, "start_reason": "clear", "started_at": isoUTC(at.Add(6 * time.Second)), "source_files": arr{}},
	}
	seg := func(rec obj, g int) obj { return withFields(rec, "segment_index", g) }
	x["turns"] = arr{turnRec(sid, 1, at, ""), turnRec(sid, 2, at.Add(2*time.Second), ""),
		seg(turnRec(sid, 3, at.Add(5*time.Second), ""), 1), seg(turnRec(sid, 4, at.Add(6*time.Second), ""), 2)}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("one")),
		stepRec(sid, 2, 1, at.Add(time.Second), "command", obj{"command": "ls"}),
		stepRec(sid, 3, 2, at.Add(2*time.Second), "message", userPrompt("two")),
		seg(stepRec(sid, 4, 2, at.Add(4*time.Second), "command", obj{"command": "make"}), 1),
		seg(stepRec(sid, 5, 3, at.Add(5*time.Second), "message", userPrompt("three")), 1),
		seg(stepRec(sid, 6, 4, at.Add(6*time.Second), "message", userPrompt("four")), 2),
	}
	return x
}

// dividers lists where each divider stands: "turn N" before a turn's
// header, "step N" before a step.
func dividers(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="segment-divider"]`).Each(func(_ int, d *goquery.Selection) {
		g, _ := d.Attr("data-segment")
		switch next := d.Next(); {
		case next.Is("h3"):
			num, _ := d.Parent().Attr("data-number")
			out = append(out, "segment "+g+" at turn "+num)
		default:
			seq, _ := next.Attr("data-seq")
			out = append(out, "segment "+g+" at step "+seq)
		}
	})
	return out
}

// TestSegmentDividerBeforeTurn: a turn that started in a new segment has
// the divider before its header; a turn in a segment that began inside the
// turn before has none; a turn drawn alone (a live update) finds which
// segment the timeline was in before it, so it draws the same.
func TestSegmentDividerBeforeTurn(t *testing.T) {
	s := newTestService(t)
	sid := "segs"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := segmentedSession(sid, at)
	s.mustPush(x, http.StatusCreated)
	want := "segment 1 at step 4, segment 2 at turn 4"
	if got := strings.Join(dividers(mustDoc(t, s.get("/session?id="+sid))), ", "); got != want {
		t.Errorf("page dividers: %s; want %s", got, want)
	}
	for _, c := range []struct {
		seq  int
		want string
	}{{5, ""}, {6, "segment 2 at turn 4"}, {4, "segment 1 at step 4"}} {
		stamp := s.stampOf(t, sid)
		steps := x["steps"].(arr)
		s.mustPush(laterPush(x, nil, arr{withFields(steps[c.seq-1].(obj), "outcome", "failed")}), http.StatusOK)
		doc := mustDoc(t, s.get("/session/updates?id="+sid+"&since="+url.QueryEscape(stamp)))
		if n := doc.Find(`template[data-turn]`).Length(); n != 1 {
			t.Fatalf("update of step %d redraws %d turns; want 1", c.seq, n)
		}
		tmpl, _ := doc.Find(`template[data-turn]`).Html()
		inner, err := goquery.NewDocumentFromReader(strings.NewReader(tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(dividers(inner), ", "); got != c.want {
			t.Errorf("turn of step %d redrawn alone: dividers %q; want %q", c.seq, got, c.want)
		}
	}
}
