package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// teamUser is a team server's user and their push token.
type teamUser struct{ name, token string }

// readTokens reads n users from a file of "USER TOKEN" lines.
func readTokens(path string, n int) ([]teamUser, error) {
	if path == "" {
		return nil, errors.New("--users needs --tokens FILE ('USER TOKEN' lines)")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var users []teamUser
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan() && len(users) < n; line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want 'USER TOKEN'", path, line)
		}
		users = append(users, teamUser{fields[0], fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(users) < n {
		return nil, fmt.Errorf("%s has %d users; --users asks for %d", path, len(users), n)
	}
	return users, nil
}

// team measures a team server: cli.Users users push 100-step batches to
// their own live session on --url at once, each waiting for its change
// event before the next push, as a live session's writer does at the end
// of each turn. The events are read on one stream on --stream-url (another
// server process on the same database), next to an idle stream per user
// up to the process's 32, each filtered to its user's session as a
// browser tab showing it is.
func (l *loader) team(ctx context.Context, out io.Writer, cli CLI) error {
	users, err := readTokens(cli.Tokens, cli.Users)
	if err != nil {
		return err
	}
	streamBase := l.base
	if cli.StreamURL != "" {
		if streamBase, err = loopbackURL(cli.StreamURL); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cli.Timeout)
	defer cancel()
	sid := func(u teamUser) string { return l.run + "-" + u.name }

	// One channel of change arrivals per user's session, fed from the
	// measuring stream.
	perSession := map[string]chan arrival{}
	for _, u := range users {
		perSession[sid(u)] = make(chan arrival, 16)
	}
	all := make(chan arrival, 4096)
	ready, err := l.stream(ctx, streamBase, users[0].name, "", all)
	if err != nil {
		return fmt.Errorf("stream on %s: %w", streamBase, err)
	}
	readies := []<-chan struct{}{ready}
	for _, u := range users[:min(len(users), 31)] {
		r, err := l.stream(ctx, streamBase, u.name, "?session="+url.QueryEscape(sid(u)), nil)
		if err != nil {
			return fmt.Errorf("idle stream of %s on %s: %w", u.name, streamBase, err)
		}
		readies = append(readies, r)
	}
	for _, r := range readies {
		select {
		case <-r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		for {
			select {
			case a := <-all:
				if ch, ok := perSession[a.session]; ok {
					select {
					case ch <- a:
					default:
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	fmt.Fprintf(out, "team server: %d users x %d pushes of 100 steps to %s, %v apart, change events read on %s (%d streams open there)\n",
		len(users), cli.UserPushes, l.base, cli.Pace, streamBase, len(readies))
	fmt.Fprintf(out, "  load average before: %s\n", loadAverage())
	var (
		mu                          sync.Mutex
		pushLat, eventLat, afterLat []time.Duration
		wg                          sync.WaitGroup
		errs                        = make(chan error, len(users))
	)
	start := time.Now()
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.userPushes(ctx, u, sid(u), cli.UserPushes, cli.Pace, perSession[sid(u)], func(push, event time.Duration) {
				mu.Lock()
				pushLat, eventLat, afterLat = append(pushLat, push), append(eventLat, event), append(afterLat, event-push)
				mu.Unlock()
			}); err != nil {
				errs <- fmt.Errorf("user %s: %w", u.name, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Fprintf(out, "  load average after:  %s\n", loadAverage())
	fmt.Fprintf(out, "  %d pushes in %v: %.0f pushes/s, %.0f steps/s\n", len(pushLat), wall.Round(time.Millisecond),
		float64(len(pushLat))/wall.Seconds(), float64(100*len(pushLat))/wall.Seconds())
	fmt.Fprintf(out, "  100-step push:                       %s\n", percentiles(pushLat))
	fmt.Fprintf(out, "  push to change event on the other:   %s\n", percentiles(eventLat))
	fmt.Fprintf(out, "  its answer to the event (may be < 0): %s\n", percentiles(afterLat))
	return nil
}

// userPushes pushes n 100-step batches of session sid as user u, each
// pace after the change event of the one before arrived on changes, and
// gives each push's latency and its push-to-event latency to record.
func (l *loader) userPushes(ctx context.Context, u teamUser, sid string, n int, pace time.Duration, changes <-chan arrival, record func(push, event time.Duration)) error {
	for p := range n {
		if p > 0 && pace > 0 {
			select {
			case <-time.After(pace):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		body := batch(sid, p*100, 100)
		for drained := false; !drained; { // a late second event of the push before
			select {
			case <-changes:
			default:
				drained = true
			}
		}
		start := time.Now()
		if err := l.pushAs(ctx, u.token, body); err != nil {
			return err
		}
		push := time.Since(start)
		select {
		case a := <-changes:
			record(push, a.at.Sub(start))
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no change event for %s within 10s of push %d", sid, p+1)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// loadAverage is the machine's load average (the first three fields of
// /proc/loadavg), or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
