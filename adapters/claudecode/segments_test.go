package claudecode

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
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
	s := parseRoots(t, path)
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
