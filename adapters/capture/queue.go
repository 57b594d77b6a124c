package capture

import (
	"context"
	"slices"
	"sync"
	"time"
)

// queue holds the jobs waiting for the worker, each at most once: live
// changes first, then the sessions a scan found. It counts the tries of a
// job until the job settles.
type queue struct {
	mu    sync.Mutex
	live  []job
	scans []job
	tries map[job]int
	wake  chan struct{}
}

func newQueue() *queue {
	return &queue{tries: map[job]int{}, wake: make(chan struct{}, 1)}
}

// push queues j unless it is waiting already; a live push moves a waiting
// scan job to the front.
func (q *queue) push(j job, live bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if slices.Contains(q.live, j) {
		return
	}
	if i := slices.Index(q.scans, j); i >= 0 {
		if !live {
			return
		}
		q.scans = slices.Delete(q.scans, i, i+1)
	}
	if live {
		q.live = append(q.live, j)
	} else {
		q.scans = append(q.scans, j)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next job and returns it with how often it was tried
// before; false when ctx ends.
func (q *queue) pop(ctx context.Context) (job, int, bool) {
	for {
		q.mu.Lock()
		var j job
		found := true
		switch {
		case len(q.live) > 0:
			j, q.live = q.live[0], q.live[1:]
		case len(q.scans) > 0:
			j, q.scans = q.scans[0], q.scans[1:]
		default:
			found = false
		}
		tries := q.tries[j]
		q.mu.Unlock()
		if found {
			return j, tries, true
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return job{}, 0, false
		}
	}
}

// later counts a try of j and queues it again after wait.
func (q *queue) later(j job, wait time.Duration) {
	q.mu.Lock()
	q.tries[j]++
	q.mu.Unlock()
	time.AfterFunc(wait, func() { q.push(j, true) })
}

// settle forgets the tries of j.
func (q *queue) settle(j job) {
	q.mu.Lock()
	delete(q.tries, j)
	q.mu.Unlock()
}
