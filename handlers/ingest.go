package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/agentreview/service/store"
)

// MaxBody is the most bytes an ingest body may have, before and after gzip.
const MaxBody = 8 << 20

// Applier is the store method ingest needs.
type Applier interface {
	Apply(ctx context.Context, b *store.Batch) (store.ApplyResult, error)
}

// ingest is POST /api/ingest: the one write route. The token is checked
// before the body is read; the body is read within MaxBody, parsed and
// checked in full, then applied in one transaction.
func ingest(st Applier, hub *Hub, auth pushAuth, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, ok, err := auth.pusher(r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if !ok {
			refuseToken(w, auth.tokenHint())
			return
		}
		body, err := readBody(r, MaxBody)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		batch, err := store.ParseBatch(body)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		batch.Owner = owner
		res, err := st.Apply(r.Context(), batch)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if res.Changed {
			hub.Poke()
		}
		status := http.StatusOK
		if res.Created {
			status = http.StatusCreated
		}
		writeJSON(w, status, res)
	})
}

// Auth holds the ingest token and where it is kept, for the 401 message.
type Auth struct {
	Token     string
	TokenFile string // shown to the user, with the home folder as ~
}

// pusher compares the bearer token in constant time; every push to the
// local service is store.OwnerLocal's.
func (a Auth) pusher(r *http.Request) (string, bool, error) {
	cred, ok := bearer(r)
	if !ok || a.Token == "" {
		return "", false, nil
	}
	return "", subtle.ConstantTimeCompare([]byte(cred), []byte(a.Token)) == 1, nil
}

func (a Auth) tokenHint() string { return a.TokenFile }

var errTooLarge = errors.New("too large")

// cappedReader fails with errTooLarge once more than n bytes are read, so a
// body is never buffered past the limit.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if c.n < 0 {
		return n, errTooLarge
	}
	return n, err
}

// readBody checks the content type and encoding and reads the body, gzip
// or plain, within limit bytes before and after decompression. Buffers are
// sized up front from Content-Length and, for gzip, the size the trailer
// gives, so a 7 MB body is not copied through a buffer doubling its way up.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("content-type must be application/json, got %q", ct)}
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if enc != "" && enc != "gzip" {
		return nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported content-encoding %q; use gzip or none", enc)}
	}
	tooLarge := &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	raw := &cappedReader{r: r.Body, n: limit}
	var src io.Reader = raw
	size := r.ContentLength // a hint; -1 when unknown
	if enc == "gzip" {
		if size > 0 {
			// The client said how long the body is: read it whole, for the
			// decompressed size in its trailer. A body of unknown length
			// is decompressed as it arrives, so a stream never ending is
			// refused at limit bytes decompressed, not compressed.
			zipped, err := readAll(raw, size)
			if err != nil {
				if errors.Is(err, errTooLarge) {
					return nil, tooLarge
				}
				return nil, &statusError{http.StatusBadRequest, "invalid gzip body"}
			}
			src, size = bytes.NewReader(zipped), gzipSize(zipped, limit)
		}
		zr, err := gzip.NewReader(src)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, tooLarge
			}
			return nil, &statusError{http.StatusBadRequest, "invalid gzip body"}
		}
		defer zr.Close()
		src = &cappedReader{r: zr, n: limit}
	}
	body, err := readAll(src, size)
	if err != nil {
		switch {
		case errors.Is(err, errTooLarge) && raw.n < 0:
			return nil, tooLarge
		case errors.Is(err, errTooLarge):
			return nil, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("decompressed body larger than %d bytes", limit)}
		case enc == "gzip":
			// Corrupt or truncated data; a client that hung up mid-body
			// never reads this answer anyway.
			return nil, &statusError{http.StatusBadRequest, "invalid gzip body"}
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// readAll reads r to its end into a buffer of size bytes to begin with
// (when size is positive), growing it only if r holds more.
func readAll(r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead free to try the read that finds the end
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// maxDeflateRatio bounds how much deflate can expand its input (about
// 1032:1), so a trailer's claim never sizes a buffer beyond what the body
// could decompress to.
const maxDeflateRatio = 1032

// gzipSize is the decompressed size a gzip body's trailer gives (its last
// four bytes, modulo 4 GiB, of the last member only): a hint, capped at
// limit and at what the body could decompress to.
func gzipSize(zipped []byte, limit int64) int64 {
	if len(zipped) < 18 { // header and trailer
		return -1
	}
	n := int64(binary.LittleEndian.Uint32(zipped[len(zipped)-4:]))
	return min(n, limit, int64(len(zipped))*maxDeflateRatio)
}
