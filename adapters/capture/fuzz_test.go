package capture

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
)

// FuzzDecodeLogsJSON feeds OTLP/JSON log exports (seeds in
// testdata/fuzz/FuzzDecodeLogsJSON) through the receiver's decoding and the
// merge: any body is refused with 400 or read into records that make valid
// batches, and nothing panics.
func FuzzDecodeLogsJSON(f *testing.F) {
	received := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		sessions, err := decodeLogs(body, true, received)
		var se *statusError
		if err != nil {
			if !errors.As(err, &se) || se.status != http.StatusBadRequest {
				t.Fatalf("decodeLogs = %v; want a 400 or records", err)
			}
			return
		}
		for _, s := range sessions {
			if !store.PlainID(s.id) {
				t.Fatalf("records kept for session id %q", s.id)
			}
			recs := make([]store.TelemetryRecord, len(s.records))
			for i, r := range s.records {
				if !json.Valid(r.Body) {
					t.Fatalf("record %s/%s body %q is not JSON", r.Kind, r.Key, r.Body)
				}
				r.Ord = int64(i + 1)
				recs[i] = r
			}
			for i, b := range claudecode.TelemetryBatches(s.id, adapters.Records{}, recs, nil) {
				out, err := json.Marshal(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := store.ParseBatch(out); err != nil {
					var inv *store.InvalidError
					errors.As(err, &inv)
					t.Fatalf("batch %d of %s: ParseBatch = %v %+v\n%s", i, s.id, err, inv, out)
				}
			}
		}
	})
}
