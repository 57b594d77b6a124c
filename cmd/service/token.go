package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const (
	// minTokenLen is the shortest token file the server accepts.
	minTokenLen = 32
	// maxTokenFile is the largest token file the server reads: a token is
	// 43 characters, so a larger file is not a token file.
	maxTokenFile = 4 << 10
)

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
// owner only. Every problem with the file is one line naming the file and
// the fix; a file others can read is used, with a warning naming the chmod
// that fixes it.
func loadOrCreateToken(path string) (token, warning string, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		token, err = createToken(path)
		if !errors.Is(err, fs.ErrExist) {
			return token, "", err
		}
		fi, err = os.Lstat(path) // another process made it first
	}
	if err != nil {
		return "", "", tokenFileError(path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return "", "", tokenFileError(path, err)
		}
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("token file %s is not a regular file (%s): remove it, or set SERVICE_INGEST_TOKEN_FILE to a file", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", tokenFileError(path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", "", tokenFileError(path, err)
	}
	if len(b) > maxTokenFile {
		return "", "", fmt.Errorf("token file %s is larger than %d bytes, so it holds no token: delete it and start again to create a new token", path, maxTokenFile)
	}
	token = strings.TrimSpace(string(b))
	if len(token) < minTokenLen {
		return "", "", fmt.Errorf("token file %s holds %d characters, fewer than %d: delete it and start again to create a new token", path, len(token), minTokenLen)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		warning = fmt.Sprintf("warning: token file %s can be read or changed by other users (mode %04o): run chmod 600 %s", path, perm, path)
	}
	return token, warning, nil
}

// tokenFileError says in one line what is wrong with the token file and
// how to fix it.
func tokenFileError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("token file %s is a loop of symbolic links: remove the link, or set SERVICE_INGEST_TOKEN_FILE to a file", path)
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(path); lerr == nil {
			return fmt.Errorf("token file %s is a symbolic link to %s, which does not exist: remove the link to have a new token created, or make it point at a token file", path, target)
		}
		return fmt.Errorf("token file %s cannot be created: a folder above it does not exist or is not a folder: %v", path, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("token file %s cannot be read or created: permission denied: make it yours and readable by you (chmod 600 %s), or set SERVICE_INGEST_TOKEN_FILE to another file", path, path)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("token file %s is below something that is not a folder: set SERVICE_INGEST_TOKEN_FILE to a file in a folder", path)
	}
	return fmt.Errorf("token file %s: %w", path, err)
}

// createToken writes a new token file; fs.ErrExist when the file appeared
// meanwhile (a link, or another process made it first).
func createToken(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", tokenFileError(path, err)
	}
	var raw [32]byte
	rand.Read(raw[:])
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if err != nil {
		return "", tokenFileError(path, err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("token file %s could not be written (%v): free some space and start again", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("token file %s could not be written (%v): free some space and start again", path, err)
	}
	return tok, nil
}
