package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Limits and timings of the live stream.
const (
	MaxStreams   = 32
	PollInterval = 500 * time.Millisecond
	PingInterval = 15 * time.Second
	RetryMillis  = 2000
	// streamBuffer is how many changes a stream may lag behind; a stream
	// further behind is ended, and its client reconnects and refetches.
	streamBuffer = 256
	writeTimeout = 10 * time.Second
)

// ChangeSource is what the hub reads: the store's change stamps, which
// every process writing the store advances.
type ChangeSource interface {
	ChangesSince(ctx context.Context, stamp int64) ([]store.Change, int64, error)
	LatestStamp(ctx context.Context) (int64, error)
}

// Hub polls the store for changed sessions while at least one stream is
// open, and fans each change out to the streams that want it. It never
// blocks on a slow stream.
type Hub struct {
	src      ChangeSource
	log      *slog.Logger
	interval time.Duration // between checks while streams are open; 0: only when poked
	ping     time.Duration // between heartbeat comments
	poke     chan struct{}
	done     chan struct{}
	closing  sync.Once

	mu      sync.Mutex
	streams map[*stream]struct{}
	polling bool
	last    int64 // newest stamp already announced
}

type stream struct {
	session string // "" for every session
	changes chan store.Change
	dropped chan struct{} // closed when the hub ends this stream
}

// ErrTooManyStreams is returned by Subscribe when MaxStreams are open.
var ErrTooManyStreams = errors.New("too many live connections")

// errHubClosed is returned by Subscribe after Close.
var errHubClosed = errors.New("server is shutting down")

// NewHub returns a hub over src that checks every PollInterval while
// streams are open.
func NewHub(src ChangeSource, log *slog.Logger) *Hub {
	return &Hub{
		src: src, log: log, interval: PollInterval, ping: PingInterval,
		poke:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		streams: map[*stream]struct{}{},
	}
}

// NewNotifiedHub returns a hub over src that checks only when poked: by
// the store's change notifications, which every process writing it sends
// (a team server's PostgreSQL LISTEN/NOTIFY), so no process polls.
func NewNotifiedHub(src ChangeSource, log *slog.Logger) *Hub {
	h := NewHub(src, log)
	h.interval = 0
	return h
}

// Poke asks for a check at once, after a write in this process or a
// change notification.
func (h *Hub) Poke() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// Close ends every stream and refuses new ones.
func (h *Hub) Close() {
	h.closing.Do(func() { close(h.done) })
}

func (h *Hub) subscribe(ctx context.Context, session string) (*stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return nil, errHubClosed
	default:
	}
	if len(h.streams) >= MaxStreams {
		return nil, ErrTooManyStreams
	}
	if !h.polling {
		// No replay: start from what the store holds now.
		last, err := h.src.LatestStamp(ctx)
		if err != nil {
			return nil, err
		}
		h.last = last
		h.polling = true
		go h.poll()
	}
	s := &stream{session: session, changes: make(chan store.Change, streamBuffer), dropped: make(chan struct{})}
	h.streams[s] = struct{}{}
	return s, nil
}

func (h *Hub) unsubscribe(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, s)
}

// poll runs while streams are open.
func (h *Hub) poll() {
	var tick <-chan time.Time // nil for a notified hub: never ticks
	if h.interval > 0 {
		t := time.NewTicker(h.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-h.done:
			return
		case <-tick:
		case <-h.poke:
		}
		if !h.check() {
			return
		}
	}
}

// check sends the changes since the last check, at most one per session,
// and reports whether polling goes on.
func (h *Hub) check() bool {
	h.mu.Lock()
	if len(h.streams) == 0 {
		h.polling = false
		h.mu.Unlock()
		return false
	}
	since := h.last
	h.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	changes, latest, err := h.src.ChangesSince(ctx, since)
	cancel()
	if err != nil {
		h.log.Warn("live stream: reading changes", "err", err)
		return true
	}
	latestBySession := map[string]store.Change{}
	var order []string
	for _, c := range changes {
		if c.Deleted {
			views.ForgetHighlights() // deleted by this process or another
		}
		if _, seen := latestBySession[c.SessionID]; !seen {
			order = append(order, c.SessionID)
		}
		latestBySession[c.SessionID] = c
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = latest
	for _, id := range order {
		c := latestBySession[id]
		for s := range h.streams {
			if s.session != "" && s.session != id {
				continue
			}
			select {
			case s.changes <- c:
			default:
				close(s.dropped)
				delete(h.streams, s)
			}
		}
	}
	return true
}

// events is GET and HEAD /api/events: the server-sent change stream.
func events(hub *Hub, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		s, err := hub.subscribe(r.Context(), r.URL.Query().Get("session"))
		if err != nil {
			w.Header().Del("Content-Type")
			if errors.Is(err, ErrTooManyStreams) || errors.Is(err, errHubClosed) {
				writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error()})
				return
			}
			writeError(w, r, log, err)
			return
		}
		defer hub.unsubscribe(s)

		rc := http.NewResponseController(w)
		send := func(frame string) bool {
			rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := fmt.Fprint(w, frame); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if !send(fmt.Sprintf("retry: %d\n\nevent: ready\ndata: {}\n\n", RetryMillis)) {
			return
		}
		ping := time.NewTicker(hub.ping)
		defer ping.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-hub.done:
				return
			case <-s.dropped:
				return
			case <-ping.C:
				if !send(": ping\n\n") {
					return
				}
			case c := <-s.changes:
				data, _ := json.Marshal(changeEvent{SessionID: c.SessionID, UpdatedAt: store.FormatStamp(c.Stamp)})
				if !send("event: change\ndata: " + string(data) + "\n\n") {
					return
				}
			}
		}
	})
}

// changeEvent is the data of a change frame: which session, and its new
// change stamp. Clients refetch the session.
type changeEvent struct {
	SessionID string `json:"session_id"`
	UpdatedAt string `json:"updated_at"`
}
