package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
)

func mustOpenTokenStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTokens: a token added for a user names that user, only its hash is
// stored, tokens are listed without the token and revoked by user.
func TestTokens(t *testing.T) {
	s := mustOpenTokenStore(t)
	ctx := context.Background()
	tokens := map[string]string{} // token -> user
	for _, user := range []string{"alice@example.com", "bob", "alice@example.com"} {
		tok, err := s.AddToken(ctx, user)
		if err != nil {
			t.Fatalf("AddToken(%s) = %v", user, err)
		}
		if len(tok) != 43 {
			t.Errorf("AddToken(%s) = %q (%d characters); want 43", user, tok, len(tok))
		}
		if _, dup := tokens[tok]; dup {
			t.Fatalf("AddToken gave %q twice", tok)
		}
		tokens[tok] = user
	}
	for tok, user := range tokens {
		if got, err := s.UserForToken(ctx, tok); err != nil || got != user {
			t.Errorf("UserForToken(%s) = %q, %v; want %q", tok, got, err, user)
		}
		// Only the hash is kept: no column holds the token.
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM team_tokens WHERE position($1 in user_id || encode(hash, 'escape')) > 0 OR hash = $2`,
			tok, []byte(tok)).Scan(&n)
		if err != nil || n != 0 {
			t.Errorf("team_tokens rows holding %s = %d, %v; want 0", tok, n, err)
		}
	}
	for _, bad := range []string{"", "nope", strings.Repeat("x", 43)} {
		if got, err := s.UserForToken(ctx, bad); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UserForToken(%q) = %q, %v; want ErrNotFound", bad, got, err)
		}
	}

	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatalf("ListTokens = %v", err)
	}
	if len(list) != len(tokens) {
		t.Fatalf("ListTokens = %d tokens; want %d", len(list), len(tokens))
	}
	for i, l := range list {
		if i > 0 && list[i-1].User > l.User {
			t.Errorf("ListTokens not ordered by user: %s before %s", list[i-1].User, l.User)
		}
		found := false
		for tok, user := range tokens {
			h := sha256.Sum256([]byte(tok))
			if user == l.User && hex.EncodeToString(h[:])[:12] == l.Hash {
				found = true
			}
		}
		if !found || l.CreatedAt.IsZero() {
			t.Errorf("ListTokens has %+v; want a token added for that user with its hash", l)
		}
	}

	n, err := s.RevokeTokens(ctx, "alice@example.com")
	if err != nil || n != 2 {
		t.Fatalf("RevokeTokens(alice) = %d, %v; want 2", n, err)
	}
	for tok, user := range tokens {
		got, err := s.UserForToken(ctx, tok)
		if user == "alice@example.com" && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UserForToken(revoked %s) = %q, %v; want ErrNotFound", tok, got, err)
		}
		if user == "bob" && (err != nil || got != "bob") {
			t.Errorf("UserForToken(bob's) = %q, %v; want bob", got, err)
		}
	}
	if n, err := s.RevokeTokens(ctx, "nobody"); err != nil || n != 0 {
		t.Errorf("RevokeTokens(nobody) = %d, %v; want 0", n, err)
	}
}

// TestAddTokenRefusesBadUser: a user name that cannot be an owner_id is
// refused and no token is stored.
func TestAddTokenRefusesBadUser(t *testing.T) {
	s := mustOpenTokenStore(t)
	ctx := context.Background()
	for _, user := range []string{"", " alice", "bob ", "a\nb", "tab\there", strings.Repeat("é", store.MaxNameChars+1), "\xff"} {
		tok, err := s.AddToken(ctx, user)
		var inv *store.InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("AddToken(%q) = %q, %v; want an *InvalidError", user, tok, err)
		}
	}
	if list, err := s.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListTokens after refusals = %v, %v; want none", list, err)
	}
}
