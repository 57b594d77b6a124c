package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// applyParsing is ApplyParsing of body read as it comes from r.
func applyParsing(s *store.Store, r io.Reader, body []byte) (store.ApplyResult, error) {
	return s.ApplyParsing(context.Background(), "", func(stream *store.StepStream) (*store.Batch, error) {
		return store.ParseBatchFrom(r, body, stream)
	})
}

// applyParsed is what ApplyParsing must match: the body parsed, then
// applied.
func applyParsed(s *store.Store, body []byte) (store.ApplyResult, error) {
	b, err := store.ParseBatch(body)
	if err != nil {
		return store.ApplyResult{}, err
	}
	return s.Apply(context.Background(), b)
}

// reordered is the JSON of batch with its top-level names in order; a
// name given twice is written twice, with the value of again when it is
// in again.
func reordered(t testing.TB, batch *store.Batch, again map[string]any, order ...string) []byte {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(mustMarshal(t, batch), &fields); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, name := range order {
		if i > 0 {
			buf.WriteByte(',')
		}
		value := fields[name]
		if v, ok := again[name]; ok && seen[name] {
			value = mustMarshal(t, v)
		}
		seen[name] = true
		buf.Write(mustMarshal(t, name))
		buf.WriteByte(':')
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bigBatch is a batch of many steps, storetest's mix, so that many chunks
// are handed over.
func bigBatch(sid string) *store.Batch { return storetest.Batch(sid, 0, 1000) }

// A batch written as it is decoded stores every row Apply of the parsed
// batch stores, and answers the same, whatever the order of its names:
// steps after the header are handed over, steps before it are not, and a
// header or steps array given again (the last one counts) is written the
// ordinary way.
func TestApplyParsingStoresWhatApplyStores(t *testing.T) {
	const sid = "5e55104e-0000-4000-8000-000000000001"
	full := bigBatch(sid)
	first := storetest.Batch(sid, 0, 1000)
	first.Steps = first.Steps[:100]
	canonical := []string{"schema_version", "session", "segments", "actors", "turns", "steps"}
	for _, c := range []struct {
		name   string
		stored *store.Batch // applied to both stores first
		body   []byte
	}{
		{"header first", nil, reordered(t, full, nil, canonical...)},
		{"steps first", nil, reordered(t, full, nil, "steps", "turns", "actors", "segments", "session", "schema_version")},
		{"turns after the steps", nil, reordered(t, full, nil, "schema_version", "session", "steps", "segments", "actors", "turns")},
		{"header again after the steps", nil, reordered(t, full, nil, append(canonical, "session")...)},
		{"steps again", nil, reordered(t, full, map[string]any{"steps": full.Steps[:10]}, append(canonical, "steps")...)},
		{"session stored", first, reordered(t, full, nil, canonical...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			parsing, parsed := filepath.Join(dir, "parsing.db"), filepath.Join(dir, "parsed.db")
			sp, sa := mustOpenPath(t, parsing), mustOpenPath(t, parsed)
			if c.stored != nil {
				for _, s := range []*store.Store{sp, sa} {
					if _, err := s.Apply(context.Background(), c.stored); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := applyParsing(sp, bytes.NewBuffer(c.body), c.body)
			if err != nil {
				t.Fatalf("ApplyParsing = %v; want no error", err)
			}
			want, err := applyParsed(sa, c.body)
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if got != want {
				t.Errorf("ApplyParsing = %+v; Apply = %+v", got, want)
			}
			for _, q := range benchTableQueries(t, parsed) {
				if got, want := benchDump(t, parsing, q), benchDump(t, parsed, q); got != want {
					t.Errorf("%s: ApplyParsing stored\n%.600s\nApply stored\n%.600s", q, got, want)
				}
			}
		})
	}
}

// What is wrong with a batch is found only at its end, after its first
// steps were written: the answer is the one the parse and then Apply
// give, and the store is as it was.
func TestApplyParsingAnswersAsApplyAndWritesNothing(t *testing.T) {
	const sid = "5e55104e-0000-4000-8000-000000000002"
	body := func(change func(b *store.Batch)) []byte {
		b := bigBatch(sid)
		change(b)
		return mustMarshal(t, b)
	}
	last := func(b *store.Batch) *store.Step { return &b.Steps[len(b.Steps)-1] }
	whole := body(func(*store.Batch) {})
	for _, c := range []struct {
		name    string
		body    []byte
		deleted bool // the session was stored and deleted
	}{
		{"the last step of no known type", body(func(b *store.Batch) { last(b).Type = "bogus" }), false},
		{"the last step in no turn", body(func(b *store.Batch) { last(b).TurnID = "no-such-turn" }), false},
		{"the last step's seq taken", body(func(b *store.Batch) { last(b).Seq = b.Steps[0].Seq }), false},
		{"cut short", whole[:len(whole)-2], false},
		{"too many steps", mustMarshal(t, storetest.Batch(sid, 0, store.MaxItems+1)), false},
		{"an unknown name at the end", append(whole[:len(whole)-1:len(whole)-1], `,"extra":1}`...), false},
		{"a deleted session", whole, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sp, sa := mustOpenPath(t, filepath.Join(dir, "parsing.db")), mustOpenPath(t, filepath.Join(dir, "parsed.db"))
			for _, s := range []*store.Store{sp, sa} {
				mustApply(t, s, newBatch("other"))
				if c.deleted {
					if _, err := applyParsed(s, whole); err != nil {
						t.Fatal(err)
					}
					mustDelete(t, s, sid)
				}
			}
			before := snapshot(t, sp)
			_, want := applyParsed(sa, c.body)
			if want == nil {
				t.Fatal("Apply of the body = nil; the case is not wrong")
			}
			_, got := applyParsing(sp, bytes.NewBuffer(c.body), c.body)
			if got == nil || got.Error() != want.Error() {
				t.Errorf("ApplyParsing = %v;\nwant (Apply) %v", got, want)
			}
			assertUnchanged(t, sp, before)
		})
	}
}

// gatedReader yields body up to at, then waits for open before the rest.
type gatedReader struct {
	body []byte
	off  int
	at   int
	open chan struct{}
	once sync.Once
	held chan struct{} // closed when the reader reached at
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.off == g.at {
		g.once.Do(func() { close(g.held) })
		<-g.open
	}
	end := len(g.body)
	if g.off < g.at {
		end = g.at
	}
	if g.off == len(g.body) {
		return 0, io.EOF
	}
	n := copy(p, g.body[g.off:end])
	g.off += n
	return n, nil
}

// The steps are written while the body is still being read: halfway
// through it, the store file's write lock is held by the transaction
// writing them.
func TestApplyParsingWritesWhileParsing(t *testing.T) {
	const sid = "5e55104e-0000-4000-8000-000000000003"
	body := mustMarshal(t, bigBatch(sid))
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpenPath(t, path)
	g := &gatedReader{body: body, at: len(body) / 2, open: make(chan struct{}), held: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := applyParsing(s, g, body)
		done <- err
	}()
	<-g.held

	other, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetBusyTimeout(0) // busy at once, not waited for
	locked := false
	for deadline := time.Now().Add(10 * time.Second); !locked && time.Now().Before(deadline); {
		err := sqlitex.ExecuteTransient(other, "BEGIN IMMEDIATE", nil)
		if err == nil {
			sqlitex.ExecuteTransient(other, "ROLLBACK", nil)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if sqlite.ErrCode(err).ToPrimary() != sqlite.ResultBusy {
			t.Fatalf("BEGIN IMMEDIATE = %v", err)
		}
		locked = true
	}
	close(g.open)
	if err := <-done; err != nil {
		t.Fatalf("ApplyParsing = %v", err)
	}
	if !locked {
		t.Error("halfway through the body, no transaction held the store's write lock: the steps wait for the whole parse")
	}
	q := "SELECT count(*) FROM steps JOIN sessions ON sessions.pk = session_pk WHERE sessions.id = '" + sid + "'"
	if got := benchDump(t, path, q); got != "\"1000\"|\n" {
		t.Errorf("steps stored: %s; want 1000", got)
	}
}

// panickingReader yields body up to at, then panics.
type panickingReader struct {
	body    []byte
	off, at int
}

func (p *panickingReader) Read(b []byte) (int, error) {
	if p.off == p.at {
		panic("the decoder's bug")
	}
	n := copy(b, p.body[p.off:p.at])
	p.off += n
	return n, nil
}

// A panic while parsing, after steps were written, reaches ApplyParsing's
// caller (net/http recovers a handler's panic; a goroutine's would end the
// process), and nothing is stored.
func TestApplyParsingRaisesTheParsePanicOnItsCaller(t *testing.T) {
	const sid = "5e55104e-0000-4000-8000-000000000004"
	body := mustMarshal(t, bigBatch(sid))
	s := mustOpen(t)
	mustApply(t, s, newBatch("other"))
	before := snapshot(t, s)
	func() {
		defer func() {
			if p := recover(); p != "the decoder's bug" {
				t.Errorf("ApplyParsing's panic = %v; want the parse's", p)
			}
		}()
		applyParsing(s, &panickingReader{body: body, at: len(body) * 3 / 4}, body)
	}()
	assertUnchanged(t, s, before)
}

// Any body, written while parsed, gets the answer and leaves the rows
// that parsing it first and then applying it do. Both stores see the same
// bodies in the same order.
func FuzzApplyParsing(f *testing.F) {
	for _, seed := range []obj{
		newBatch("seed"),
		{"schema_version": "1.2", "session": header("seed")},
		stepsBatch("seed", step("seed", 1, "read")),
	} {
		f.Add(mustJSON(f, seed))
	}
	seed := newBatch("seed")
	whole := string(mustJSON(f, seed))
	f.Add([]byte(whole[:len(whole)-1] + `,"session":` + string(mustJSON(f, header("other"))) + `}`))
	f.Add([]byte(whole[:len(whole)-1] + `,"steps":[]}`))
	f.Add([]byte(`{"steps":[],"session":{}}`))
	f.Add(reordered(f, mustParse(f, seed), nil, "steps", "session", "turns", "schema_version", "segments", "actors"))
	dir := f.TempDir()
	parsing, parsed := filepath.Join(dir, "parsing.db"), filepath.Join(dir, "parsed.db")
	sp, sa := mustOpenPath(f, parsing), mustOpenPath(f, parsed)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := applyParsing(sp, bytes.NewBuffer(body), body)
		want, wantErr := applyParsed(sa, body)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got != want {
			t.Fatalf("ApplyParsing = %+v, %v;\nApply = %+v, %v", got, gotErr, want, wantErr)
		}
		if wantErr != nil {
			return
		}
		// The two stores stamp the session at their own times.
		read := func(s *store.Store) store.SessionDetail {
			d := mustDetail(t, s, want.SessionID)
			d.UpdatedAt = ""
			return d
		}
		if got, want := mustJSON(t, read(sp)), mustJSON(t, read(sa)); !bytes.Equal(got, want) {
			t.Fatalf("ApplyParsing stored\n%.600s\nApply stored\n%.600s", got, want)
		}
	})
}
