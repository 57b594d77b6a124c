// Command teamconformance runs the conformance suite (../shared/conformance)
// against the team server on PostgreSQL. The suite starts its server as
// `SERVICE_BIN serve --port P --db PATH` and deletes from a terminal with
// `SERVICE_BIN delete ID --db PATH`; this program, given as SERVICE_BIN,
// turns each into the team server's own commands:
//
//   - serve: a database of its own for PATH on the PostgreSQL server that
//     SERVICE_TEST_POSTGRES names, a push token for the user "conformance"
//     (service team token add), then `service serve --team` on a free
//     port, and in front of it on 127.0.0.1:P a reverse proxy that signs
//     every request in as that user with X-Forwarded-User, as oauth2-proxy
//     does in a team's setup. Once the proxy listens, the token is written
//     where the suite reads the ingest token.
//   - delete: `service delete ID --db` on that database.
//   - clean: drops every database made for a path (.ci/run, before and
//     after the suite).
//
// SERVICE_TEAM_BIN names the service binary. .ci/run builds both.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// user is who the proxy signs every request in as.
const user = "conformance"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "teamconformance:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: teamconformance serve|delete ... | clean")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if args[0] == "clean" {
		return clean(ctx)
	}
	bin := os.Getenv("SERVICE_TEAM_BIN")
	if bin == "" {
		return errors.New("SERVICE_TEAM_BIN (the service binary) is not set")
	}
	flags, rest := parseFlags(args[1:])
	switch args[0] {
	case "delete":
		dsn, err := database(ctx, flags["--db"])
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, append([]string{"delete", "--db", dsn}, rest...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		return cmd.Run()
	case "serve":
		return serve(ctx, bin, flags["--db"], flags["--port"])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// parseFlags splits --name value and --name=value flags from the rest.
func parseFlags(args []string) (map[string]string, []string) {
	flags := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			flags[k] = v
		} else if i+1 < len(args) {
			flags[a] = args[i+1]
			i++
		}
	}
	return flags, rest
}

// dbPrefix begins the name of every database that stands for a store
// file path (database).
const dbPrefix = "conformance_"

// clean drops every database made for a store file path: a run of the
// suite makes about a hundred (9 MB each), which the suite, restarting
// servers on the same path, cannot drop as it goes. .ci/run cleans
// before and after the suite.
func clean(ctx context.Context) error {
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, dbPrefix)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

// connect connects to the PostgreSQL server SERVICE_TEST_POSTGRES names.
func connect(ctx context.Context) (*pgx.Conn, error) {
	base := os.Getenv("SERVICE_TEST_POSTGRES")
	if base == "" {
		return nil, errors.New("SERVICE_TEST_POSTGRES (a PostgreSQL server URL) is not set")
	}
	return pgx.Connect(ctx, base)
}

// database is the URL of the database that stands for the store file path,
// created on first use: the same path always names the same database.
func database(ctx context.Context, path string) (string, error) {
	if path == "" {
		return "", errors.New("--db PATH is missing")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	name := dbPrefix + hex.EncodeToString(sum[:8])
	conn, err := connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var pgErr *pgconn.PgError
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") {
		return "", err
	}
	u, err := url.Parse(os.Getenv("SERVICE_TEST_POSTGRES"))
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func serve(ctx context.Context, bin, path, port string) error {
	if port == "" {
		port = os.Getenv("PORT")
	}
	if port == "" {
		port = "1234"
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("--port %q is not a number", port)
	}
	// The suite finds P with a listen on port 0 that it lets go: until P
	// is bound again, another test's listen on port 0 can be given P too,
	// and the two tests then share it (seen in CI as a 401, the other
	// test's token, and as a push refused before this test's server had
	// started: a listener of the other test had answered the suite's
	// first connection). So P is bound first of all, before the database
	// is made (up to a second or more on a busy machine), and listened on
	// only when the team server is up: until then the suite's connections
	// are refused and it keeps trying.
	sock, err := reserve(n)
	if err != nil {
		return err
	}
	defer sock.Close()
	dsn, err := database(ctx, path)
	if err != nil {
		return err
	}
	origin := "http://127.0.0.1:" + port
	token, err := addToken(ctx, bin, dsn)
	if err != nil {
		return err
	}
	inner, err := freeAddr()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--team", "--db", dsn, "--listen", inner,
		"--origin", origin, "--auth-header", "X-Forwarded-User")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	if err := waitFor(ctx, inner, exited); err != nil {
		return err
	}
	target := &url.URL{Scheme: "http", Host: inner}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the team server checks the Host the browser sent
			r.Out.Header.Set("X-Forwarded-User", user)
		},
		FlushInterval: -1, // the live stream goes through as it is written
	}
	ln, err := listen(sock)
	if err != nil {
		return err
	}
	// The token file is written only now: the suite reads it once a
	// connection to P succeeds, and waits for it, so it pushes only once
	// this proxy is up, whoever else answered on P.
	if err := writeToken(token); err != nil {
		return err
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	select {
	case <-ctx.Done():
	case err := <-exited:
		exited <- err
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shut)
	return nil
}

// addToken makes a push token for the user, as an admin does.
func addToken(ctx context.Context, bin, dsn string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "team", "token", "add", user, "--db", dsn).Output()
	if err != nil {
		return "", fmt.Errorf("team token add: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// writeToken writes the token where the suite reads the ingest token
// (0600), as an admin hands a user theirs.
func writeToken(token string) error {
	file := os.Getenv("SERVICE_INGEST_TOKEN_FILE")
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		file = filepath.Join(home, ".service", "ingest-token")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(token+"\n"), 0o600)
}

// freeAddr is a free loopback address for the team server behind the
// proxy. It is below the kernel's range of ephemeral ports (32768-60999 by
// default), where the suite finds its servers' ports with a listen on port
// 0 and lets them go: from that range the team server of one test could
// take the port another test had just been given, and that test's
// requests then reached the wrong server (seen in CI as a 421: a Host that
// was not the other server's origin).
func freeAddr() (string, error) {
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken
		}
		l.Close()
		return addr, nil
	}
	return "", errors.New("no free port in 20000-31999 on 127.0.0.1")
}

// waitFor waits until addr accepts connections, the server exits, or 15 s.
func waitFor(ctx context.Context, addr string, exited chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("team server exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("team server did not accept connections on %s within 15 s", addr)
}

// reserve binds a TCP socket to 127.0.0.1:port without listening on it:
// the port is this process's, and connections to it are refused.
func reserve(port int) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	sock := os.NewFile(uintptr(fd), "127.0.0.1:"+strconv.Itoa(port))
	// As net.Listen does: a port left with connections in TIME_WAIT can
	// still be bound.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		sock.Close()
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		sock.Close()
		return nil, fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	return sock, nil
}

// listen starts listening on a socket from reserve. The listener holds its
// own copy of the socket; the caller still closes sock.
func listen(sock *os.File) (net.Listener, error) {
	if err := syscall.Listen(int(sock.Fd()), syscall.SOMAXCONN); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	return net.FileListener(sock)
}
