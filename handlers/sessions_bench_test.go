package handlers

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// BenchmarkListAll10000 is GET /api/sessions, unpaged, on a store of
// 10,000 sessions of 10 steps each (as cmd/load seeds it): a real server
// and client asking for gzip, as load's does. The first GET of the server
// is timed apart (first-ms): it computes every summary, the later ones
// only those of sessions written since (none here: a write starts a search
// index catch-up in the background, whose time would show in the GET's). The store is built once per machine (a
// copy of os.TempDir()/bench-list-10000.db; delete it after a change of
// schema). docs/performance.md records the numbers.
func BenchmarkListAll10000(b *testing.B) {
	path := benchListStore(b, 10000)
	st, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatalf("store.Open(%s) = %v", path, err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(Routes(Deps{Store: st, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log}))
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func() {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/sessions", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := client.Do(req)
		if err != nil {
			b.Fatalf("GET /api/sessions = %v", err)
		}
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			b.Fatalf("gzip: %v", err)
		}
		n, err := io.Copy(io.Discard, zr)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || n < 10000*500 {
			b.Fatalf("GET /api/sessions = %d, %d bytes, %v", res.StatusCode, n, err)
		}
	}
	start := time.Now()
	get()
	first := time.Since(start)
	for b.Loop() {
		get()
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
}

// benchListStore copies a store of n sessions of 10 steps, built on first
// use, to a new temp file.
func benchListStore(b *testing.B, n int) string {
	b.Helper()
	cached := filepath.Join(os.TempDir(), fmt.Sprintf("bench-list-%d.db", n))
	if _, err := os.Stat(cached); err != nil {
		build := cached + fmt.Sprintf(".%d", os.Getpid())
		st, err := store.Open(context.Background(), build)
		if err != nil {
			b.Fatalf("store.Open(%s) = %v", build, err)
		}
		for i := range n {
			if _, err := st.Apply(context.Background(), storetest.Batch(fmt.Sprintf("list-%05d", i), 0, 10)); err != nil {
				b.Fatalf("Apply = %v", err)
			}
		}
		if err := st.Close(); err != nil {
			b.Fatalf("Close = %v", err)
		}
		if err := os.Rename(build, cached); err != nil {
			b.Fatalf("rename: %v", err)
		}
	}
	data, err := os.ReadFile(cached)
	if err != nil {
		b.Fatalf("read %s: %v", cached, err)
	}
	path := filepath.Join(b.TempDir(), "store.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatalf("write %s: %v", path, err)
	}
	return path
}
