package handlers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/internal/cputime"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// BenchmarkSessionPageAfterChange is each live refresh of a 100,000-step
// session (5,000 turns) over a real server: one step pushed (not timed),
// then GET /session?id=<big>. page-bytes is the page's size. docs/performance.md records the numbers.
func BenchmarkSessionPageAfterChange(b *testing.B) {
	st, srv := bigSessionServer(b)
	var size int64 // of the page, uncompressed
	get := func() { size = getPage(b, srv.URL+"/session?id=big") }
	get()                 // the first view computes everything: not timed
	var cpu time.Duration // of the process, over the timed views
	next := bigPushes * bigPerPush
	for b.Loop() {
		b.StopTimer()
		if _, err := st.Apply(context.Background(), storetest.Batch("big", next, 1)); err != nil {
			b.Fatalf("Apply = %v", err)
		}
		next++
		b.StartTimer()
		start := cputime.Used()
		get()
		cpu += cputime.Used() - start
	}
	b.ReportMetric(float64(size), "page-bytes")
	cputime.Report(b, cpu)
}

// The 100,000-step session "big" of storetest.Batch's steps (5,000 turns),
// in bigPushes pushes of bigPerPush.
const bigPushes, bigPerPush = 20, 5000

// bigSessionServer is a store holding the session "big", its search index
// caught up, and a real server of it.
func bigSessionServer(b *testing.B) (*store.Store, *httptest.Server) {
	path := filepath.Join(b.TempDir(), "store.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatalf("store.Open = %v", err)
	}
	for p := range bigPushes {
		if _, err := st.Apply(context.Background(), storetest.Batch("big", p, bigPerPush)); err != nil {
			b.Fatalf("Apply(push %d) = %v", p, err)
		}
	}
	if err := st.Close(); err != nil { // finishes the search index first
		b.Fatalf("Close = %v", err)
	}
	if st, err = store.Open(context.Background(), path); err != nil {
		b.Fatalf("store.Open = %v", err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(Routes(Deps{Store: st, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log}))
	b.Cleanup(srv.Close)
	return st, srv
}

// BenchmarkNextProblem is the e key's question on a page of the
// 100,000-step session that leaves steps out: GET /session/problem from a
// step spread over the session, after it and before it in turn.
func BenchmarkNextProblem(b *testing.B) {
	_, srv := bigSessionServer(b)
	i := 0
	for b.Loop() {
		dir := [2]string{"after", "before"}[i%2]
		getPage(b, fmt.Sprintf("%s/session/problem?id=big&%s=%d", srv.URL, dir, i*7919%(bigPushes*bigPerPush)))
		i++
	}
}

// BenchmarkSessionPageUsage is the page of a 20,000-step session with a
// usage record for every other step (10,000, about what a real Claude Code
// session of that length has: one per response), viewed again unchanged,
// and after a push of one step and its record (each live refresh).
func BenchmarkSessionPageUsage(b *testing.B) {
	const pushes, perPush = 4, 5000
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "store.db"))
	if err != nil {
		b.Fatalf("store.Open = %v", err)
	}
	b.Cleanup(func() { st.Close() })
	models := []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"}
	withUsage := func(batch *store.Batch) *store.Batch {
		for i, s := range batch.Steps {
			if s.Seq%2 == 0 {
				continue
			}
			n := int64(s.Seq)
			batch.Usage = append(batch.Usage, store.UsageRecord{ID: "msg_" + s.ID, At: s.At, Model: models[i%len(models)],
				ActorID: s.ActorID, TurnID: s.TurnID, Source: store.UsageFromFile,
				Tokens: pricing.Tokens{Input: 3 + n%7, Output: 100 + n%900, CacheRead: 20000 + n*13%90000, CacheCreation: n * 7 % 4000}})
		}
		return batch
	}
	for p := range pushes {
		if _, err := st.Apply(context.Background(), withUsage(storetest.Batch("big", p, perPush))); err != nil {
			b.Fatalf("Apply(push %d) = %v", p, err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(Routes(Deps{Store: st, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log}))
	b.Cleanup(srv.Close)
	get := func() { getPage(b, srv.URL+"/session?id=big") }
	get() // the first view computes everything: not timed
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			get()
		}
	})
	next := pushes * perPush
	b.Run("after-change", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := st.Apply(context.Background(), withUsage(storetest.Batch("big", next, 1))); err != nil {
				b.Fatalf("Apply = %v", err)
			}
			next++
			b.StartTimer()
			get()
		}
	})
}

// getPage GETs a page and returns its size, uncompressed; anything but
// 200 fails the benchmark.
func getPage(b *testing.B, url string) int64 {
	res, err := http.Get(url)
	if err != nil {
		b.Fatalf("GET %s = %v", url, err)
	}
	size, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s = %d, %v", url, res.StatusCode, err)
	}
	return size
}
