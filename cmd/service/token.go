package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// minTokenLen is the shortest token file the server accepts.
const minTokenLen = 32

// tokenPath is SERVICE_INGEST_TOKEN_FILE, or ~/.service/ingest-token.
func tokenPath() (string, error) {
	if p := os.Getenv("SERVICE_INGEST_TOKEN_FILE"); p != "" {
		return p, nil
	}
	dir, err := serviceDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ingest-token"), nil
}

// loadOrCreateToken reads the ingest token, creating the file on first
// start with 32 random bytes (43 base64url characters), readable by the
// owner only. A file holding fewer than 32 characters is refused.
func loadOrCreateToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createToken(path)
	}
	if err != nil {
		return "", fmt.Errorf("read token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen {
		return "", fmt.Errorf("token file %s holds %d characters, fewer than %d: delete it and start again to create a new token", path, len(tok), minTokenLen)
	}
	return tok, nil
}

func createToken(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create token file: %w", err)
	}
	var raw [32]byte
	rand.Read(raw[:])
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadOrCreateToken(path) // another process made it first
	}
	if err != nil {
		return "", fmt.Errorf("create token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write token file %s: %w", path, err)
	}
	return tok, f.Close()
}
