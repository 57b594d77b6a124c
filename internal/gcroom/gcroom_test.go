package gcroom

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// sample reads the collector's percentage and the live heap.
func sample() (pct, live uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// settled collects until the percentage Keep sets after a collection is
// the one that live heap asks for, and returns both; it fails t when
// that does not come within a few seconds.
func settled(t *testing.T, room uint64) (pct, live uint64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup runs after the collection
		pct, live = sample()
		if pct == uint64(percent(live, room)) {
			return pct, live
		}
	}
	t.Fatalf("the collector's percentage is %d with %d bytes live; want %d", pct, live, percent(live, room))
	return 0, 0
}

// percent puts the heap's next goal at live plus room, or at twice live
// when more than room is live, counting Go's least goal, which grows with
// the percentage (the goal is the larger of live grown by the percentage
// and heapMinimum grown by it): never under room or twice live, never over
// live plus the larger of the two.
func TestPercentSetsTheGoal(t *testing.T) {
	const room = 16 << 20
	for _, live := range []uint64{1, 100 << 10, 3 << 20, heapMinimum, 10 << 20, room, 64 << 20, 1 << 30} {
		p := uint64(percent(live, room))
		goal := max(live+live*p/100, heapMinimum*p/100)
		if p < 100 || goal+live/100 < max(room, 2*live) || goal > live+max(live, room) {
			t.Errorf("percent(%d, %d) = %d: the heap's goal %d; want from %d to %d",
				live, room, p, goal, max(room, 2*live), live+max(live, room))
		}
	}
}

// With little live, Keep gives the heap room to grow by room before the
// next collection; with more live than room, the collector keeps Go's
// default, so a process holding much collects once its heap has doubled.
func TestKeepGivesRoomToASmallHeap(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: Keep leaves the collector to it")
	}
	const room = 64 << 20
	Keep(room)
	pct, live := settled(t, room)
	if live >= room || pct <= 100 {
		t.Fatalf("with %d bytes live, the percentage is %d; want over 100", live, pct)
	}
	t.Logf("%d bytes live: %d%%", live, pct)

	held := make([]*[1 << 20]byte, 2*room>>20) // more live than room, in pieces the collector scans
	for i := range held {
		held[i] = new([1 << 20]byte)
	}
	if pct, live := settled(t, room); pct != 100 || live < 2*room {
		t.Errorf("with %d bytes live, the percentage is %d; want Go's default, 100", live, pct)
	}
	runtime.KeepAlive(held)
	held = nil
	if pct, _ := settled(t, room); pct <= 100 {
		t.Errorf("once the heap is small again, the percentage is %d; want over 100 again", pct)
	}
}
