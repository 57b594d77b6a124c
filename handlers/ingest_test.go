package handlers

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

func TestIngestCreatesThenUpdates(t *testing.T) {
	s := newTestService(t)
	b := mustJSON(t, newBatch("s1"))
	for _, c := range []struct {
		name    string
		body    []byte
		headers []string
		status  int
		created bool
	}{
		{"create", b, nil, http.StatusCreated, true},
		{"identical re-send", b, nil, http.StatusOK, false},
		{"gzip re-send", gzipped(t, b), []string{"Content-Encoding", "gzip"}, http.StatusOK, false},
		// The trailer gives the last member's size only: decompressed again.
		{"gzip in two members", append(gzipped(t, b[:len(b)/2]), gzipped(t, b[len(b)/2:])...), []string{"Content-Encoding", "gzip"}, http.StatusOK, false},
		{"charset parameter", b, []string{"Content-Type", "application/json; charset=utf-8"}, http.StatusOK, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := s.push(c.body, c.headers...)
			if rec.Code != c.status {
				t.Fatalf("push = %d %s; want %d", rec.Code, rec.Body, c.status)
			}
			var res struct {
				SessionID                      string `json:"session_id"`
				Created                        bool   `json:"created"`
				Steps, Turns, Segments, Actors int
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.SessionID != "s1" || res.Created != c.created || res.Steps != 5 || res.Turns != 1 || res.Segments != 1 || res.Actors != 1 {
				t.Errorf("push response = %+v; want session s1, created %v, counts 5/1/1/1", res, c.created)
			}
		})
	}
}

func TestIngestResendChangesNothing(t *testing.T) {
	s := newTestService(t)
	b := mustJSON(t, newBatch("s1"))
	s.push(b)
	before := s.snapshot()
	if rec := s.push(b); rec.Code != http.StatusOK {
		t.Fatalf("re-send = %d %s; want 200", rec.Code, rec.Body)
	}
	if after := s.snapshot(); after != before {
		t.Errorf("an identical re-send changed the store (updated_at or content):\nbefore %s\nafter  %s", before, after)
	}
}

// TestIngestErrors sends every error of the spec's section 7 and checks the
// status, the message, and that the store is exactly as before.
func TestIngestErrors(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("base"), http.StatusCreated)
	s.mustPush(newBatch("gone"), http.StatusCreated)
	if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/gone", nil)); rec.Code != http.StatusOK {
		t.Fatalf("delete = %d %s", rec.Code, rec.Body)
	}
	valid := mustJSON(t, newBatch("new"))
	mutate := func(f func(b obj)) []byte {
		b := newBatch("new")
		f(b)
		return mustJSON(t, b)
	}
	intruder := newBatch("base")["steps"].(arr)[0].(obj)
	intruder["id"] = "intruder" // seq 1 is held by base-s1
	bigStep := newBatch("new")
	bigStep["steps"].(arr)[1].(obj)["payload"].(obj)["stdout"] = strings.Repeat("x", MaxBody)
	bigJSON := mustJSON(t, bigStep)
	tooMany := newBatch("new")
	steps := arr{}
	for i := range 5001 {
		st := map[string]any{}
		for k, v := range tooMany["steps"].(arr)[0].(obj) {
			st[k] = v
		}
		st["seq"], st["id"] = i, "many-"+string(rune('a'+i%26))
		steps = append(steps, st)
	}
	tooMany["steps"] = steps

	cases := []struct {
		name    string
		body    []byte
		headers []string
		status  int
		error   string // prefix of the error message
		detail  string // a details path that must be listed
	}{
		{"not JSON", []byte(`{"schema_version": "1.2", `), nil, 400, "body is not valid JSON", ""},
		{"trailing data", append(bytes.Clone(valid), " {}"...), nil, 400, "body is not valid JSON", ""},
		{"not an object", []byte(`[1,2]`), nil, 400, "body must be a JSON object", ""},
		{"invalid batch", mutate(func(b obj) { delete(b["session"].(obj), "started_at") }), nil, 400, "invalid batch", "session.started_at"},
		{"unknown reference", mutate(func(b obj) { b["steps"].(arr)[1].(obj)["turn_id"] = "nope" }), nil, 400, "batch references unknown or mismatched records", "steps[1].turn_id"},
		{"session_id mismatch", mutate(func(b obj) { b["turns"].(arr)[0].(obj)["session_id"] = "other" }), nil, 400, "batch references unknown or mismatched records", "turns[0].session_id"},
		{"invalid gzip", []byte("not gzip"), []string{"Content-Encoding", "gzip"}, 400, "invalid gzip body", ""},
		{"truncated gzip", gzipped(t, valid)[:40], []string{"Content-Encoding", "gzip"}, 400, "invalid gzip body", ""},
		{"corrupt gzip", corrupted(gzipped(t, valid)), []string{"Content-Encoding", "gzip"}, 400, "invalid gzip body", ""},
		{"no token", valid, []string{"Authorization", ""}, 401, "missing or invalid bearer token", ""},
		{"wrong token", valid, []string{"Authorization", "Bearer " + strings.Repeat("A", 43)}, 401, "missing or invalid bearer token", ""},
		{"basic scheme", valid, []string{"Authorization", "Basic " + testToken}, 401, "missing or invalid bearer token", ""},
		{"seq conflict", mustJSON(t, stepsOnly("base", intruder)), nil, 409, "step seq already taken in this session", "steps[0].seq"},
		{"deleted session", mustJSON(t, newBatch("gone")), nil, 410, "session gone was deleted; it is not recorded again", ""},
		{"body too large", bigJSON, nil, 413, "body larger than 8388608 bytes", ""},
		{"decompressed too large", gzipped(t, bigJSON), []string{"Content-Encoding", "gzip"}, 413, "decompressed body larger than 8388608 bytes", ""},
		{"too many steps", mustJSON(t, tooMany), nil, 413, "too many steps in one batch: 5001 > 5000; split it into several pushes", ""},
		{"wrong content type", valid, []string{"Content-Type", "text/plain"}, 415, `content-type must be application/json, got "text/plain"`, ""},
		{"no content type", valid, []string{"Content-Type", ""}, 415, "content-type must be application/json", ""},
		{"unsupported encoding", valid, []string{"Content-Encoding", "br"}, 415, `unsupported content-encoding "br"; use gzip or none`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.snapshot()
			rec := s.push(c.body, c.headers...)
			if rec.Code != c.status {
				t.Fatalf("push = %d %.300s; want %d", rec.Code, rec.Body, c.status)
			}
			e := decodeError(t, rec)
			if !strings.HasPrefix(e.Error, c.error) {
				t.Errorf("error = %q; want it to start %q", e.Error, c.error)
			}
			if c.detail != "" && !hasDetail(e, c.detail) {
				t.Errorf("details = %+v; want one at %s", e.Details, c.detail)
			}
			if c.status == 401 && rec.Header().Get("WWW-Authenticate") != `Bearer realm="service"` {
				t.Errorf("www-authenticate = %q; want Bearer realm=\"service\"", rec.Header().Get("WWW-Authenticate"))
			}
			if after := s.snapshot(); after != before {
				t.Errorf("a refused push changed the store")
			}
		})
	}
}

func hasDetail(e errorBody, path string) bool {
	for _, d := range e.Details {
		if d.Path == path {
			return true
		}
	}
	return false
}

func TestIngestOtherMethods405(t *testing.T) {
	s := newTestService(t)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodHead} {
		rec := s.do(httptest.NewRequest(m, "/api/ingest", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
			t.Errorf("%s /api/ingest = %d allow %q; want 405 allow POST", m, rec.Code, rec.Header().Get("Allow"))
		}
		if m != http.MethodHead && !strings.HasPrefix(rec.Body.String(), "method not allowed") {
			t.Errorf("%s /api/ingest body = %q; want plain text method not allowed", m, rec.Body)
		}
	}
}

func TestIngestValidationListsAtMost100Problems(t *testing.T) {
	s := newTestService(t)
	b := newBatch("s1")
	for i := range 150 {
		b["session"].(obj)["extra"+string(rune('A'+i/26))+string(rune('a'+i%26))] = 1
	}
	rec := s.push(mustJSON(t, b))
	e := decodeError(t, rec)
	if rec.Code != 400 || len(e.Details) != 100 || e.Omitted != 50 {
		t.Errorf("push with 150 problems = %d, %d details, omitted %d; want 400, 100, 50", rec.Code, len(e.Details), e.Omitted)
	}
}

// readSpy records whether the handler read the body at all, and how much.
type readSpy struct {
	n   int64
	src io.Reader
}

func (r *readSpy) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	r.n += int64(n)
	return n, err
}

func TestIngestTokenCheckedBeforeBodyIsRead(t *testing.T) {
	s := newTestService(t)
	spy := &readSpy{src: bytes.NewReader(mustJSON(t, newBatch("s1")))}
	req := httptest.NewRequest(http.MethodPost, "/api/ingest", spy)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer wrong")
	if rec := s.do(req); rec.Code != http.StatusUnauthorized {
		t.Fatalf("push with a wrong token = %d; want 401", rec.Code)
	}
	if spy.n != 0 {
		t.Errorf("the handler read %d bytes of a request with a wrong token; want 0", spy.n)
	}
}

// endless is a body that never ends, sent without a content length.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestIngestStopsReadingAtTheLimit(t *testing.T) {
	for _, enc := range []string{"", "gzip"} {
		t.Run("encoding "+enc, func(t *testing.T) {
			s := newTestService(t)
			var body io.Reader = endless{}
			if enc == "gzip" {
				pr, pw := io.Pipe()
				go func() { // an endless gzip stream: a bomb in miniature
					zw := gzip.NewWriter(pw)
					for {
						if _, err := zw.Write(make([]byte, 1<<16)); err != nil {
							pw.CloseWithError(err)
							return
						}
					}
				}()
				body = pr
			}
			spy := &readSpy{src: body}
			req := httptest.NewRequest(http.MethodPost, "/api/ingest", spy)
			req.ContentLength = -1
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+testToken)
			if enc != "" {
				req.Header.Set("Content-Encoding", enc)
			}
			rec := s.do(req)
			if rec.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("endless body = %d %s; want 413", rec.Code, rec.Body)
			}
			if spy.n > MaxBody+64<<10 {
				t.Errorf("read %d bytes of an endless body; want it to stop near %d", spy.n, MaxBody)
			}
			if closer, ok := body.(io.Closer); ok {
				closer.Close()
			}
		})
	}
}

// readBodyAllocs is how many bytes readBody allocates for body, sent with
// its content length and the given encoding, and what it returns.
func readBodyAllocs(t *testing.T, body []byte, enc string) (uint64, []byte, error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readBody(req, MaxBody)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, got, err
}

func TestReadBodySizesItsBuffers(t *testing.T) {
	plain := mustJSON(t, storetest.Batch("s1", 0, 4000)) // about 6 MB, as an import pushes
	zipped := gzipped(t, plain)
	for _, c := range []struct {
		enc  string
		sent []byte
	}{{"", plain}, {"gzip", zipped}} {
		t.Run("encoding "+c.enc, func(t *testing.T) {
			allocated, got, err := readBodyAllocs(t, c.sent, c.enc)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("readBody = %d bytes, %v; want the %d bytes sent", len(got), err, len(plain))
			}
			// The body once, the compressed body once, and the gzip
			// reader's state (and, under -race, the detector's own
			// allocations: tens of KB); a buffer doubling its way up
			// allocates twice the body and more (over 10 MB here).
			if want := uint64(len(plain)+len(c.sent)) + 2<<20; allocated > want {
				t.Errorf("readBody of %d bytes (%d sent) allocated %d bytes; want at most %d", len(plain), len(c.sent), allocated, want)
			}
		})
	}
}

// corrupted flips the bits of a byte in the middle of a gzip body's
// deflate data.
func corrupted(zipped []byte) []byte {
	z := bytes.Clone(zipped)
	z[len(z)/2] ^= 0xff
	return z
}

// A gzip body of over minInflate is parsed as it is decompressed
// (inflating), in many chunks, by another goroutine ahead of the parse or
// by the parse's own as it reads, with every payload before its step's
// type (the keys sorted), which the parser reads again from the buffer
// being filled: the batch is the one the plain body parses to, also when
// the body is two gzip members (longer than its trailer says: decompressed
// again). A corrupt body, or one whose trailer claims less, is the gzip's
// error, not the JSON's.
func TestParseBodyWhileDecompressing(t *testing.T) {
	var sorted any
	if err := json.Unmarshal(mustJSON(t, storetest.Batch("s1", 0, 3000)), &sorted); err != nil {
		t.Fatal(err)
	}
	plain := mustJSON(t, sorted)
	steps := plain[bytes.Index(plain, []byte(`"steps":[`)):]
	if bytes.Index(steps, []byte(`"payload":{`)) > bytes.Index(steps, []byte(`"type":`)) {
		t.Fatal("the body's first step does not have its payload before its type")
	}
	if len(plain) < minInflate+10*inflateChunk {
		t.Fatalf("the body is %d bytes, too small to be decompressed beside its parse in many chunks", len(plain))
	}
	want, err := store.ParseBatch(plain)
	if err != nil {
		t.Fatalf("ParseBatch(plain) = %v", err)
	}
	zipped := gzipped(t, plain)
	short := bytes.Clone(zipped)
	binary.LittleEndian.PutUint32(short[len(short)-4:], minInflate)
	for _, c := range []struct {
		name string
		body []byte
		err  string
	}{
		{"one member", zipped, ""},
		{"two members", append(gzipped(t, plain[:len(plain)/2]), gzipped(t, plain[len(plain)/2:])...), ""},
		{"corrupt", corrupted(zipped), "invalid gzip body"},
		{"trailer claims less", short, "invalid gzip body"},
	} {
		for _, ahead := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, ahead %v", c.name, ahead), func(t *testing.T) {
				req := httptest.NewRequest(http.MethodPost, "/api/ingest", bytes.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Content-Encoding", "gzip")
				body, z, err := openBody(req, MaxBody)
				if err == nil && (body != nil || z == nil) {
					t.Fatal("openBody read a gzip body of over minInflate whole")
				}
				var got *store.Batch
				if err == nil {
					got, err = z.parse(nil, ahead)
				}
				if c.err != "" {
					var se *statusError
					if !errors.As(err, &se) || se.status != http.StatusBadRequest || se.msg != c.err {
						t.Fatalf("openBody and parseBody = %v; want 400 %s", err, c.err)
					}
					return
				}
				if err != nil {
					t.Fatalf("openBody and parseBody = %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Error("the batch parsed while decompressing differs from the plain body's")
				}
			})
		}
	}
}

func TestReadBodyDoesNotTrustTheGzipTrailer(t *testing.T) {
	zipped := gzipped(t, []byte(`{"schema_version": "1.2"}`))
	binary.LittleEndian.PutUint32(zipped[len(zipped)-4:], MaxBody) // claims 8 MB
	allocated, _, err := readBodyAllocs(t, zipped, "gzip")
	var se *statusError
	if !errors.As(err, &se) || se.status != http.StatusBadRequest || se.msg != "invalid gzip body" {
		t.Fatalf("readBody of a gzip body with a false size = %v; want 400 invalid gzip body", err)
	}
	if allocated > 1<<20 {
		t.Errorf("readBody of %d bytes claiming %d allocated %d bytes; want under 1 MiB", len(zipped), MaxBody, allocated)
	}
}

// parsedFirst is a store without ApplyParsing: ingest parses a body whole,
// then applies it.
type parsedFirst struct{ Store }

// parsingCounted counts the pushes written while parsed.
type parsingCounted struct {
	*store.Store
	calls int
}

func (c *parsingCounted) ApplyParsing(ctx context.Context, owner string, parse func(*store.StepStream) (*store.Batch, error)) (store.ApplyResult, error) {
	c.calls++
	return c.Store.ApplyParsing(ctx, owner, parse)
}

// A push of a megabyte or more is written while it is parsed
// (store.ApplyParsing); its answer, to a good batch or to one whose
// problem is only at its end, is the one the same body gets when it is
// parsed first, and a refused one leaves the store as it was.
func TestIngestBigPushAnswersAsWhenParsedFirst(t *testing.T) {
	const sid = "5e55104e-0000-4000-8000-0000000000b1"
	bodyOf := func(change func(b *store.Batch)) []byte {
		b := storetest.Batch(sid, 0, 2000)
		change(b)
		return mustJSON(t, b)
	}
	good := bodyOf(func(*store.Batch) {})
	if len(good) < minInflate {
		t.Fatalf("the body is %d bytes; want at least minInflate (%d) for it to be written while parsed", len(good), minInflate)
	}
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"good", good},
		{"the last step of no known type", bodyOf(func(b *store.Batch) { b.Steps[len(b.Steps)-1].Type = "bogus" })},
		{"the last step in no turn", bodyOf(func(b *store.Batch) { b.Steps[len(b.Steps)-1].TurnID = "no-such-turn" })},
		{"cut short", good[:len(good)-1]},
	} {
		for _, enc := range []string{"", "gzip"} {
			t.Run(c.name+"/"+cmp.Or(enc, "plain"), func(t *testing.T) {
				body := c.body
				if enc == "gzip" {
					body = gzipped(t, body)
				}
				s := newTestService(t)
				counted := &parsingCounted{Store: s.store}
				s.handler = Routes(Deps{Store: counted, Hub: s.hub, Auth: Auth{Token: testToken}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				before := s.snapshot()
				got := s.push(body, "Content-Encoding", enc)
				if counted.calls != 1 {
					t.Errorf("the push was written while parsed %d times; want 1", counted.calls)
				}

				first := newTestService(t)
				first.handler = Routes(Deps{Store: parsedFirst{first.store}, Hub: first.hub, Auth: Auth{Token: testToken}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				want := first.push(body, "Content-Encoding", enc)
				if got.Code != want.Code || got.Body.String() != want.Body.String() {
					t.Fatalf("push = %d %.300s;\nparsed first: %d %.300s", got.Code, got.Body, want.Code, want.Body)
				}
				if want.Code >= 300 {
					if after := s.snapshot(); after != before {
						t.Error("a refused push changed the store")
					}
					return
				}
				// The two stores stamp the session at their own times.
				stamps := regexp.MustCompile(`"updated_at":"[^"]*"`)
				read := func(s *testService) string {
					return stamps.ReplaceAllString(s.get("/api/sessions/"+sid).Body.String(), "")
				}
				if got, want := read(s), read(first); got != want {
					t.Errorf("the session as stored differs from the one parsed first:\n%.300s\n%.300s", got, want)
				}
			})
		}
	}
}
