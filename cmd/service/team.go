package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
)

// TeamFlags are serve's flags for the team server: `service serve --team
// --db postgres://... --listen ADDR ...`. The local serve takes none of
// them.
type TeamFlags struct {
	Team       bool   `help:"Run the team server: PostgreSQL (--db postgres://...), signed-in users, per-user push tokens (service team token add)." group:"Team server"`
	Listen     string `help:"Address the team server binds (host:port)." placeholder:"ADDR" group:"Team server"`
	Origin     string `help:"The team's address of the server (https://review.example.com); Host must name it, so a proxy in front passes the Host on. Default: http(s)://<listen address>." placeholder:"URL" group:"Team server"`
	TLSCert    string `name:"tls-cert" help:"TLS certificate file (PEM); with --tls-key the team server speaks HTTPS itself." type:"existingfile" placeholder:"FILE" group:"Team server"`
	TLSKey     string `name:"tls-key" help:"TLS key file (PEM), with --tls-cert." type:"existingfile" placeholder:"FILE" group:"Team server"`
	AuthHeader string `help:"Header a trusted reverse proxy sets to the signed-in user (for oauth2-proxy: X-Forwarded-User). The proxy must set or strip it on every request." placeholder:"NAME" group:"Team server"`
	OIDCFlags
}

// set reports whether any team flag is given.
func (f TeamFlags) set() bool {
	return f.Team || f.Listen != "" || f.Origin != "" || f.TLSCert != "" || f.TLSKey != "" || f.AuthHeader != "" || f.OIDCFlags.Enabled()
}

// teamConfig is a team server's checked flags.
type teamConfig struct {
	dsn    string
	origin *url.URL
	tls    *tls.Config          // nil: plain HTTP (TLS ends at a proxy)
	header string               // the trusted proxy's user header ("" with OIDC)
	oidc   *handlers.OIDCConfig // OIDC sign-in (nil with the header)
}

// check turns the flags into a team server's configuration, refusing a
// server without authentication, a store that is not PostgreSQL and an
// origin the Host check could not hold to.
func (f TeamFlags) check(db string) (teamConfig, error) {
	var c teamConfig
	if !isPostgresURL(db) {
		return c, errors.New("serve --team: --db must be a PostgreSQL URL (postgres://user@host:5432/db; the password can come from PGPASSWORD or ~/.pgpass)")
	}
	c.dsn = db
	switch {
	case f.AuthHeader == "" && !f.OIDCFlags.Enabled():
		return c, errors.New("serve --team: no sign-in configured: a team server never runs without authentication; give --auth-header NAME (the header your sign-in proxy sets to the user) or the --oidc-* flags")
	case f.AuthHeader != "" && f.OIDCFlags.Enabled():
		return c, errors.New("serve --team: give one sign-in: --auth-header or the --oidc-* flags, not both")
	case f.AuthHeader != "":
		if strings.ContainsFunc(f.AuthHeader, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) {
			return c, fmt.Errorf("serve --team: --auth-header %q is not a header name", f.AuthHeader)
		}
		c.header = f.AuthHeader
	default:
		oc, err := f.OIDCFlags.Config()
		if err != nil {
			return c, fmt.Errorf("serve --team: %w", err)
		}
		c.oidc = &oc
	}
	if f.Listen == "" {
		return c, errors.New("serve --team: give --listen ADDR (host:port) for the team server to bind")
	}
	host, port, err := net.SplitHostPort(f.Listen)
	if err != nil {
		return c, fmt.Errorf("serve --team: --listen %q is not host:port: %w", f.Listen, err)
	}
	if (f.TLSCert == "") != (f.TLSKey == "") {
		return c, errors.New("serve --team: give both --tls-cert and --tls-key, or neither (TLS at a proxy)")
	}
	scheme := "http"
	if f.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
		if err != nil {
			return c, fmt.Errorf("serve --team: load the TLS certificate: %w", err)
		}
		c.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	if f.Origin == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) || port == "0" {
			return c, fmt.Errorf("serve --team: --listen %s names no one address: give --origin, the address the team opens (https://review.example.com)", f.Listen)
		}
		f.Origin = scheme + "://" + f.Listen
	}
	c.origin, err = url.Parse(f.Origin)
	if err != nil || (c.origin.Scheme != "http" && c.origin.Scheme != "https") || c.origin.Host == "" ||
		c.origin.User != nil || strings.TrimSuffix(c.origin.Path, "/") != "" || c.origin.RawQuery != "" || c.origin.Fragment != "" {
		return c, fmt.Errorf("serve --team: --origin %q is not an origin like https://review.example.com", f.Origin)
	}
	c.origin.Path = ""
	if c.oidc != nil && c.oidc.RedirectURL != c.origin.String()+"/auth/callback" {
		return c, fmt.Errorf("serve --team: --oidc-redirect-url must be %s/auth/callback, on the team's origin", c.origin)
	}
	return c, nil
}

// isPostgresURL reports whether db names a PostgreSQL database, not a
// store file.
func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// serveTeam runs the team server until the context ends: every process
// shares the PostgreSQL database, and each process's live stream is driven
// by the database's change notifications.
func (f TeamFlags) serveTeam(e *env, db string) error {
	c, err := f.check(db)
	if err != nil {
		return err
	}
	// Bound before the database and the sign-in provider are reached, as
	// the local server binds before its store opens (serve.go).
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	st, err := postgres.Open(e.ctx, c.dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	team := &handlers.Team{Origin: c.origin, Users: handlers.HeaderIdentity{Header: c.header}, Tokens: st}
	users := "header " + c.header
	if c.oidc != nil {
		o, err := handlers.NewOIDC(e.ctx, *c.oidc, slog.New(slog.NewTextHandler(e.stderr, nil)))
		if err != nil {
			return fmt.Errorf("serve --team: OIDC sign-in: %w", err)
		}
		team.Users, team.SignIn = o, o
		users = "OIDC sign-in at " + c.oidc.Issuer
	}
	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	return serveOn(e, ln, c.tls, func(_ string, log *slog.Logger) handlers.Deps {
		hub := handlers.NewNotifiedHub(st, log)
		go func() {
			if err := st.Listen(ctx, hub.Poke); err != nil && ctx.Err() == nil {
				log.Error("live stream: change notifications ended", "err", err)
			}
		}()
		fmt.Fprintf(e.stdout, "service team server listening on %s\n", ln.Addr())
		fmt.Fprintf(e.stdout, "  review app:  %s/\n", c.origin)
		fmt.Fprintf(e.stdout, "  ingest:      %s/api/ingest (tokens: service team token add USER)\n", c.origin)
		fmt.Fprintf(e.stdout, "  users:       %s\n", users)
		fmt.Fprintf(e.stdout, "  store:       %s\n", redactedDSN(c.dsn))
		return handlers.Deps{Store: st, Hub: hub, Log: log, Team: team}
	})
}

// redactedDSN is a PostgreSQL URL without its password, to print.
func redactedDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unreadable URL)"
	}
	return u.Redacted()
}

// TeamCmd is `service team ...`: a team server's administration.
type TeamCmd struct {
	Token TeamTokenCmd `cmd:"" help:"Push tokens of the team's users: add, list, revoke."`
}

// TeamTokenCmd is `service team token add|list|revoke`.
type TeamTokenCmd struct {
	Add    TeamTokenAddCmd    `cmd:"" help:"Make a push token for a user and print it once (only its SHA-256 is stored)."`
	List   TeamTokenListCmd   `cmd:"" help:"List the push tokens: user, start of the hash, when made."`
	Revoke TeamTokenRevokeCmd `cmd:"" help:"Revoke every push token of a user."`
}

// teamDB is the --db flag of the team commands.
type teamDB struct {
	DB string `help:"The team server's PostgreSQL database (postgres://user@host:5432/db)." required:"" placeholder:"URL"`
}

func (d teamDB) open(ctx context.Context) (*postgres.Store, error) {
	if !isPostgresURL(d.DB) {
		return nil, errors.New("--db must be a PostgreSQL URL (postgres://user@host:5432/db)")
	}
	return postgres.Open(ctx, d.DB)
}

// TeamTokenAddCmd is `service team token add USER --db URL`.
type TeamTokenAddCmd struct {
	User string `arg:"" help:"The user, as the sign-in names them (the proxy header's value, or the OIDC claim)."`
	teamDB
}

// Run prints the new token alone on stdout, so a script can keep it.
func (c *TeamTokenAddCmd) Run(e *env) error {
	st, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	tok, err := st.AddToken(e.ctx, c.User)
	var inv *store.InvalidError
	if errors.As(err, &inv) {
		return fmt.Errorf("user %q: %s", c.User, inv.Problems[0].Message)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, tok)
	fmt.Fprintf(e.stderr, "push token for %s: shown this once. The user keeps it in a file only they can read (chmod 600) for service share.\n", c.User)
	return nil
}

// TeamTokenListCmd is `service team token list --db URL`.
type TeamTokenListCmd struct {
	teamDB
}

// Run prints one token a line; never the token itself, which is not kept.
func (c *TeamTokenListCmd) Run(e *env) error {
	st, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	tokens, err := st.ListTokens(e.ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "USER\tHASH\tCREATED")
	for _, t := range tokens {
		fmt.Fprintf(w, "%s\t%s\t%s\n", t.User, t.Hash, t.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return w.Flush()
}

// TeamTokenRevokeCmd is `service team token revoke USER --db URL`.
type TeamTokenRevokeCmd struct {
	User string `arg:"" help:"The user whose tokens go."`
	teamDB
}

// Run revokes the tokens; a user without any is an error, so a typo shows.
func (c *TeamTokenRevokeCmd) Run(e *env) error {
	st, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.RevokeTokens(e.ctx, c.User)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("user %q has no push tokens", c.User)
	}
	fmt.Fprintf(e.stdout, "revoked %d push token(s) of %s\n", n, c.User)
	return nil
}
