package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentreview/service/handlers"
)

// OIDCFlags are the team server's flags for OIDC sign-in, embedded in its
// serve command. The client secret is read from a file, never given as a
// flag value (which other users of the machine could read in the process
// list).
type OIDCFlags struct {
	Issuer           string `name:"oidc-issuer" help:"Sign users in with this OpenID Connect provider (its issuer URL)." placeholder:"URL" group:"OIDC sign-in"`
	ClientID         string `name:"oidc-client-id" help:"The service's client ID at the provider." placeholder:"ID" group:"OIDC sign-in"`
	ClientSecretFile string `name:"oidc-client-secret-file" help:"File holding the client secret (keep it readable by the service only)." type:"path" placeholder:"FILE" group:"OIDC sign-in"`
	RedirectURL      string `name:"oidc-redirect-url" help:"The team server's public URL of /auth/callback, as registered at the provider." placeholder:"URL" group:"OIDC sign-in"`
	UserClaim        string `name:"oidc-user-claim" help:"ID token claim that names the user: email, preferred_username or sub." default:"email" group:"OIDC sign-in"`
}

// maxSecretFile is the largest client secret file read.
const maxSecretFile = 4 << 10

// cookieKeyLabel is what the session cookies' key is derived with from the
// client secret.
const cookieKeyLabel = "agentreview service: OIDC session cookie key v1"

// Enabled reports whether OIDC sign-in was asked for: any of its flags
// but --oidc-user-claim given (Config then names any that are missing).
func (f *OIDCFlags) Enabled() bool {
	return f.Issuer != "" || f.ClientID != "" || f.ClientSecretFile != "" || f.RedirectURL != ""
}

// Config returns the sign-in configuration the flags describe, with the
// secret read from its file. Every server process given the same secret
// derives the same cookie key from it (HMAC-SHA256 of a fixed label), so
// they accept each other's session cookies; a new secret signs everyone
// out.
func (f *OIDCFlags) Config() (handlers.OIDCConfig, error) {
	var missing []string
	for _, v := range []struct{ flag, value string }{
		{"--oidc-issuer", f.Issuer},
		{"--oidc-client-id", f.ClientID},
		{"--oidc-client-secret-file", f.ClientSecretFile},
		{"--oidc-redirect-url", f.RedirectURL},
	} {
		if v.value == "" {
			missing = append(missing, v.flag)
		}
	}
	if len(missing) > 0 {
		return handlers.OIDCConfig{}, fmt.Errorf("OIDC sign-in needs %s too", strings.Join(missing, ", "))
	}
	secret, err := readSecretFile(f.ClientSecretFile)
	if err != nil {
		return handlers.OIDCConfig{}, err
	}
	key := hmac.New(sha256.New, []byte(secret))
	key.Write([]byte(cookieKeyLabel))
	return handlers.OIDCConfig{
		Issuer:       f.Issuer,
		ClientID:     f.ClientID,
		ClientSecret: secret,
		RedirectURL:  f.RedirectURL,
		UserClaim:    f.UserClaim,
		CookieKey:    key.Sum(nil),
	}, nil
}

// readSecretFile returns the one line a secret file holds, without the
// spaces around it.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the OIDC client secret: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("read the OIDC client secret %s: %w", path, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("OIDC client secret file %s is larger than %d bytes, so it holds no client secret", path, maxSecretFile)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" || strings.ContainsAny(secret, "\r\n") {
		return "", fmt.Errorf("OIDC client secret file %s must hold the secret on one line", path)
	}
	return secret, nil
}
