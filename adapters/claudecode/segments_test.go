package claudecode

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// rawSegments reads a transcript's lines without the parser: the segment
// each record id and tool call id is in (the compact_boundary records
// before it), and the turn each is in (the last prompt before it).
func rawSegments(t *testing.T, path string) (seg map[string]int64, turn map[string]string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seg, turn = map[string]int64{}, map[string]string{}
	var cur int64
	var prompt string
	for _, ln := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var r struct {
			Type             string `json:"type"`
			Subtype          string `json:"subtype"`
			UUID             string `json:"uuid"`
			IsCompactSummary bool   `json:"isCompactSummary"`
			Message          struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(ln), &r) != nil {
			continue
		}
		if r.Subtype == "compact_boundary" {
			cur++
			continue
		}
		var text string
		if r.Type == "user" && !r.IsCompactSummary && json.Unmarshal(r.Message.Content, &text) == nil {
			prompt = "turn-" + r.UUID
		}
		ids := []string{r.UUID}
		var blocks []struct{ Type, ID string }
		if json.Unmarshal(r.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					ids = append(ids, b.ID)
				}
			}
		}
		for _, id := range ids {
			if _, ok := seg[id]; !ok && id != "" {
				seg[id], turn[id] = cur, prompt
			}
		}
	}
	return seg, turn
}

// TestCompactionInsideTurn imports a real sample with a compaction put in
// the middle of its one turn: the turn stays in the segment it started
// in, and each step is in the segment its record is in, counted from the
// raw file.
func TestCompactionInsideTurn(t *testing.T) {
	path := adapterstest.CompactedMidTurn(t, "testdata", t.TempDir(), 14) // after the Read's result
	wantSeg, wantTurn := rawSegments(t, path)
	s := adapterstest.ParseRoots(t, Agent, path)
	if len(s) != 1 {
		t.Fatalf("%d sessions; want 1", len(s))
	}
	for _, sess := range s {
		mustValid(t, sess)
		a := gather(sess)
		if a.reasons() != "start,compaction" {
			t.Errorf("segments %s; want start,compaction", a.reasons())
		}
		if len(a.turns) != 1 || a.turns[0].SegmentIndex != 0 {
			t.Fatalf("turns %+v; want one, in segment 0 where it started", a.turns)
		}
		after := 0
		for _, st := range a.steps {
			seg, ok := wantSeg[st.ID]
			if !ok {
				t.Errorf("step %s (%s) is no record or call of the file", st.ID, st.Type)
				continue
			}
			if st.SegmentIndex != seg || st.TurnID != wantTurn[st.ID] {
				t.Errorf("step %d %s in %s segment %d; want %s segment %d", st.Seq, st.ID, st.TurnID, st.SegmentIndex, wantTurn[st.ID], seg)
			}
			if seg == 1 {
				after++
			}
		}
		if after < 2 {
			t.Errorf("%d steps after the compaction; want the summary and the turn's later steps", after)
		}
	}
}

// TestTelemetryStepSegment: a call known only from telemetry that
// happened after a compaction inside its turn is in the new segment, like
// a transcript step, while its turn stays in the one it started in.
func TestTelemetryStepSegment(t *testing.T) {
	ok := true
	r := adapters.Records{
		Header: store.SessionHeader{ID: "s", Agent: store.Agent{Kind: Kind, Version: "2.1.40"}, Workspace: store.Workspace{Root: "/w"},
			StartedAt: "2026-03-01T10:00:00Z", Source: "import:" + Kind},
		Segments: []store.Segment{
			{Index: 0, StartReason: "start", StartedAt: "2026-03-01T10:00:00Z", EndedAt: "2026-03-01T10:00:03Z", SourceFiles: []string{}},
			{Index: 1, StartReason: "compaction", StartedAt: "2026-03-01T10:00:03Z", SourceFiles: []string{}},
		},
		Actors: []store.Actor{adapters.RootActorRecord()},
		Turns:  []store.Turn{{ID: "turn-p1", SessionID: "s", ActorID: adapters.RootActor, Index: 1, StartedAt: "2026-03-01T10:00:00Z", StepIDs: []string{}}},
		Steps: []store.Step{{ID: "p1", SessionID: "s", TurnID: "turn-p1", ActorID: adapters.RootActor, Seq: 1, At: "2026-03-01T10:00:00Z",
			Type: store.TypeMessage, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeOK, ContentStatus: store.ContentInline,
			Channels: []string{"transcript"}, Flags: []store.Flag{}, Payload: store.Payload{Role: "user", Text: adapters.Text("go")}}},
	}
	recs := []store.TelemetryRecord{
		rec(KindToolResult, "toolu_before", 1, ToolEvent{At: "2026-03-01T10:00:02Z", ToolName: "Bash", Success: &ok}),
		rec(KindToolResult, "toolu_after", 2, ToolEvent{At: "2026-03-01T10:00:05Z", ToolName: "Bash", Success: &ok}),
	}
	sess := &adapters.Session{ID: "s", Batches: TelemetryBatches("s", r, recs, nil)}
	mustValid(t, sess)
	a := gather(sess)
	for id, want := range map[string]int64{"toolu_before": 0, "toolu_after": 1} {
		if st := a.step(t, id); st.SegmentIndex != want || st.TurnID != "turn-p1" {
			t.Errorf("telemetry step %s in %s segment %d; want turn-p1 segment %d", id, st.TurnID, st.SegmentIndex, want)
		}
	}
}
