// Command load drives a running service over loopback and prints what it
// measured: ingest rate, push latency with 32 streams open, push-to-change
// latency, and list and session latency on a store of many sessions. With
// --users it measures a team server instead: that many users pushing live
// sessions at once, each with its own token, and the change events of
// their pushes read on another process (--stream-url). Every phase is
// bounded in count and time, and the command ends by itself.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
)

// CLI holds the load command's options.
type CLI struct {
	URL       string        `help:"Base URL of the running service (loopback only)." default:"http://127.0.0.1:1234"`
	TokenFile string        `help:"Ingest token file (default: SERVICE_INGEST_TOKEN_FILE or ~/.service/ingest-token)." placeholder:"PATH"`
	Batches   int           `help:"5000-step gzip batches to push in the ingest phase." default:"10"`
	Pushes    int           `help:"100-step pushes while 32 streams are open." default:"300"`
	Sessions  int           `help:"Sessions the store should hold for the read phase (small ones are pushed until it does)." default:"10000"`
	Reads     int           `help:"Requests per read route in the read phase." default:"30"`
	BigSteps  int           `help:"Steps of one big session whose page is timed (0: skip)." default:"100000"`
	Timeout   time.Duration `help:"Upper bound for each phase." default:"3m"`

	Users      int           `help:"Team server: users pushing live sessions at once, each with a token from --tokens (0: the local phases instead)." default:"0"`
	Tokens     string        `help:"Team server: file of 'USER TOKEN' lines, one a user (service team token add USER prints the token)." type:"existingfile" placeholder:"FILE"`
	UserPushes int           `help:"Team server: 100-step pushes per user." default:"20"`
	Pace       time.Duration `help:"Team server: each user's wait after a push's change event before the next push (0: at once, the server's capacity)." default:"0s"`
	StreamURL  string        `help:"Team server: base URL of the process whose event stream the pushes' changes are read on (default: --url)." placeholder:"URL"`
	UserHeader string        `help:"Team server: header naming the signed-in user on the streams, as the server's --auth-header (X-Forwarded-User)." placeholder:"NAME"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cli CLI
	kong.Parse(&cli, kong.Name("load"), kong.Description("Measure a running service over loopback."))
	if err := run(ctx, cli, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

type loader struct {
	base   *url.URL
	token  string
	client *http.Client
	run    string // a prefix that keeps this run's session ids apart
	// userHeader, when set, is the header naming the reading user on a
	// team server's streams (--users), as its sign-in proxy sets it.
	userHeader string
}

func run(ctx context.Context, cli CLI, out io.Writer) error {
	base, err := loopbackURL(cli.URL)
	if err != nil {
		return err
	}
	l := &loader{base: base, run: fmt.Sprintf("load-%d", time.Now().UnixNano()), userHeader: cli.UserHeader,
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if cli.Users > 0 {
		return l.team(ctx, out, cli)
	}
	if l.token, err = readToken(cli.TokenFile); err != nil {
		return err
	}

	phase := func(name string, f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, cli.Timeout)
		defer cancel()
		if err := f(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	fmt.Fprintf(out, "load against %s\n\n", cli.URL)
	if err := phase("ingest", func(ctx context.Context) error { return l.ingestRate(ctx, out, cli.Batches) }); err != nil {
		return err
	}
	if err := phase("pushes with streams", func(ctx context.Context) error { return l.pushesWithStreams(ctx, out, cli.Pushes) }); err != nil {
		return err
	}
	if err := phase("reads", func(ctx context.Context) error { return l.reads(ctx, out, cli.Sessions, cli.Reads) }); err != nil {
		return err
	}
	if cli.BigSteps == 0 {
		return nil
	}
	return phase("big session", func(ctx context.Context) error { return l.bigSession(ctx, out, cli.BigSteps, cli.Reads) })
}

// bigSession pushes one session of n steps in 5000-step batches and times
// its page and its JSON detail narrowed as the page reads it.
func (l *loader) bigSession(ctx context.Context, out io.Writer, n, reads int) error {
	sid := l.run + "-big"
	for from := 0; from < n; from += 5000 {
		if err := l.push(ctx, batch(sid, from, min(5000, n-from))); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "a session of %d steps:\n", n)
	for _, r := range []struct{ name, path string }{
		{"GET /session?id=<big> (page)", "/session?id=" + url.QueryEscape(sid)},
		{"GET /api/sessions/<big>?turns=30&head=2048", "/api/sessions/" + url.PathEscape(sid) + "?turns=30&head=2048"},
	} {
		var lat []time.Duration
		for range reads {
			start := time.Now()
			if err := l.getJSON(ctx, r.path, nil); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		fmt.Fprintf(out, "  %-44s %s\n", r.name, percentiles(lat))
		sizes := make([]int64, len(encodings))
		for i, enc := range encodings {
			n, err := l.transferSize(ctx, r.path, enc)
			if err != nil {
				return err
			}
			sizes[i] = n
		}
		fmt.Fprintf(out, "  %-44s %s\n", "", transferSizes(sizes))
	}
	// The first view after a change, as each live refresh of a session
	// being written is: one step pushed before each GET.
	var lat []time.Duration
	for i := range reads {
		if err := l.push(ctx, batch(sid, n+i, 1)); err != nil {
			return err
		}
		start := time.Now()
		if err := l.getJSON(ctx, "/session?id="+url.QueryEscape(sid), nil); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
	}
	fmt.Fprintf(out, "  %-44s %s\n", "GET /session?id=<big> after a 1-step push", percentiles(lat))
	return nil
}

// encodings are the Accept-Encoding values whose transfer sizes are shown.
var encodings = []string{"identity", "gzip", "zstd"}

func transferSizes(sizes []int64) string {
	var parts []string
	for i, n := range sizes {
		parts = append(parts, fmt.Sprintf("%s %d bytes (%.1f%%)", encodings[i], n, 100*float64(n)/float64(sizes[0])))
	}
	return strings.Join(parts, ", ")
}

// transferSize is how many bytes the server sends for path to a client
// accepting only the given encoding, as they travel (not decoded).
func (l *loader) transferSize(ctx context.Context, path, encoding string) (int64, error) {
	req, err := l.newGet(ctx, l.base, path, "")
	if err != nil {
		return 0, err
	}
	// Set by hand, the header also stops the client from decoding the body.
	req.Header.Set("Accept-Encoding", encoding)
	res, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", path, res.Status)
	}
	if got := res.Header.Get("Content-Encoding"); encoding != "identity" && got != encoding {
		return 0, fmt.Errorf("GET %s accepting %s: content-encoding %q", path, encoding, got)
	}
	return io.Copy(io.Discard, res.Body)
}

// loopbackURL parses a base URL and refuses one that is not on this
// machine.
func loopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s is not a loopback address: load is only sent to this machine", raw)
	}
	return u, nil
}

// newGet is a GET of path on base, as user when the loader names users
// (--user-header) and user is not "".
func (l *loader) newGet(ctx context.Context, base *url.URL, path, user string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+path, nil)
	if err == nil && l.userHeader != "" && user != "" {
		req.Header.Set(l.userHeader, user)
	}
	return req, err
}

func readToken(path string) (string, error) {
	if path == "" {
		path = os.Getenv("SERVICE_INGEST_TOKEN_FILE")
	}
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		path = filepath.Join(home, ".service", "ingest-token")
	}
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// batch returns a gzip batch for session sid with steps seq from..from+n-1
// (the header, segment, actor and one turn per 50 steps come along).
func batch(sid string, from, n int) []byte {
	return batchAt(sid, from, n, "2026-11-20T09:00:00Z")
}

// batchAt is batch with the session starting at ts.
func batchAt(sid string, from, n int, ts string) []byte {
	var steps, turns []any
	for i := from; i < from+n; i++ {
		turn := fmt.Sprintf("t%d", i/50)
		if i == from || i%50 == 0 {
			turns = append(turns, map[string]any{"id": turn, "session_id": sid, "segment_index": 0, "actor_id": "root",
				"index": i/50 + 1, "started_at": ts, "step_ids": []any{}})
		}
		st := map[string]any{"id": fmt.Sprintf("s%d", i), "session_id": sid, "segment_index": 0, "turn_id": turn,
			"actor_id": "root", "seq": i, "at": ts, "decision": "accepted", "outcome": "ok",
			"content_status": "inline", "channels": []any{"hook"}, "flags": []any{}}
		switch i % 4 {
		case 0:
			st["type"], st["decision"] = "message", "n/a"
			st["payload"] = map[string]any{"role": "assistant", "text": strings.Repeat("The tests pass now. ", 10)}
		case 1:
			st["type"] = "command"
			st["payload"] = map[string]any{"command": "go test ./...", "exit_code": 0, "cwd": "/w",
				"stdout": strings.Repeat("ok  \texample.com/pkg\t0.012s\n", 20)}
		case 2:
			st["type"] = "edit"
			st["payload"] = map[string]any{"path": "/w/main.go", "old_string": "return a", "new_string": "return a + b", "is_full_write": false}
		default:
			st["type"] = "read"
			st["payload"] = map[string]any{"path": "/w/main.go", "range": []any{1, 80}}
		}
		steps = append(steps, st)
	}
	b, _ := json.Marshal(map[string]any{
		"schema_version": "1.2",
		"session": map[string]any{"id": sid, "agent": map[string]any{"kind": "load", "version": "1"},
			"workspace": map[string]any{"root": "/w"}, "started_at": ts},
		"segments": []any{map[string]any{"index": 0, "start_reason": "start", "started_at": ts, "source_files": []any{}}},
		"actors":   []any{map[string]any{"id": "root", "type": "root"}},
		"turns":    turns, "steps": steps,
	})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func (l *loader) push(ctx context.Context, body []byte) error {
	return l.pushAs(ctx, l.token, body)
}

// pushAs pushes body with the given token.
func (l *loader) pushAs(ctx context.Context, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base.JoinPath("/api/ingest").String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	res, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		return fmt.Errorf("push: %s: %s", res.Status, msg)
	}
	return nil
}

func (l *loader) ingestRate(ctx context.Context, out io.Writer, batches int) error {
	bodies := make([][]byte, batches)
	for i := range bodies {
		bodies[i] = batch(fmt.Sprintf("%s-ingest-%d", l.run, i), 0, 5000)
	}
	start := time.Now()
	for _, b := range bodies {
		if err := l.push(ctx, b); err != nil {
			return err
		}
	}
	d := time.Since(start)
	fmt.Fprintf(out, "ingest: %d batches of 5000 steps (gzip) in %v: %.0f steps/s\n", batches, d.Round(time.Millisecond), float64(batches*5000)/d.Seconds())
	return nil
}

// stream opens /api/events on base as user and sends each change's
// session id, with the time it arrived, on changes; a change that finds
// changes full is dropped.
func (l *loader) stream(ctx context.Context, base *url.URL, user, query string, changes chan<- arrival) (ready <-chan struct{}, err error) {
	req, err := l.newGet(ctx, base, "/api/events"+query, user)
	if err != nil {
		return nil, err
	}
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("stream: %s", res.Status)
	}
	readyCh := make(chan struct{})
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			if line == "event: ready" {
				once.Do(func() { close(readyCh) })
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && changes != nil && data != "{}" {
				var c struct {
					SessionID string `json:"session_id"`
				}
				if json.Unmarshal([]byte(data), &c) == nil {
					select {
					case changes <- arrival{c.SessionID, time.Now()}:
					default:
					}
				}
			}
		}
	}()
	return readyCh, nil
}

type arrival struct {
	session string
	at      time.Time
}

func (l *loader) pushesWithStreams(ctx context.Context, out io.Writer, pushes int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sid := l.run + "-live"
	if err := l.push(ctx, batch(sid, 0, 100)); err != nil {
		return err
	}
	changes := make(chan arrival, 64)
	var readies []<-chan struct{}
	for i := range 32 { // 31 idle streams and the one that measures
		var ch chan<- arrival
		query := ""
		if i == 0 {
			ch, query = changes, "?session="+url.QueryEscape(sid)
		}
		ready, err := l.stream(ctx, l.base, "", query, ch)
		if err != nil {
			return fmt.Errorf("stream %d: %w", i+1, err)
		}
		readies = append(readies, ready)
	}
	for _, r := range readies {
		select {
		case <-r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var pushLat, changeLat []time.Duration
	for i := 1; i <= pushes; i++ {
		body := batch(sid, i*100, 100)
		start := time.Now()
		if err := l.push(ctx, body); err != nil {
			return err
		}
		pushLat = append(pushLat, time.Since(start))
		for waiting := true; waiting; {
			select {
			case a := <-changes:
				if a.session == sid {
					changeLat = append(changeLat, a.at.Sub(start))
					waiting = false
				}
			case <-time.After(5 * time.Second):
				return errors.New("no change event within 5s of a push")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	fmt.Fprintf(out, "100-step push with 32 streams open: %s\n", percentiles(pushLat))
	fmt.Fprintf(out, "push to change event:               %s\n", percentiles(changeLat))
	return nil
}

func (l *loader) reads(ctx context.Context, out io.Writer, sessions, reads int) error {
	var list struct {
		Total struct {
			Sessions int `json:"sessions"`
		} `json:"total"`
	}
	if err := l.getJSON(ctx, "/api/sessions", &list); err != nil {
		return err
	}
	seeded := 0
	for n := list.Total.Sessions; n < sessions; n++ {
		// Newer than the big sessions of the other phases, as most sessions of a real store are small.
		at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format(time.RFC3339)
		if err := l.push(ctx, batchAt(fmt.Sprintf("%s-read-%d", l.run, n), 0, 10, at)); err != nil {
			return err
		}
		seeded++
	}
	big := l.run + "-ingest-0" // 5000 steps, from the ingest phase
	routes := []struct{ name, path string }{
		{"GET /api/sessions (all)", "/api/sessions"},
		{"GET /api/sessions?limit=100", "/api/sessions?limit=100"},
		{"GET / (list page)", "/"},
		{"GET /api/sessions/<5000 steps>", "/api/sessions/" + url.PathEscape(big)},
		{"GET /session?id=<5000 steps> (page)", "/session?id=" + url.QueryEscape(big)},
	}
	fmt.Fprintf(out, "reads on a store of %d sessions (%d pushed for this phase):\n", max(sessions, list.Total.Sessions), seeded)
	for _, r := range routes {
		var lat []time.Duration
		for range reads {
			start := time.Now()
			if err := l.getJSON(ctx, r.path, nil); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		fmt.Fprintf(out, "  %-38s %s\n", r.name, percentiles(lat))
	}
	return nil
}

func (l *loader) getJSON(ctx context.Context, path string, v any) error {
	req, err := l.newGet(ctx, l.base, path, "")
	if err != nil {
		return err
	}
	res, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, res.Status)
	}
	if v == nil {
		_, err = io.Copy(io.Discard, res.Body)
		return err
	}
	return json.NewDecoder(res.Body).Decode(v)
}

func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	slices.Sort(d)
	at := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return fmt.Sprintf("p50 %v  p99 %v  max %v  (n=%d)", at(.50).Round(10*time.Microsecond), at(.99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond), len(d))
}
