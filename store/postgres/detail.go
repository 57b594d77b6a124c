package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// Detail returns a session, whole or narrowed by q, as the SQLite store's
// Detail, or store.ErrNotFound (also for a deleted one). The summary and
// report always cover the whole session.
func (s *Store) Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error) {
	var d store.SessionDetail
	err := s.read(ctx, func(tx pgx.Tx) error {
		if !storable(id) {
			return store.ErrNotFound
		}
		pk, o, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		d.SessionOverview = o
		t, ok, err := s.tally(ctx, tx, pk)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		t.Summary(&d.Summary)
		d.Report = t.Report()
		if d.Notes, err = readNotes(ctx, tx, pk); err != nil {
			return err
		}
		if d.Usage, err = t.Usage(func(after int64) ([]store.UsageRecord, error) { return usageWrittenAfter(ctx, tx, pk, after) }); err != nil {
			return err
		}
		if d.Segments, err = readSegments(ctx, tx, pk); err != nil {
			return err
		}
		if d.Actors, err = readActors(ctx, tx, pk); err != nil {
			return err
		}
		if d.Turns, d.Window, err = readTurns(ctx, tx, pk, id, q); err != nil {
			return err
		}
		d.Report.Turns = t.TurnProblems(d.Turns)
		d.Steps, d.Gaps, err = readSteps(ctx, tx, pk, id, q, d.Turns)
		return err
	})
	if err != nil {
		return store.SessionDetail{}, fmt.Errorf("store: read session %s: %w", id, err)
	}
	return d, nil
}

func readNotes(ctx context.Context, tx pgx.Tx, pk int64) ([]store.Note, error) {
	out := []store.Note{}
	rows, _ := tx.Query(ctx, `SELECT n.id, p.seq, n.author, n.text, n.created_at, n.updated_at
		FROM notes n JOIN steps p ON p.pk = n.step_pk WHERE n.session_pk = $1 ORDER BY p.seq, n.id`, pk)
	var n store.Note
	_, err := pgx.ForEachRow(rows, []any{&n.ID, &n.Seq, &n.Author, &n.Text, &n.CreatedAt, &n.UpdatedAt},
		func() error { out = append(out, n); return nil })
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	return out, nil
}

// usageWrittenAfter reads session pk's usage records written after stamp
// after (all of them after 0), in any order (store.Tally.Usage).
func usageWrittenAfter(ctx context.Context, tx pgx.Tx, pk, after int64) ([]store.UsageRecord, error) {
	var recs []store.UsageRecord
	rows, _ := tx.Query(ctx, `SELECT id, at, model, input, output, cache_read, cache_creation, cost_usd, source, requests, turn_id,
		  cache_creation_1h
		FROM usage_records WHERE session_pk = $1 AND updated_at > $2`, pk, after)
	var (
		r   store.UsageRecord
		tok pricing.Tokens
	)
	_, err := pgx.ForEachRow(rows, []any{&r.ID, &r.At, &r.Model, &tok.Input, &tok.Output, &tok.CacheRead, &tok.CacheCreation,
		&r.CostUSD, &r.Source, &r.Requests, &r.TurnID, &tok.CacheCreation1h}, func() error {
		r.Tokens = tok
		recs = append(recs, r)
		r.CostUSD = nil // the next row scans into a new value
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return recs, nil
}

func readSegments(ctx context.Context, tx pgx.Tx, pk int64) ([]store.Segment, error) {
	out := []store.Segment{}
	rows, _ := tx.Query(ctx, `SELECT idx, start_reason, started_at, coalesce(ended_at, ''), source_files
		FROM segments WHERE session_pk = $1 ORDER BY idx`, pk)
	var (
		g     store.Segment
		files string
	)
	_, err := pgx.ForEachRow(rows, []any{&g.Index, &g.StartReason, &g.StartedAt, &g.EndedAt, &files}, func() error {
		g.SourceFiles = nil
		if err := json.Unmarshal([]byte(files), &g.SourceFiles); err != nil {
			return fmt.Errorf("segment %d source files: %w", g.Index, err)
		}
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("segments: %w", err)
	}
	return out, nil
}

func readActors(ctx context.Context, tx pgx.Tx, pk int64) ([]store.Actor, error) {
	out := []store.Actor{}
	rows, _ := tx.Query(ctx, `SELECT id, coalesce(parent_id, ''), type, coalesce(label, '') FROM actors
		WHERE session_pk = $1 ORDER BY parent_id IS NOT NULL, id COLLATE "C"`, pk)
	var a store.Actor
	_, err := pgx.ForEachRow(rows, []any{&a.ID, &a.ParentID, &a.Type, &a.Label}, func() error { out = append(out, a); return nil })
	if err != nil {
		return nil, fmt.Errorf("actors: %w", err)
	}
	return out, nil
}

// readTurns reads the turns q asks for, in order (store.DetailQuery.Narrow).
// step_ids are filled by readSteps.
func readTurns(ctx context.Context, tx pgx.Tx, pk int64, sid string, q store.DetailQuery) ([]store.Turn, *store.TurnWindow, error) {
	var changed map[string]bool
	if q.Since > 0 {
		changed = map[string]bool{}
		rows, _ := tx.Query(ctx, `SELECT id FROM turns WHERE session_pk = $1 AND updated_at > $2
			UNION SELECT turn_id FROM steps WHERE session_pk = $1 AND updated_at > $2`, pk, q.Since)
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { changed[id] = true; return nil }); err != nil {
			return nil, nil, fmt.Errorf("changed turns: %w", err)
		}
	}
	all := []store.Turn{}
	rows, _ := tx.Query(ctx, `SELECT id, segment_index, actor_id, idx, coalesce(prompt_id, ''), coalesce(mode, ''), started_at
		FROM turns WHERE session_pk = $1 ORDER BY idx, started_at COLLATE "C", id COLLATE "C"`, pk)
	t := store.Turn{SessionID: sid}
	_, err := pgx.ForEachRow(rows, []any{&t.ID, &t.SegmentIndex, &t.ActorID, &t.Index, &t.PromptID, &t.Mode, &t.StartedAt}, func() error {
		t.StepIDs = []string{}
		all = append(all, t)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("turns: %w", err)
	}
	var around string
	if q.AroundTurn() {
		err := tx.QueryRow(ctx, `SELECT turn_id FROM steps WHERE session_pk = $1 AND seq = $2`, pk, q.Around).Scan(&around)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("the turn of step %d: %w", q.Around, err)
		}
	}
	out, w := q.Narrow(all, changed, around)
	return out, w, nil
}

// readSteps reads the steps of the given turns (all of them for a whole
// read, a window of each for a windowed one, the one step of q.Seq) in
// seq order, and fills the turns' step_ids.
func readSteps(ctx context.Context, tx pgx.Tx, pk int64, sid string, q store.DetailQuery, turns []store.Turn) ([]store.Step, []store.StepGap, error) {
	out := []store.Step{}
	if q.NoSteps {
		return out, nil, nil
	}
	byTurn := make(map[string]*store.Turn, len(turns))
	ids := make([]string, len(turns))
	for i := range turns {
		byTurn[turns[i].ID] = &turns[i]
		ids[i] = turns[i].ID
	}
	args := []any{pk}
	head := ""
	if q.Head > 0 {
		args = append(args, q.Head)
		head = "$2"
	}
	where := "session_pk = $1"
	var gaps []store.StepGap
	switch {
	case q.Seq != nil:
		args = append(args, *q.Seq)
		where += fmt.Sprintf(" AND seq = $%d", len(args))
	case q.Windowed():
		seqs, err := turnSeqs(ctx, tx, pk, q, ids)
		if err != nil {
			return nil, nil, err
		}
		var keep []int64
		keep, gaps = q.StepWindow(turns, seqs)
		if err := gapTimes(ctx, tx, pk, gaps); err != nil {
			return nil, nil, err
		}
		args = append(args, keep)
		where += fmt.Sprintf(" AND seq = ANY($%d)", len(args))
	case !q.Whole():
		args = append(args, ids)
		where += fmt.Sprintf(" AND turn_id = ANY($%d)", len(args))
	}
	rows, _ := tx.Query(ctx, `SELECT `+stepColumns(head)+` FROM steps WHERE `+where+` ORDER BY seq`, args...)
	defer rows.Close()
	for rows.Next() {
		r, err := scanStepRow(rows)
		if err != nil {
			return nil, nil, err
		}
		st, err := r.Step(sid)
		if err != nil {
			return nil, nil, err
		}
		if t := byTurn[st.TurnID]; t != nil {
			t.StepIDs = append(t.StepIDs, st.ID)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("steps: %w", err)
	}
	return out, gaps, nil
}

// gapTimes gives each gap the time of its first step (store.StepGap.FirstAt).
func gapTimes(ctx context.Context, tx pgx.Tx, pk int64, gaps []store.StepGap) error {
	if len(gaps) == 0 {
		return nil
	}
	at := make(map[int64]string, len(gaps))
	rows, _ := tx.Query(ctx, `SELECT seq, at FROM steps WHERE session_pk = $1 AND seq = ANY($2)`, pk, store.GapFirsts(gaps))
	var (
		seq int64
		t   string
	)
	if _, err := pgx.ForEachRow(rows, []any{&seq, &t}, func() error { at[seq] = t; return nil }); err != nil {
		return fmt.Errorf("times of gaps: %w", err)
	}
	store.SetFirstAt(gaps, at)
	return nil
}

// turnSeqs are the seqs of the steps of the turns ids between
// q.StepsAfter and q.StepsBefore (store.DetailQuery.SeqBounds), by turn:
// what store.DetailQuery.StepWindow chooses from (and sorts if need be).
// They come from steps_by_turn alone, without an ORDER BY, which would sort
// every row.
func turnSeqs(ctx context.Context, tx pgx.Tx, pk int64, q store.DetailQuery, ids []string) (map[string][]int64, error) {
	after, before := q.SeqBounds()
	seqs := make(map[string][]int64, len(ids))
	rows, _ := tx.Query(ctx, `SELECT turn_id, seq FROM steps WHERE session_pk = $1 AND turn_id = ANY($2) AND seq > $3 AND seq < $4`,
		pk, ids, after, before)
	var (
		id  string
		seq int64
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error { seqs[id] = append(seqs[id], seq); return nil })
	if err != nil {
		return nil, fmt.Errorf("turn steps: %w", err)
	}
	return seqs, nil
}
