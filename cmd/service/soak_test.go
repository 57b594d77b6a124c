package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak runs the real server in this process with 32 stream clients and
// pushes at 50 a second for SERVICE_SOAK (e.g. 60s; CI runs it briefly):
// heap stays flat and under 80 MB, every client gets a change for every
// pushed session, and the goroutine count returns to its start.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SERVICE_SOAK"))
	if err != nil {
		t.Skip("set SERVICE_SOAK=60s (a duration) to run the soak test")
	}
	home := withHome(t)
	port := freePort(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out syncBuffer
	served := make(chan error, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--port", strconv.Itoa(port), "--db", filepath.Join(home, "s.db")}, &out, &out)
	}()
	waitListening(t, port, &out)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	token := ingestToken(t, home)
	// A dial succeeds once the socket listens, before the server's Serve
	// goroutine runs: one answered request makes sure it does, and the
	// count is taken once that request's connection has gone.
	resp, err := http.Get(base + "/api/sessions?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	startGoroutines := settledGoroutines()

	streamCtx, closeStreams := context.WithCancel(context.Background())
	var (
		clients sync.WaitGroup
		got     [32]atomic.Int64
	)
	ready := make(chan struct{}, 32)
	for i := range 32 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, base+"/api/events", nil)
			res, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				ready <- struct{}{}
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				switch line := sc.Text(); {
				case line == "event: ready":
					ready <- struct{}{}
				case line == "event: change":
					got[i].Add(1)
				}
			}
		}()
	}
	for range 32 {
		<-ready
	}

	// The heap live after the last collection: the heap in use grows by up
	// to the server's collectorRoom between two collections.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var heap []uint64
	tick := time.NewTicker(20 * time.Millisecond) // 50 pushes a second
	defer tick.Stop()
	pushed := 0
	for end := time.Now().Add(d); time.Now().Before(end); pushed++ {
		<-tick.C
		code, body, err := pushTo(base, token, batchJSON(fmt.Sprintf("soak-%d", pushed), 1))
		if err != nil || code != http.StatusCreated {
			t.Fatalf("push %d = %d %s %v", pushed, code, body, err)
		}
		if pushed%50 == 0 {
			metrics.Read(live)
			heap = append(heap, live[0].Value.Uint64())
		}
	}
	time.Sleep(time.Second) // the last changes reach the streams
	for i := range got {
		if n := got[i].Load(); n != int64(pushed) {
			t.Errorf("stream %d got %d changes for %d pushed sessions", i, n, pushed)
		}
	}
	closeStreams()
	clients.Wait()

	first, last := heap[0], heap[len(heap)-1]
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("%d pushes over %v: heap live %d MB at the start, %d MB at the end; %d MB from the OS",
		pushed, d, first>>20, last>>20, m.Sys>>20)
	if last > first+16<<20 {
		t.Errorf("heap grew from %d MB to %d MB: not flat", first>>20, last>>20)
	}
	if m.Sys > 80<<20 {
		t.Errorf("the process holds %d MB; the target is under 80 MB", m.Sys>>20)
	}
	http.DefaultClient.CloseIdleConnections() // the pushes' keep-alive connection
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > startGoroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > startGoroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the streams closed; %d before they opened:\n%s", n, startGoroutines, buf[:runtime.Stack(buf, true)])
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("serve = %v", err)
	}
}

// settledGoroutines is the number of goroutines once it has not changed
// for 100 ms (at most 2 s).
func settledGoroutines() int {
	n, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(2 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}
