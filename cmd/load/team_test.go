package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
	"github.com/agentreview/service/store/postgres/pgtest"
)

// teamProcess starts a team server on dsn, as `service serve --team
// --auth-header X-Forwarded-User` does, on a free loopback port: its own
// connections to the database and its own live stream fed by PostgreSQL's
// notifications. It returns the server's base URL and its store.
func teamProcess(t *testing.T, dsn string) (string, *postgres.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	origin := &url.URL{Scheme: "http", Host: srv.Listener.Addr().String()}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := handlers.NewNotifiedHub(st, log)
	go st.Listen(ctx, hub.Poke)
	srv.Config.Handler = handlers.Routes(handlers.Deps{Store: st, Hub: hub, Log: log,
		Team: &handlers.Team{Origin: origin, Users: handlers.HeaderIdentity{Header: "X-Forwarded-User"}, Tokens: st}})
	srv.Start()
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		st.Close()
	})
	return srv.URL, st
}

// TestTeamPhase runs the team phase against two team server processes on
// one database: every user's pushes land in their own session, as theirs,
// and every push's change event is counted from the other process.
func TestTeamPhase(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, st := teamProcess(t, dsn)
	b, _ := teamProcess(t, dsn)
	ctx := context.Background()
	const users, pushes = 3, 2
	var lines []string
	for i := range users + 1 { // one more than the run uses
		user := fmt.Sprintf("dev%d", i)
		tok, err := st.AddToken(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, user+" "+tok)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cli := CLI{URL: a, StreamURL: b, Users: users, UserPushes: pushes, Tokens: tokens, UserHeader: "X-Forwarded-User", Timeout: time.Minute}
	if err := run(ctx, cli, &out); err != nil {
		t.Fatalf("run = %v\n%s", err, out.String())
	}
	t.Log(out.String())
	n := fmt.Sprintf("(n=%d)", users*pushes)
	for _, what := range []string{"100-step push:", "push to change event on the other:"} {
		if !regexp.MustCompile(regexp.QuoteMeta(what) + `\s+p50 .* ` + regexp.QuoteMeta(n)).MatchString(out.String()) {
			t.Errorf("output has no %q line with %s:\n%s", what, n, out.String())
		}
	}
	for i := range users + 1 {
		user := fmt.Sprintf("dev%d", i)
		l, err := st.List(ctx, store.ListQuery{Owner: user})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if i == users {
			want = 0 // in the file, not in the run
		}
		if len(l.Sessions) != want {
			t.Fatalf("sessions of %s = %d; want %d", user, len(l.Sessions), want)
		}
		if want == 1 && l.Sessions[0].Summary.Steps != 100*pushes {
			t.Errorf("steps of %s's session = %d; want %d", user, l.Sessions[0].Summary.Steps, 100*pushes)
		}
	}
}

// TestTeamPhaseRefuses: too few users in the file, a malformed line, and a
// stream address off this machine are refused before anything is sent.
func TestTeamPhaseRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("two", "a tokA\nb tokB\n")
	for _, c := range []struct {
		cli  CLI
		want string
	}{
		{CLI{Users: 3, Tokens: two}, "has 2 users; --users asks for 3"},
		{CLI{Users: 1, Tokens: write("bad", "a\n")}, "bad:1: want 'USER TOKEN'"},
		{CLI{Users: 1}, "--users needs --tokens FILE"},
		{CLI{Users: 2, Tokens: two, StreamURL: "http://192.0.2.1:80"}, "not a loopback address"},
	} {
		c.cli.URL, c.cli.Timeout = "http://127.0.0.1:9", time.Second // nothing listens; nothing may be sent
		err := run(context.Background(), c.cli, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%+v) = %v; want an error with %q", c.cli, err, c.want)
		}
	}
}
