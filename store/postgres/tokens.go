package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreview/service/store"
)

// Token is a push token as the store keeps it: never the token itself,
// only whose it is, when it was made, and the start of its hash to tell
// tokens of one user apart.
type Token struct {
	User      string    `json:"user"`
	Hash      string    `json:"hash"` // first 12 hex digits of the SHA-256
	CreatedAt time.Time `json:"created_at"`
}

// AddToken makes a new push token for user (32 random bytes, base64url,
// as the local service's token) and stores only its SHA-256. The token is
// returned once and cannot be read back. A user name store.CheckUser
// refuses is an *store.InvalidError.
func (s *Store) AddToken(ctx context.Context, user string) (string, error) {
	if err := store.CheckUser(user); err != nil {
		return "", fmt.Errorf("store: add token: %w", err)
	}
	var raw [32]byte
	rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	hash := tokenHash(token)
	if _, err := s.pool.Exec(ctx, `INSERT INTO team_tokens (hash, user_id) VALUES ($1, $2)`, hash[:], user); err != nil {
		return "", fmt.Errorf("store: add token for %s: %w", user, err)
	}
	return token, nil
}

// UserForToken returns the user whose push token this is. The token is
// found by its SHA-256, so no stored secret is compared byte by byte; an
// unknown or revoked token is store.ErrNotFound.
func (s *Store) UserForToken(ctx context.Context, token string) (string, error) {
	hash := tokenHash(token)
	var user string
	err := s.pool.QueryRow(ctx, `SELECT user_id FROM team_tokens WHERE hash = $1`, hash[:]).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("store: token: %w", store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: look up token: %w", err)
	}
	return user, nil
}

// ListTokens returns every push token's user, hash start and creation
// time, by user and then oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT user_id, hash, created_at FROM team_tokens ORDER BY user_id, created_at, hash`)
	if err != nil {
		return nil, fmt.Errorf("store: list tokens: %w", err)
	}
	tokens, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Token, error) {
		var t Token
		var hash []byte
		err := row.Scan(&t.User, &hash, &t.CreatedAt)
		t.Hash = hex.EncodeToString(hash)[:12]
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list tokens: %w", err)
	}
	return tokens, nil
}

// RevokeTokens deletes every push token of user and returns how many
// there were; a later push with one of them is refused.
func (s *Store) RevokeTokens(ctx context.Context, user string) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM team_tokens WHERE user_id = $1`, user)
	if err != nil {
		return 0, fmt.Errorf("store: revoke tokens of %s: %w", user, err)
	}
	return int(tag.RowsAffected()), nil
}

func tokenHash(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(token))
}
