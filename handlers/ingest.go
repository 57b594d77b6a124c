package handlers

import (
	"bytes"
	"cmp"
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
	"sync"

	"github.com/agentreview/service/store"
)

// MaxBody is the most bytes an ingest body may have, before and after gzip.
const MaxBody = 8 << 20

// Applier is the store method ingest needs.
type Applier interface {
	Apply(ctx context.Context, b *store.Batch) (store.ApplyResult, error)
}

// ingest is POST /api/ingest: the one write route. The token is checked
// before the body is read; the body is read within MaxBody and applied in
// one transaction, which commits only once the whole batch is parsed and
// checked (applyBody).
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
		res, err := applyBody(r, st, owner)
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
	body, z, err := openBody(r, limit)
	if err != nil || z == nil {
		return body, err
	}
	return z.whole()
}

// parsingApplier is a store that writes a batch while it is decoded
// (store.Store.ApplyParsing).
type parsingApplier interface {
	ApplyParsing(ctx context.Context, owner string, parse func(*store.StepStream) (*store.Batch, error)) (store.ApplyResult, error)
}

// applyBody reads a push's body (openBody), parses it (parseBody) and
// applies it as owner's. A body of minInflate bytes or more is written
// while it is parsed when the store can do that: a 5,000-step push then
// takes about as long as its inserts, not its parse and then its inserts
// (docs/performance.md, "Written while parsed").
func applyBody(r *http.Request, st Applier, owner string) (store.ApplyResult, error) {
	body, z, err := openBody(r, MaxBody)
	if err != nil {
		return store.ApplyResult{}, err
	}
	if pa, ok := st.(parsingApplier); ok && (z != nil || len(body) >= minInflate) {
		return pa.ApplyParsing(r.Context(), owner, func(stream *store.StepStream) (*store.Batch, error) {
			return parseBody(body, z, stream)
		})
	}
	batch, err := parseBody(body, z, nil)
	if err != nil {
		return store.ApplyResult{}, err
	}
	batch.Owner = owner
	return st.Apply(r.Context(), batch)
}

// parseBody parses a body openBody returned (store.ParseBatchFrom),
// handing its steps to stream when that is not nil. A gzip body of known
// length is decompressed as it is parsed (inflating): parsed first, by a
// goroutine of its own beside the parse, so the push waits for the slower
// of the two, not both; written while parsed (stream), on the parse's
// goroutine as it reads, since the inserts beside it are slower than both
// together and a third goroutine on two cores would take turns with them
// (docs/performance.md, "Decompressed by the parse").
func parseBody(body []byte, z *inflating, stream *store.StepStream) (*store.Batch, error) {
	if z == nil {
		return store.ParseBatchFrom(bytes.NewBuffer(body), body, stream)
	}
	return z.parse(stream, stream == nil)
}

// openBody checks the content type, encoding and length of a body and
// reads it whole, or, for a gzip body of known length whose trailer gives
// its size, readies it to be decompressed as it is parsed (inflate) and
// returns that.
func openBody(r *http.Request, limit int64) ([]byte, *inflating, error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("content-type must be application/json, got %q", ct)}
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if enc != "" && enc != "gzip" {
		return nil, nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported content-encoding %q; use gzip or none", enc)}
	}
	if r.ContentLength > limit {
		return nil, nil, bodyTooLarge(limit)
	}
	raw := &cappedReader{r: r.Body, n: limit}
	if enc == "gzip" && r.ContentLength > 0 {
		// The client said how long the body is: read it whole, for the
		// decompressed size in its trailer. A body of unknown length
		// is decompressed as it arrives, so a stream never ending is
		// refused at limit bytes decompressed, not compressed.
		zipped, err := readAll(raw, r.ContentLength)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, nil, bodyTooLarge(limit)
			}
			return nil, nil, errInvalidGzip
		}
		z, err := inflate(zipped, limit)
		if z != nil || err != nil {
			return nil, z, err
		}
		body, err := gunzip(nil, bytes.NewReader(zipped), gzipSize(zipped, limit), limit)
		return body, nil, err
	}
	if enc == "gzip" {
		body, err := gunzip(raw, raw, -1, limit)
		return body, nil, err
	}
	body, err := readAll(raw, r.ContentLength)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, nil, bodyTooLarge(limit)
		}
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil, nil
}

func bodyTooLarge(limit int64) error {
	return &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit)}
}

var errInvalidGzip = &statusError{http.StatusBadRequest, "invalid gzip body"}

// gunzip decompresses src into a buffer of size bytes to begin with
// (readAll), within limit bytes. raw is the request body when src still
// reads it (a body of unknown length), so that going over limit there is
// told apart from decompressing past it; nil when the gzip bytes were
// read whole.
func gunzip(raw *cappedReader, src io.Reader, size, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(src)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, bodyTooLarge(limit)
		}
		return nil, errInvalidGzip
	}
	defer zr.Close()
	body, err := readAll(&cappedReader{r: zr, n: limit}, size)
	switch {
	case err == nil:
		return body, nil
	case errors.Is(err, errTooLarge) && raw != nil && raw.n < 0:
		return nil, bodyTooLarge(limit)
	case errors.Is(err, errTooLarge):
		return nil, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("decompressed body larger than %d bytes", limit)}
	}
	// Corrupt or truncated data; a client that hung up mid-body never
	// reads this answer anyway.
	return nil, errInvalidGzip
}

// inflating is a gzip body decompressed into buf, sized from the body's
// trailer, as it is read (Read): by a goroutine of its own running ahead
// of the reader (ahead), or by the reader itself when it finds nothing
// left to read. buf is never grown, so what was read stays where it is
// (store.ParseBatchFrom reads a payload again from it). A body longer
// than buf (a trailer that does not give the whole size: several gzip
// members) stops at buf's end with errOverflow, and whole decompresses it
// again the ordinary way.
type inflating struct {
	zipped []byte
	limit  int64
	buf    []byte
	zr     *gzip.Reader
	off    int           // bytes of buf read
	ahead  chan struct{} // closed once the goroutine decompressing ahead ends; nil without one

	mu     sync.Mutex
	filled sync.Cond // n or end changed
	n      int       // bytes of buf written
	end    error     // why decompressing stopped: io.EOF at the body's end; nil until it does
}

// errOverflow is the end of a body longer than its trailer said.
var errOverflow = errors.New("body longer than its gzip trailer says")

// inflateChunk is how much is decompressed at a time.
const inflateChunk = 64 << 10

// minInflate is the smallest body worth decompressing as it is parsed: a
// live push of 100 steps (~130 KB) decompresses in well under a
// millisecond, and its p99 with 32 streams open was no better for it
// (docs/performance.md, "Decompressed while parsed").
const minInflate = 1 << 20

// inflate readies zipped to be decompressed as it is read, when its
// trailer gives a size from minInflate to under limit; otherwise (nil,
// nil) the caller reads it whole, which refuses a body over limit as soon
// as it gets there, unparsed.
func inflate(zipped []byte, limit int64) (*inflating, error) {
	size := gzipSize(zipped, limit)
	if size < minInflate || size >= limit {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return nil, errInvalidGzip
	}
	z := &inflating{zipped: zipped, limit: limit, buf: make([]byte, size), zr: zr}
	z.filled.L = &z.mu
	return z, nil
}

// parse parses the body as it is decompressed, ahead or not, with what
// was wrong with the gzip coming before what is wrong with the JSON, as
// when the body was read whole.
func (z *inflating) parse(stream *store.StepStream, ahead bool) (*store.Batch, error) {
	if ahead {
		z.ahead = make(chan struct{})
		go func() {
			defer close(z.ahead)
			for z.more() {
			}
		}()
	}
	batch, parseErr := store.ParseBatchFrom(z, z.buf, stream)
	body, err := z.whole()
	if err != nil {
		return nil, err
	}
	if z.end == errOverflow {
		// Parsed again, whole: what was handed to stream is not this batch.
		return store.ParseBatch(body)
	}
	return batch, parseErr
}

// more decompresses the next chunk of the body into buf, or finds why it
// ends, and tells a Read waiting for it; false once it has ended. Only
// one goroutine calls it (n is written nowhere else).
func (z *inflating) more() bool {
	n := z.n
	var err error
	if n == len(z.buf) {
		// buf is full: the body must end here.
		var one [1]byte
		if k, rerr := z.zr.Read(one[:]); k > 0 {
			err = errOverflow
		} else {
			err = cmp.Or(rerr, errOverflow) // a reader that reads nothing without an end is no gzip reader
		}
	} else {
		var k int
		k, err = z.zr.Read(z.buf[n:min(n+inflateChunk, len(z.buf))])
		n += k
	}
	if err != nil {
		z.zr.Close()
	}
	z.mu.Lock()
	z.n, z.end = n, err
	z.mu.Unlock()
	z.filled.Broadcast()
	return err == nil
}

// Read reads the body as it is decompressed: waiting for the goroutine
// ahead, or decompressing the next chunk itself. Past the body's end it
// returns why decompressing stopped.
func (z *inflating) Read(p []byte) (int, error) {
	z.mu.Lock()
	for z.off == z.n && z.end == nil {
		if z.ahead != nil {
			z.filled.Wait()
			continue
		}
		z.mu.Unlock()
		z.more()
		z.mu.Lock()
	}
	n, end := z.n, z.end
	z.mu.Unlock()
	if z.off == n {
		return 0, end
	}
	k := copy(p, z.buf[z.off:n])
	z.off += k
	return k, nil
}

// whole decompresses the rest of the body (or waits for the goroutine
// ahead to) and returns it, or what was wrong with it as readBody says it.
// A body longer than buf is decompressed again.
func (z *inflating) whole() ([]byte, error) {
	if z.ahead != nil {
		<-z.ahead
	} else {
		for z.end == nil && z.more() {
		}
	}
	switch z.end {
	case io.EOF:
		return z.buf[:z.n], nil
	case errOverflow:
		return gunzip(nil, bytes.NewReader(z.zipped), int64(len(z.buf)), z.limit)
	}
	return nil, errInvalidGzip
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
