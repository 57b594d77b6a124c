package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/internal/gcroom"
	"github.com/agentreview/service/store"
)

// ServeCmd is `service serve [--port N] [--db PATH]`, or with --team the
// team server (team.go).
type ServeCmd struct {
	Port int    `help:"Port on 127.0.0.1 (the PORT variable is used when this is absent)." env:"PORT" default:"1234"`
	DB   string `help:"Store file (default ~/.service/store.db); with --team, the PostgreSQL URL." placeholder:"PATH"`
	TeamFlags
}

// spareP gives the local server one P more than Go's default, once per
// process: the search index's background catch-up runs at a low priority
// on a thread of its own (store.IndexAtLowPriority) and holds a P
// while it does, so with the spare one a push still gets a P at once, and
// the OS gives its thread the core before the catch-up's.
var spareP sync.Once

// collectorRoom is how much the local server's heap may grow between two
// runs of the garbage collector (gcroom.Keep). Its live heap is 3-4 MB and
// a 100-step push allocates ~0.5 MB, so with Go's default the collector
// ran every few pushes, and on a machine with one core busy its marking
// took the other core from the pushes: the 100-step push's p99 with 32
// streams open was 12.3-15.5 ms, with 16 MB of room 9.6-13.1 ms (24 and
// 32 MB no better), for ~11 MB more at the peak (docs/performance.md,
// "The collector of the server").
const collectorRoom = 16 << 20

// Run serves until the context ends (SIGINT or SIGTERM).
func (c *ServeCmd) Run(e *env) error {
	if c.Team {
		return c.serveTeam(e, c.DB)
	}
	if c.TeamFlags.set() {
		return errors.New("--listen, --origin, --tls-cert, --tls-key, --auth-header and --oidc-* are the team server's: add --team (the local service binds 127.0.0.1 only)")
	}
	// The ingest token is there before the port is bound: whoever finds
	// the port open can read it.
	tokenFile, err := tokenPath()
	if err != nil {
		return err
	}
	token, warning, err := loadOrCreateToken(tokenFile)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(e.stderr, warning)
	}
	// The port is bound before the store is opened (its migrations and
	// index set-up take a while on a big store or a busy machine):
	// connections wait in the listen queue meanwhile, and no other process
	// can take the port between its choice and the bind (a test harness
	// that picks a free port and lets it go, as the conformance suite's).
	ln, err := listenLocal(c.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	spareP.Do(func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1) })
	gcroom.Keep(collectorRoom)
	st, dbPath, err := openStore(e, c.DB, store.ServerOptions()...)
	if err != nil && e.ctx.Err() != nil {
		// Stopped (SIGINT, SIGTERM) while the store opened: what a
		// migration had begun is rolled back, and stopping is no failure.
		fmt.Fprintln(e.stdout, "service stopped")
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return serveOn(e, ln, nil, func(base string, log *slog.Logger) handlers.Deps {
		fmt.Fprintf(e.stdout, "service listening on %s\n", base)
		fmt.Fprintf(e.stdout, "  review app:  %s/\n", base)
		fmt.Fprintf(e.stdout, "  ingest:      %s/api/ingest\n", base)
		fmt.Fprintf(e.stdout, "  token file:  %s\n", tokenFile)
		fmt.Fprintf(e.stdout, "  store:       %s\n", dbPath)
		return handlers.Deps{
			Store: st, Hub: handlers.NewHub(st, log), Log: log,
			Auth:     handlers.Auth{Token: token, TokenFile: homeTilde(tokenFile)},
			Reviewer: defaultReviewer(e.ctx),
			Resume:   agents.ResumeCommand,
		}
	})
}

// listenAndServe binds 127.0.0.1:port and serves there (serveOn).
func listenAndServe(e *env, port int, deps func(base string, log *slog.Logger) handlers.Deps) error {
	ln, err := listenLocal(port)
	if err != nil {
		return err
	}
	return serveOn(e, ln, nil, deps)
}

// listenLocal binds 127.0.0.1:port, the local service's only address.
func listenLocal(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// serveOn builds the routes from what deps returns (given the base URL)
// and serves them on ln, with TLS when tlsConfig is set, until the context
// ends; then it ends every event stream and shuts down.
func serveOn(e *env, ln net.Listener, tlsConfig *tls.Config, deps func(base string, log *slog.Logger) handlers.Deps) error {
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	scheme := "http://"
	if tlsConfig != nil {
		scheme = "https://"
	}
	d := deps(scheme+ln.Addr().String(), log)
	srv := handlers.NewServer(handlers.Routes(d), log)
	if d.Hub != nil {
		srv.RegisterOnShutdown(d.Hub.Close)
	}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			srv.TLSConfig = tlsConfig // with HTTP/2, which ServeTLS sets up
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	select {
	case err := <-served:
		return err
	case <-e.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	fmt.Fprintln(e.stdout, "service stopped")
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// homeTilde shows a path under the home folder with ~, as users write it.
func homeTilde(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || !strings.HasPrefix(path, home+string(os.PathSeparator)) {
		return path
	}
	return "~" + path[len(home):]
}
