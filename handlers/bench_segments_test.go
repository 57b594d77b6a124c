package handlers

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkSessionPageSegments is the session page (the 30 most recent
// turns) of a 10,000-step session of 500 turns, in one segment and with a
// compaction inside turn 5: the shown turns are then in segment 2, so the
// page looks up the segment before its first turn (segmentsBefore). The
// ratio of the two in one run is the look-up's cost.
func BenchmarkSessionPageSegments(b *testing.B) {
	for _, c := range []struct {
		name      string
		compacted bool
	}{{"one-segment", false}, {"compacted", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := newTestService(b)
			sid := "bench-" + c.name
			at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
			x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
			if c.compacted {
				x["segments"] = arr{
					obj{"index": 0, "start_reason": "start", "started_at": isoUTC(at), "source_files": arr{}},
					obj{"index": 1, "start_reason": "compaction", "started_at": isoUTC(at.Add(90 * time.Second)), "source_files": arr{}},
				}
			}
			const turns, perTurn = 500, 20
			var ts, steps arr
			for n := 1; n <= turns; n++ {
				seg := 0
				if c.compacted && n > 5 {
					seg = 1
				}
				ts = append(ts, withFields(turnRec(sid, n, at.Add(time.Duration(n*perTurn)*time.Second), ""), "segment_index", seg))
				for i := range perTurn {
					seq := (n-1)*perTurn + i + 1
					stepAt := at.Add(time.Duration(seq) * time.Second)
					g := seg
					if c.compacted && n == 5 && i >= perTurn/2 {
						g = 1
					}
					steps = append(steps, withFields(stepRec(sid, seq, n, stepAt, "command", obj{"command": fmt.Sprintf("make %d", seq), "stdout": "ok"}), "segment_index", g))
				}
			}
			x["turns"], x["steps"] = ts, steps[:5000]
			s.mustPush(x, http.StatusCreated)
			s.mustPush(laterPush(x, nil, steps[5000:]), http.StatusOK)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if rec := s.get("/session?id=" + sid); rec.Code != http.StatusOK {
					b.Fatalf("GET /session = %d", rec.Code)
				}
			}
		})
	}
}
