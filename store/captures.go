package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"zombiezen.com/go/sqlite"
)

// Capture channels: where the raw payload of a capture file line came from.
const (
	ChannelOTel = "otel" // an OTLP logs export, filtered to one session
	ChannelHook = "hook" // a Claude Code hook's stdin
)

// captureFiles names the file of each channel in a session's capture folder.
var captureFiles = map[string]string{
	ChannelOTel: "otlp-logs.ndjson",
	ChannelHook: "hooks.ndjson",
}

// ErrNotPlainID means a session id is not a plain token, so it is never
// used in a path: letters, digits, _ . - only, and not "." or "..".
var ErrNotPlainID = errors.New("session id is not a plain token")

// PlainID reports whether a session id is a plain token (letters, digits,
// _ . -, at most 200 bytes, not "." or ".."), safe in a path and a log line.
func PlainID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 200 {
		return false
	}
	for _, r := range id {
		ok := r == '_' || r == '.' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}

// CaptureDir returns the folder of a session's raw capture files:
// captures/<id> beside the store file (~/.service/captures/<id> for the
// default store). It returns ErrNotPlainID for an id unsafe in a path.
func (s *Store) CaptureDir(sessionID string) (string, error) {
	if !PlainID(sessionID) {
		return "", ErrNotPlainID
	}
	return filepath.Join(filepath.Dir(s.path), "captures", sessionID), nil
}

// captureLine is one line of a capture file.
type captureLine struct {
	ReceivedAt string          `json:"received_at"`
	Channel    string          `json:"channel"`
	Payload    json.RawMessage `json:"payload"`
}

// AppendCapture appends one line {received_at, channel, payload} to the
// channel's file in the session's capture folder (folders 0700, files
// 0600), in one write so that lines of concurrent writers never mix.
// payload must be one JSON value; it is kept as given, compacted onto the
// line. It returns ErrNotPlainID for an unsafe id and a *DeletedError for
// a deleted session, and then writes nothing. A session need not be
// stored yet: the hook and the receiver see sessions before any import.
func (s *Store) AppendCapture(ctx context.Context, sessionID, channel string, payload json.RawMessage, received time.Time) error {
	if err := s.appendCapture(ctx, sessionID, channel, payload, received); err != nil {
		return fmt.Errorf("store: keep %s capture: %w", channel, err)
	}
	return nil
}

func (s *Store) appendCapture(ctx context.Context, sessionID, channel string, payload json.RawMessage, received time.Time) error {
	dir, err := s.CaptureDir(sessionID)
	if err != nil {
		return err
	}
	name, ok := captureFiles[channel]
	if !ok {
		return fmt.Errorf("unknown channel %q", channel)
	}
	var line bytes.Buffer
	enc := json.NewEncoder(&line) // one line: Encode compacts the payload and ends with \n
	enc.SetEscapeHTML(false)
	if err := enc.Encode(captureLine{ReceivedAt: received.UTC().Format(time.RFC3339Nano), Channel: channel, Payload: payload}); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if err := s.refuseDeleted(ctx, sessionID); err != nil {
		return err
	}
	written := appendFile(dir, name, line.Bytes())
	// A Delete that committed between the check above and the write has
	// already removed the folder, which the write then made again (or the
	// write failed for the folder going): check once more and take it away.
	// A Delete committing after this check removes the folder itself.
	if err := s.refuseDeleted(ctx, sessionID); err != nil {
		var deleted *DeletedError
		if errors.As(err, &deleted) {
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				return errors.Join(err, fmt.Errorf("remove the capture files of a deleted session: %w", rmErr))
			}
		}
		return err
	}
	return written
}

// refuseDeleted returns a *DeletedError when the session was deleted.
func (s *Store) refuseDeleted(ctx context.Context, sessionID string) error {
	return s.conn(ctx, func(conn *sqlite.Conn) error {
		deleted, err := isDeleted(conn, sessionID)
		if err == nil && deleted {
			err = &DeletedError{SessionID: sessionID}
		}
		return err
	})
}

// appendFile appends b to dir/name, making the folder (0700) and the file
// (0600) as needed.
func appendFile(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// removeCaptures removes a session's capture folder, if it has one. An id
// that is not a plain token has none: it is never joined to a path.
func (s *Store) removeCaptures(sessionID string) error {
	dir, err := s.CaptureDir(sessionID)
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove capture files: %w", err)
	}
	for _, e := range entries {
		if err := overwriteFile(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove capture files: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove capture files: %w", err)
	}
	return nil
}

// overwriteFile writes zeros over a regular file's bytes and syncs them,
// as secure_delete does to the store's freed pages, before the file is
// removed: removing alone leaves the text in the blocks the file had. A
// symbolic link or any other kind of file is left as it is (and removed
// after), and so is a file swapped for another between the look and the
// open.
func overwriteFile(path string) error {
	before, err := os.Lstat(path)
	if err != nil || !before.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(before, now) {
		return err
	}
	zeros := make([]byte, 64<<10)
	for left := before.Size(); left > 0; left -= int64(len(zeros)) {
		if _, err := f.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
