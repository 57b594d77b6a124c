package handlers

// Benchmarks of POST /api/ingest end to end: a real HTTP server over the
// real router and a temp-file store, and a real client sending gzip bodies
// with the bearer token. store/bench_test.go splits the same work into
// decode+validate, Apply and the raw SQLite insert it is measured against;
// docs/performance.md records the numbers. Run them with
//
//	go test -run '^$' -bench . -benchmem -count 6 ./store/ ./handlers/

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentreview/service/internal/cputime"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// benchSessionTemplate stands for the session id in a prepared body; it is
// as long as every benchSessionID, so bodies keep their size.
const benchSessionTemplate = "5e55104e-ffff-4fff-8fff-ffffffffffff"

// BenchmarkIngest5000Gzip pushes a new 5000-step session per iteration: one
// full-size batch (about 6.5 MB of JSON, 1.2 MB gzipped), as an import of a
// long session sends it. The search index is caught up after each push,
// outside the timer, so sec/op and steps/s are the push alone, the work
// BenchmarkRawInsert5000 is compared with; indexed-steps/s counts the
// catch-up too, the rate a stream of pushes can keep up.
func BenchmarkIngest5000Gzip(b *testing.B) {
	const steps = 5000
	url, st := benchServer(b)
	tmpl := benchTemplate(b, 0, steps)
	client := &http.Client{}
	var indexing, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		body := benchGzip(b, bytes.ReplaceAll(tmpl, []byte(benchSessionTemplate), []byte(benchSessionID(i))))
		b.StartTimer()
		start := cputime.Used()
		benchPush(b, client, url, body, http.StatusCreated)
		cpu += cputime.Used() - start
		b.StopTimer()
		indexing += benchCatchUp(b, st)
		b.StartTimer()
	}
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(steps*b.N)/(b.Elapsed()+indexing).Seconds(), "indexed-steps/s")
	cputime.Report(b, cpu)
}

// BenchmarkIngest5000GzipIndexed pushes new 5000-step sessions as
// BenchmarkIngest5000Gzip does, but back to back, with the search index's
// background catch-up running as on a server (IndexInChunks) and nothing
// caught up outside the timer: the timer stops when the last push is
// searchable. sec/op is the rate a stream of such pushes can be kept
// searchable, cpu-ms/op the process's CPU for a push and its indexing,
// push-p50-ms and push-p99-ms what the client waited for each push.
func BenchmarkIngest5000GzipIndexed(b *testing.B) {
	const steps = 5000
	url, st := benchServer(b)
	tmpl := benchTemplate(b, 0, steps)
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = benchGzip(b, bytes.ReplaceAll(tmpl, []byte(benchSessionTemplate), []byte(benchSessionID(i))))
	}
	client := &http.Client{}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Used()
	for i := range b.N {
		start := time.Now()
		benchPush(b, client, url, bodies[i], http.StatusCreated)
		took = append(took, time.Since(start))
	}
	benchCatchUp(b, st)
	cputime.Report(b, cputime.Used()-cpu)
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
	slices.Sort(took)
	b.ReportMetric(benchPercentile(took, 0.50), "push-p50-ms")
	b.ReportMetric(benchPercentile(took, 0.99), "push-p99-ms")
}

// benchCatchUp brings the search index up to date (a search catches it up
// first) and returns how long that took.
func benchCatchUp(b *testing.B, st *store.Store) time.Duration {
	start := time.Now()
	if _, err := st.Search(context.Background(), store.SearchQuery{Q: "catchup", Limit: 1}); err != nil {
		b.Fatalf("Search = %v", err)
	}
	return time.Since(start)
}

// BenchmarkIngest100Gzip is the live case: a session pushed 100 steps at a
// time (five new turns each), 50 pushes per session before the next one
// starts. The first push creates the session with its segment and actors;
// the others point at them in the store and add steps at the next seqs.
// It reports the p50 and p99 of the per-push latency seen by the client.
func BenchmarkIngest100Gzip(b *testing.B) {
	const steps, pushes = 100, 50
	url, _ := benchServer(b)
	tmpls := make([][]byte, pushes)
	for k := range tmpls {
		tmpls[k] = benchTemplate(b, k, steps)
	}
	client := &http.Client{}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		push := i % pushes
		body := benchGzip(b, bytes.ReplaceAll(tmpls[push], []byte(benchSessionTemplate), []byte(benchSessionID(i/pushes))))
		want := http.StatusOK
		if push == 0 {
			want = http.StatusCreated
		}
		b.StartTimer()
		start := time.Now()
		benchPush(b, client, url, body, want)
		took = append(took, time.Since(start))
	}
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
	slices.Sort(took)
	b.ReportMetric(benchPercentile(took, 0.50), "p50-ms")
	b.ReportMetric(benchPercentile(took, 0.99), "p99-ms")
}

// benchPercentile is the nearest-rank percentile of sorted, in milliseconds.
func benchPercentile(sorted []time.Duration, p float64) float64 {
	i := int(float64(len(sorted))*p+0.999999) - 1
	return float64(sorted[max(i, 0)]) / float64(time.Millisecond)
}

// benchServer serves the real routes over a temp-file store, opened as
// cmd/service serve opens it (store.ServerOptions), and
// returns the ingest URL and the store.
func benchServer(b *testing.B) (string, *store.Store) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "store.db")
	st, err := store.Open(context.Background(), path, store.ServerOptions()...)
	if err != nil {
		b.Fatalf("store.Open(%s) = %v", path, err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewHub(st, log)
	b.Cleanup(hub.Close)
	srv := httptest.NewServer(Routes(Deps{Store: st, Hub: hub, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log}))
	b.Cleanup(srv.Close)
	return srv.URL + "/api/ingest", st
}

// benchTemplate is the JSON of push number push (n steps) of a session
// whose id is benchSessionTemplate.
func benchTemplate(b *testing.B, push, n int) []byte {
	b.Helper()
	body, err := json.Marshal(storetest.Batch(benchSessionTemplate, push, n))
	if err != nil {
		b.Fatalf("json.Marshal = %v", err)
	}
	if len(body) > MaxBody {
		b.Fatalf("batch of %d steps is %d bytes; the limit is %d", n, len(body), MaxBody)
	}
	return body
}

func benchGzip(b *testing.B, body []byte) []byte {
	b.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(body)
	if err := zw.Close(); err != nil {
		b.Fatalf("gzip = %v", err)
	}
	return buf.Bytes()
}

// benchPush sends one gzip body as a client does and drains the answer, so
// the connection is reused.
func benchPush(b *testing.B, client *http.Client, url string, body []byte, want int) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatalf("POST /api/ingest = %v", err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != want {
		b.Fatalf("POST /api/ingest = %d %s (%v); want %d", resp.StatusCode, answer, err, want)
	}
}

// ---- realistic batches (same generator as store/bench_test.go) ----

// benchSessionID is a UUID-shaped session id, unique per n.
func benchSessionID(n int) string {
	return fmt.Sprintf("5e55104e-0000-4000-8000-%012d", n)
}
