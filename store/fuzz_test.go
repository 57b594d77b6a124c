package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreview/service/store"
)

// FuzzParseBatch checks that ParseBatch never panics and returns only its
// documented errors, and that every batch it accepts whose references hold
// is applied by Apply and reads back as parsed. The committed corpus is in
// testdata/fuzz/FuzzParseBatch.
func FuzzParseBatch(f *testing.F) {
	full := newBatch("seed")
	set(full, "session.ended_at", tEnd)
	set(full, "steps[2].payload.structured_patch", arr{obj{"lines": arr{"-a", "+b"}}})
	set(full, "steps[1].payload.stdout", "")
	for _, seed := range []obj{
		newBatch("seed"),
		full,
		{"schema_version": "1.2", "session": header("seed")},
		stepsBatch("seed", step("seed", 1, "read")), // references nothing stored
	} {
		f.Add(mustJSON(f, seed))
	}
	f.Add([]byte(`{"schema_version":"1.2","session":null,"steps":[{}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{} {}`))

	// One store per fuzz worker: f's body runs once in each worker process.
	// Each input is applied as a session of its own, so inputs cannot
	// meet: a counter goes in front of the session id.
	s := mustOpen(f)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := store.ParseBatch(body)
		if err != nil {
			checkParseError(t, body, err)
			return
		}
		old := b.Session.ID
		sid := fmt.Sprintf("fuzz%d:%s", n.Add(1), old)
		b.Session.ID = sid
		for i := range b.Turns {
			if b.Turns[i].SessionID == old {
				b.Turns[i].SessionID = sid
			}
		}
		for i := range b.Steps {
			if b.Steps[i].SessionID == old {
				b.Steps[i].SessionID = sid
			}
		}

		ctx := context.Background()
		res, err := s.Apply(ctx, b)
		var re *store.ReferenceError
		if errors.As(err, &re) {
			if len(re.Problems) == 0 {
				t.Fatalf("Apply(%s) = *ReferenceError with no problems", body)
			}
			if _, err := s.Detail(ctx, sid, store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Detail(%s) after a refused batch = %v; want ErrNotFound", sid, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Apply(%s) = %v%s; want no error", body, err, problems(err))
		}
		want := store.ApplyResult{SessionID: sid, Created: true, Changed: true, StepsWritten: len(b.Steps),
			Steps: len(b.Steps), Turns: len(b.Turns), Segments: len(b.Segments), Actors: len(b.Actors)}
		if res != want {
			t.Fatalf("Apply(%s) = %+v; want %+v", body, res, want)
		}
		d, err := s.Detail(ctx, sid, store.DetailQuery{})
		if err != nil {
			t.Fatalf("Detail(%s) = %v; want no error", sid, err)
		}
		checkReadBack(t, b, d)

		// A re-send changes nothing.
		res, err = s.Apply(ctx, b)
		if err != nil || res.Created || res.Changed {
			t.Fatalf("Apply(%s) again = %+v, %v; want Created and Changed false", body, res, err)
		}
	})
}

// checkParseError fails unless err is one of ParseBatch's documented errors.
func checkParseError(t *testing.T, body []byte, err error) {
	t.Helper()
	var inv *store.InvalidError
	var tm *store.TooManyError
	switch {
	case err == store.ErrNotJSON, err == store.ErrNotObject:
	case errors.As(err, &tm):
		if tm.Count <= store.MaxItems {
			t.Fatalf("ParseBatch(%q) = %+v; want a count over %d", body, tm, store.MaxItems)
		}
	case errors.As(err, &inv):
		if len(inv.Problems) == 0 || len(inv.Problems) > store.MaxProblems || inv.Omitted < 0 ||
			(inv.Omitted > 0 && len(inv.Problems) != store.MaxProblems) {
			t.Fatalf("ParseBatch(%q) = %d problems, %d omitted; want 1..%d listed", body, len(inv.Problems), inv.Omitted, store.MaxProblems)
		}
		for _, p := range inv.Problems {
			if p.Message == "" {
				t.Fatalf("ParseBatch(%q) problem %+v has no message", body, p)
			}
		}
	default:
		t.Fatalf("ParseBatch(%q) = %v (%T); want a documented error", body, err, err)
	}
}

// checkReadBack compares a stored session with the batch that created it.
func checkReadBack(t *testing.T, b *store.Batch, d store.SessionDetail) {
	t.Helper()
	h := b.Session
	wantSource := h.Source
	if wantSource == "" {
		wantSource = "push:" + h.Agent.Kind
	}
	got := d.Session
	if got.ID != h.ID || got.Agent != h.Agent || got.Workspace != h.Workspace || got.StartedAt != h.StartedAt ||
		got.EndedAt != h.EndedAt || got.Source != wantSource || !reflect.DeepEqual(got.Metrics, h.Metrics) {
		t.Fatalf("Detail.Session = %+v; want the pushed header %+v", got, h)
	}

	steps := slices.Clone(b.Steps)
	slices.SortFunc(steps, func(x, y store.Step) int { return cmp.Compare(x.Seq, y.Seq) })
	if len(d.Steps) != len(steps) {
		t.Fatalf("Detail has %d steps; want %d", len(d.Steps), len(steps))
	}
	for i := range steps {
		if !reflect.DeepEqual(d.Steps[i], steps[i]) {
			t.Fatalf("Detail.Steps[%d] =\n%s\nwant\n%s", i, mustJSON(t, d.Steps[i]), mustJSON(t, steps[i]))
		}
	}

	segments := slices.Clone(b.Segments)
	slices.SortFunc(segments, func(x, y store.Segment) int { return cmp.Compare(x.Index, y.Index) })
	if !reflect.DeepEqual(d.Segments, orEmpty(segments)) {
		t.Fatalf("Detail.Segments = %+v; want %+v", d.Segments, segments)
	}

	byID := func(x, y store.Actor) int { return cmp.Compare(x.ID, y.ID) }
	actors, gotActors := slices.Clone(b.Actors), slices.Clone(d.Actors)
	slices.SortFunc(actors, byID)
	slices.SortFunc(gotActors, byID)
	if !reflect.DeepEqual(gotActors, orEmpty(actors)) {
		t.Fatalf("Detail.Actors = %+v; want %+v", gotActors, actors)
	}

	// step_ids is rebuilt from the steps in seq order.
	wantIDs := map[string][]string{}
	for _, st := range steps {
		wantIDs[st.TurnID] = append(wantIDs[st.TurnID], st.ID)
	}
	turns := slices.Clone(b.Turns)
	gotTurns := slices.Clone(d.Turns)
	turnByID := func(x, y store.Turn) int { return cmp.Compare(x.ID, y.ID) }
	slices.SortFunc(turns, turnByID)
	slices.SortFunc(gotTurns, turnByID)
	for i := range gotTurns {
		if ids := gotTurns[i].StepIDs; !slices.Equal(ids, wantIDs[gotTurns[i].ID]) || ids == nil {
			t.Fatalf("Detail turn %s step_ids = %v; want %v", gotTurns[i].ID, ids, wantIDs[gotTurns[i].ID])
		}
		gotTurns[i].StepIDs = nil
	}
	if !reflect.DeepEqual(gotTurns, orEmpty(turns)) {
		t.Fatalf("Detail.Turns = %+v; want %+v", gotTurns, turns)
	}
}

// orEmpty turns a nil slice (records left out of the batch) into the empty
// one Detail returns.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TestFuzzCorpus keeps the committed seeds meaningful: those named valid_*
// parse, apply and read back; the others are refused.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParseBatch")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%s) = %v", dir, err)
	}
	s := mustOpen(t)
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			head, lit, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
			quoted, ok := strings.CutPrefix(lit, "[]byte(")
			quoted, ok2 := strings.CutSuffix(quoted, ")")
			body, err := strconv.Unquote(quoted)
			if head != "go test fuzz v1" || !ok || !ok2 || err != nil {
				t.Fatalf("%s is not a go test fuzz v1 []byte entry: %v", e.Name(), err)
			}
			b, err := store.ParseBatch([]byte(body))
			valid := strings.HasPrefix(e.Name(), "valid_")
			switch {
			case valid && err != nil:
				t.Fatalf("ParseBatch(%s) = %v%s; want no error", e.Name(), err, problems(err))
			case !valid && err != nil:
				return
			}
			_, err = s.Apply(context.Background(), b)
			switch {
			case valid && err != nil:
				t.Fatalf("Apply(%s) = %v%s; want no error", e.Name(), err, problems(err))
			case !valid && err == nil:
				t.Fatalf("Apply(%s) = nil; want the batch refused", e.Name())
			case valid:
				checkReadBack(t, b, mustDetail(t, s, b.Session.ID))
			}
		})
	}
}

// FuzzApplyRoundTrip puts fuzzed text and numbers in every kind of field
// of a valid batch, so that Apply and the read back meet the values JSON
// and SQLite find hard (NUL, escapes, long text, extreme integers), which
// FuzzParseBatch rarely reaches through valid JSON.
func FuzzApplyRoundTrip(f *testing.F) {
	f.Add("ok", "go test ./...", int64(0), int64(1), false)
	f.Add("", "", int64(-1), int64(0), true)
	f.Add("a\x00b\u2028<script>&", "\xff\xfe", int64(math.MaxInt64), int64(math.MaxInt64), true)
	f.Add("line one\r\nline two", "{\"k\": [1, 2]}", int64(math.MinInt64), int64(1<<53), false)
	s := mustOpen(f)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, text, other string, i, j int64, full bool) {
		sid := fmt.Sprintf("rt%d-%s", n.Add(1), other) // the dash ends the counter: ids never collide
		b := newBatch(sid)
		seq := j
		if seq < 0 {
			seq = -(seq + 1)
		}
		set(b, "steps[1].seq", seq)
		if seq == 1 {
			set(b, "steps[0].seq", 0)
		}
		set(b, "steps[1].payload.stdout", text)
		set(b, "steps[1].payload.command", other)
		set(b, "steps[1].payload.exit_code", i)
		set(b, "steps[0].payload.text", text)
		set(b, "steps[2].payload.old_string", other)
		set(b, "steps[2].payload.new_string", text)
		set(b, "steps[2].payload.is_full_write", full)
		set(b, "steps[2].payload.structured_patch", obj{other: text, "n": i})
		set(b, "steps[3].payload.range", arr{i, j})
		set(b, "steps[4].payload.raw", obj{other: arr{text, i, full}})
		set(b, "steps[2].error.message", text)
		set(b, "turns[0].mode", text)
		set(b, "actors[0].label", other)
		set(b, "segments[0].source_files", arr{text, other})
		set(b, "session.workspace.repo", text)
		set(b, "session.metrics.api_requests", j)
		body := mustJSON(t, b)
		parsed, err := store.ParseBatch(body)
		if err != nil {
			checkParseError(t, body, err)
			return // empty strings where none may be, a negative count, ...
		}
		res, err := s.Apply(context.Background(), parsed)
		if err != nil {
			var re *store.ReferenceError
			if errors.As(err, &re) {
				return
			}
			t.Fatalf("Apply(%s) = %v%s; want no error", body, err, problems(err))
		}
		if !res.Created || !res.Changed {
			t.Fatalf("Apply(%s) = %+v; want Created and Changed", body, res)
		}
		checkReadBack(t, parsed, mustDetail(t, s, parsed.Session.ID))
		if res, err := s.Apply(context.Background(), parsed); err != nil || res.Changed {
			t.Fatalf("Apply(%s) again = %+v, %v; want nothing changed", body, res, err)
		}
	})
}
