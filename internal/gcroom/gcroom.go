// Package gcroom gives a process whose live heap is small some room
// between two runs of the garbage collector (Keep).
package gcroom

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// mark is what each collection frees, so that its cleanup runs once after
// it; it holds a pointer, so it is not one of the tiny objects several of
// which share a block (whose cleanups may never run).
type mark struct {
	_ *byte
	_ [24]byte
}

var once sync.Once

// heapMinimum is Go's least heap goal at GOGC=100 (the runtime's
// defaultHeapMinimum), which grows with the percentage: at 400, 16 MB.
// The percentage is reckoned on at least this much live, or a live heap
// of 100 KB would set a least goal of gigabytes.
const heapMinimum = 4 << 20

// percent is the collector's percentage at which the next collection
// comes when a heap of live bytes has grown to live plus room (to between
// room and live plus room while less than heapMinimum is live), or to
// twice live when more than room is live: room over the live heap (or
// over heapMinimum), and never under 100, Go's default.
func percent(live, room uint64) int {
	return int(max(100, room*100/max(live, heapMinimum)))
}

// Keep sets, after each collection, the collector's percentage (GOGC) so
// that the heap may grow by about room before the next one (percent of
// the heap live after it). With Go's default, a process whose live heap
// is 4 MB collects after every 4 MB it allocates. A live heap larger than
// room keeps the default, so a process that holds much for a while (an
// export of a long message) still collects when its heap has doubled.
// GOGC set in the environment wins: Keep does nothing then. Keep runs for
// the rest of the process; a second call does nothing.
func Keep(room uint64) {
	if os.Getenv("GOGC") != "" {
		return
	}
	once.Do(func() {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var arm func()
		arm = func() {
			runtime.AddCleanup(new(mark), func(struct{}) {
				metrics.Read(live)
				debug.SetGCPercent(percent(live[0].Value.Uint64(), room))
				arm()
			}, struct{}{})
		}
		arm()
	})
}
