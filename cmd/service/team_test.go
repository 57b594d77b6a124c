package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres"
	"github.com/agentreview/service/store/postgres/pgtest"
)

// TestServeTeamRefuses: a team server that would run without sign-in, on a
// store that is not PostgreSQL, or with an origin the Host check cannot
// hold to, does not start; the team flags without --team are refused too.
func TestServeTeamRefuses(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	os.WriteFile(cert, []byte("not a certificate"), 0o600)
	pg := "postgres://nobody@127.0.0.1:1/none"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", pg, "--listen", "127.0.0.1:0"}, "never runs without authentication"},
		{[]string{"--db", filepath.Join(dir, "store.db"), "--listen", "127.0.0.1:8080", "--auth-header", "X-Forwarded-User"}, "must be a PostgreSQL URL"},
		{[]string{"--listen", "127.0.0.1:8080", "--auth-header", "X-Forwarded-User"}, "must be a PostgreSQL URL"},
		{[]string{"--db", pg, "--auth-header", "X-Forwarded-User"}, "give --listen"},
		{[]string{"--db", pg, "--listen", "8080", "--auth-header", "X-Forwarded-User"}, "is not host:port"},
		{[]string{"--db", pg, "--listen", "0.0.0.0:8080", "--auth-header", "X-Forwarded-User"}, "give --origin"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User"}, "give --origin"},
		{[]string{"--db", pg, "--listen", "127.0.0.1:0", "--auth-header", "X-Forwarded-User"}, "give --origin"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--origin", "https://review.example.com/app"}, "is not an origin"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--origin", "review.example.com"}, "is not an origin"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--origin", "https://u:p@review.example.com"}, "is not an origin"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X Forwarded User"}, "is not a header name"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--tls-cert", cert}, "both --tls-cert and --tls-key"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--tls-cert", cert, "--tls-key", cert}, "load the TLS certificate"},
		{[]string{"--db", pg, "--listen", ":8080", "--auth-header", "X-Forwarded-User", "--oidc-issuer", "https://id.example.com"}, "not both"},
		{[]string{"--db", pg, "--listen", ":8080", "--oidc-issuer", "https://id.example.com"}, "needs --oidc-client-id"},
		{append([]string{"--db", pg, "--listen", ":8080", "--origin", "https://review.example.com"}, oidcFlags(t, "https://id.example.com", "https://other.example.com/auth/callback")...), "--oidc-redirect-url must be https://review.example.com/auth/callback"},
	} {
		args := append([]string{"serve", "--team"}, tc.args...)
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("service %s = %v; want an error saying %q", strings.Join(args, " "), err, tc.want)
		}
	}
	for _, flag := range [][]string{{"--listen", "0.0.0.0:8080"}, {"--auth-header", "X-Forwarded-User"}, {"--origin", "https://review.example.com"}, {"--oidc-issuer", "https://id.example.com"}} {
		err := run(context.Background(), append([]string{"serve"}, flag...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "add --team") {
			t.Errorf("service serve %s = %v; want it refused without --team", flag[0], err)
		}
	}
}

// TestTeamTokenCommands: add prints a token that names its user, list
// shows the user and the start of its hash but not the token, revoke
// makes it unknown.
func TestTeamTokenCommands(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	add := func(user string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, []string{"team", "token", "add", user, "--db", dsn}, &out, &errOut); err != nil {
			t.Fatalf("team token add %s = %v", user, err)
		}
		return strings.TrimSpace(out.String())
	}
	alice, bob := add("alice@example.com"), add("bob")
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for tok, user := range map[string]string{alice: "alice@example.com", bob: "bob"} {
		if got, err := st.UserForToken(ctx, tok); err != nil || got != user {
			t.Errorf("UserForToken(printed token) = %q, %v; want %q", got, err, user)
		}
	}

	var out bytes.Buffer
	if err := run(ctx, []string{"team", "token", "list", "--db", dsn}, &out, io.Discard); err != nil {
		t.Fatalf("team token list = %v", err)
	}
	for tok, user := range map[string]string{alice: "alice@example.com", bob: "bob"} {
		h := sha256.Sum256([]byte(tok))
		if !strings.Contains(out.String(), user) || !strings.Contains(out.String(), hex.EncodeToString(h[:])[:12]) || strings.Contains(out.String(), tok) {
			t.Errorf("team token list = %q; want %s and its hash start, without the token", out.String(), user)
		}
	}

	out.Reset()
	if err := run(ctx, []string{"team", "token", "revoke", "alice@example.com", "--db", dsn}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "revoked 1 ") {
		t.Fatalf("team token revoke alice = %v, %q", err, out.String())
	}
	if _, err := st.UserForToken(ctx, alice); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UserForToken(revoked) = %v; want ErrNotFound", err)
	}
	if got, err := st.UserForToken(ctx, bob); err != nil || got != "bob" {
		t.Errorf("UserForToken(bob's) after revoking alice's = %q, %v", got, err)
	}
	if err := run(ctx, []string{"team", "token", "revoke", "alice@example.com", "--db", dsn}, io.Discard, io.Discard); err == nil {
		t.Error("revoking a user without tokens = nil; want an error")
	}
	for _, args := range [][]string{
		{"team", "token", "add", " padded", "--db", dsn},
		{"team", "token", "add", "a\tb", "--db", dsn},
		{"team", "token", "add", "alice", "--db", "/tmp/store.db"},
		{"team", "token", "add", "alice"},
	} {
		if err := run(ctx, args, io.Discard, io.Discard); err == nil {
			t.Errorf("service %s = nil; want an error", strings.Join(args, " "))
		}
	}
	if tokens, err := st.ListTokens(ctx); err != nil || len(tokens) != 1 {
		t.Errorf("tokens after refused adds = %+v, %v; want bob's only", tokens, err)
	}
}

// TestServeTeam: a token made with `team token add` pushes to a real
// `serve --team` on PostgreSQL, the session is that user's, and a user
// named by the proxy header reads it; without one, reads are 401.
func TestServeTeam(t *testing.T) {
	dsn := pgtest.DSN(t)
	if _, ok := any(&postgres.Store{}).(teamStore); !ok {
		t.Skip("the PostgreSQL store does not implement store.Backend and Listen yet")
	}
	withHome(t)
	ctx := context.Background()
	var tokOut bytes.Buffer
	if err := run(ctx, []string{"team", "token", "add", "alice@example.com", "--db", dsn}, &tokOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(tokOut.String())

	// Two server processes on one database, as a team runs them; the
	// second speaks HTTPS itself.
	certFile, keyFile, tlsClient := selfSigned(t)
	var bases []string
	var out *syncBuffer
	for i := range 2 {
		port := freePort(t)
		args := []string{"serve", "--team", "--db", dsn, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--auth-header", "X-Forwarded-User"}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if i == 1 {
			args = append(args, "--tls-cert", certFile, "--tls-key", keyFile)
			base = fmt.Sprintf("https://127.0.0.1:%d", port)
		}
		sctx, stop := context.WithCancel(ctx)
		o := &syncBuffer{}
		done := make(chan error, 1)
		go func() { done <- run(sctx, args, o, o) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("serve --team = %v; output:\n%s", err, o)
			}
		})
		waitListening(t, port, o)
		bases = append(bases, base)
		out = o
	}
	// A stream on the second process sees a push to the first: the
	// database's notification, not a poll, pokes its hub.
	changes := teamStream(t, tlsClient, bases[1]+"/api/events", "X-Forwarded-User", "carol")
	if res, err := tlsClient.Get(bases[1] + "/api/sessions"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/sessions over HTTPS without a user = %v, %v; want 401", res, err)
	} else {
		res.Body.Close()
	}
	if res, err := http.Get(strings.Replace(bases[1], "https:", "http:", 1) + "/"); err == nil && res.StatusCode < 400 {
		t.Errorf("plain HTTP to the HTTPS server = %d; want it refused", res.StatusCode)
	}
	base := bases[0]
	req := func(method, path string, body []byte, header ...string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	batch := batchJSON("team-s1", 1)
	if code, body := req(http.MethodPost, "/api/ingest", batch, "Content-Type", "application/json", "X-Forwarded-User", "alice@example.com"); code != http.StatusUnauthorized {
		t.Errorf("push with the header but no token = %d %s; want 401", code, body)
	}
	if code, body := req(http.MethodPost, "/api/ingest", batch, "Content-Type", "application/json", "Authorization", "Bearer "+tok); code != http.StatusCreated {
		t.Fatalf("push with alice's token = %d %s; want 201", code, body)
	}
	select {
	case id := <-changes:
		if id != "team-s1" {
			t.Errorf("change on the other process names %q; want team-s1", id)
		}
	case <-time.After(5 * time.Second):
		t.Error("no change event on the other process within 5 s of the push")
	}
	if code, _ := req(http.MethodGet, "/api/sessions/team-s1", nil); code != http.StatusUnauthorized {
		t.Errorf("read without a user = %d; want 401", code)
	}
	code, body := req(http.MethodGet, "/api/sessions/team-s1", nil, "X-Forwarded-User", "bob")
	if code != http.StatusOK {
		t.Fatalf("read as bob = %d %s; want 200", code, body)
	}
	var d store.SessionDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.OwnerID != "alice@example.com" {
		t.Errorf("read session owner = %q, %v; want alice@example.com", d.OwnerID, err)
	}
	code, body = req(http.MethodGet, "/api/sessions?owner=alice@example.com", nil, "X-Forwarded-User", "bob")
	if code != http.StatusOK || !strings.Contains(body, `"id":"team-s1"`) {
		t.Errorf("list of alice's sessions = %d %s; want team-s1", code, body)
	}
	if code, _ := req(http.MethodGet, "/", nil, "X-Forwarded-User", "bob"); code != http.StatusOK {
		t.Errorf("list page as bob = %d; want 200", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "listening on") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(out.String(), "postgres:postgres@") {
		t.Errorf("serve printed the database password:\n%s", out)
	}
}

// teamStream opens the event stream at url with client and the header
// pairs given, and returns the session ids of its change events as they
// come.
func teamStream(t *testing.T, client *http.Client, url string, header ...string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d; want 200", url, res.StatusCode)
	}
	ids := make(chan string, 16)
	ready := make(chan struct{})
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == "event: ready" {
				close(ready)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "{}" {
				var c struct {
					SessionID string `json:"session_id"`
				}
				json.Unmarshal([]byte(data), &c)
				ids <- c.SessionID
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatalf("GET %s: no ready event", url)
	}
	return ids
}

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and its
// key, and returns their files and a client that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// oidcFlags are serve's OIDC flags for issuer and redirect, with a client
// secret in a file of the test's.
func oidcFlags(t *testing.T, issuer, redirect string) []string {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "oidc-secret")
	if err := os.WriteFile(secret, []byte("a client secret of the test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--oidc-issuer", issuer, "--oidc-client-id", "review", "--oidc-client-secret-file", secret, "--oidc-redirect-url", redirect}
}

// TestServeTeamOIDC: with the OIDC flags, the team server reads the
// provider's discovery document at start, sends a page without a user to
// its sign-in and on to the provider, and still takes pushes by token.
// (The whole sign-in flow is tested in handlers/oidc_test.go.)
func TestServeTeamOIDC(t *testing.T) {
	dsn := pgtest.DSN(t)
	if _, ok := any(&postgres.Store{}).(teamStore); !ok {
		t.Skip("the PostgreSQL store does not implement store.Backend and Listen yet")
	}
	withHome(t)
	ctx := context.Background()
	var provider *httptest.Server
	provider = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": provider.URL, "authorization_endpoint": provider.URL + "/authorize", "token_endpoint": provider.URL + "/token",
			"jwks_uri": provider.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	}))
	t.Cleanup(provider.Close)
	var tokOut bytes.Buffer
	if err := run(ctx, []string{"team", "token", "add", "alice", "--db", dsn}, &tokOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	args := append([]string{"serve", "--team", "--db", dsn, "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, oidcFlags(t, provider.URL, base+"/auth/callback")...)
	sctx, stop := context.WithCancel(ctx)
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(sctx, args, out, out) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve --team = %v; output:\n%s", err, out)
		}
	}()
	waitListening(t, port, out)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(base + "/session?id=x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	login := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || login != "/auth/login?next=%2Fsession%3Fid%3Dx" {
		t.Fatalf("page without a user = %d to %q; want 303 to /auth/login", res.StatusCode, login)
	}
	if res, err = client.Get(base + login); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if to := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.HasPrefix(to, provider.URL+"/authorize?") {
		t.Errorf("GET %s = %d to %q; want 302 to the provider", login, res.StatusCode, to)
	}
	if res, err = client.Get(base + "/api/sessions"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/sessions without a user = %v, %v; want 401", res, err)
	}
	if code, body, err := pushTo(base, strings.TrimSpace(tokOut.String()), batchJSON("oidc-s1", 1)); err != nil || code != http.StatusCreated {
		t.Errorf("push with alice's token = %d %s %v; want 201", code, body, err)
	}
}
