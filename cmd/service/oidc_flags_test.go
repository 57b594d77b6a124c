package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/agentreview/service/handlers"
)

// parseOIDCFlags parses args as a command that embeds OIDCFlags would.
func parseOIDCFlags(t *testing.T, args ...string) (*OIDCFlags, error) {
	t.Helper()
	var cli struct {
		OIDCFlags `embed:""`
	}
	p, err := kong.New(&cli, kong.Exit(func(int) { t.Fatal("kong exited") }))
	if err != nil {
		t.Fatalf("kong.New = %v", err)
	}
	_, err = p.Parse(args)
	return &cli.OIDCFlags, err
}

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "oidc-secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOIDCFlagsConfig(t *testing.T) {
	secret := "s3cret-" + strings.Repeat("x", 20)
	file := writeSecret(t, secret+"\n")
	args := []string{"--oidc-issuer", "https://id.example.com/realms/team", "--oidc-client-id", "review",
		"--oidc-client-secret-file", file, "--oidc-redirect-url", "https://review.example.com/auth/callback"}
	f, err := parseOIDCFlags(t, args...)
	if err != nil {
		t.Fatalf("parse %q = %v", args, err)
	}
	if !f.Enabled() {
		t.Fatal("Enabled() = false with every flag given")
	}
	got, err := f.Config()
	if err != nil {
		t.Fatalf("Config() = %v", err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(cookieKeyLabel))
	want := handlers.OIDCConfig{Issuer: args[1], ClientID: args[3], ClientSecret: secret, RedirectURL: args[7], UserClaim: "email", CookieKey: mac.Sum(nil)}
	if got.Issuer != want.Issuer || got.ClientID != want.ClientID || got.ClientSecret != want.ClientSecret ||
		got.RedirectURL != want.RedirectURL || got.UserClaim != want.UserClaim || !hmac.Equal(got.CookieKey, want.CookieKey) {
		t.Errorf("Config() = %+v; want %+v", got, want)
	}

	// Another process with the same secret signs with the same key; a new
	// secret gives a new key.
	again, _ := parseOIDCFlags(t, append(args, "--oidc-user-claim", "sub")...)
	if c, err := again.Config(); err != nil || !hmac.Equal(c.CookieKey, got.CookieKey) || c.UserClaim != "sub" {
		t.Errorf("Config() again = %+v, %v; want the same key and claim sub", c, err)
	}
	other, _ := parseOIDCFlags(t, append(args[:5:5], writeSecret(t, secret+"2"), args[6], args[7])...)
	if c, err := other.Config(); err != nil || hmac.Equal(c.CookieKey, got.CookieKey) {
		t.Errorf("Config() with another secret = %v; want another key", err)
	}
}

func TestOIDCFlagsRefused(t *testing.T) {
	if f, err := parseOIDCFlags(t); err != nil || f.Enabled() {
		t.Errorf("no flags: Enabled() = %v (%v); want false", f.Enabled(), err)
	}
	if _, err := parseOIDCFlags(t, "--oidc-client-secret", "s3cret"); err == nil {
		t.Error("the secret as a flag value was accepted")
	}
	full := func(secretFile string) []string {
		return []string{"--oidc-issuer", "https://id.example.com", "--oidc-client-id", "review",
			"--oidc-client-secret-file", secretFile, "--oidc-redirect-url", "https://review.example.com/auth/callback"}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"only the client ID", []string{"--oidc-client-id", "review"}, "--oidc-issuer, --oidc-client-secret-file, --oidc-redirect-url"},
		{"no redirect URL", full(writeSecret(t, "s"))[:6], "--oidc-redirect-url"},
		{"missing secret file", full(filepath.Join(t.TempDir(), "absent")), "no such file"},
		{"empty secret file", full(writeSecret(t, " \n")), "one line"},
		{"two lines", full(writeSecret(t, "a\nb\n")), "one line"},
		{"huge secret file", full(writeSecret(t, strings.Repeat("s", maxSecretFile+1))), "larger than"},
		{"secret file is a folder", full(t.TempDir()), "read the OIDC client secret"},
	} {
		f, err := parseOIDCFlags(t, tc.args...)
		if err != nil {
			t.Fatalf("%s: parse = %v", tc.name, err)
		}
		if !f.Enabled() {
			t.Errorf("%s: Enabled() = false", tc.name)
		}
		if _, err := f.Config(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Config() = %v; want an error naming %q", tc.name, err, tc.want)
		}
	}
}
