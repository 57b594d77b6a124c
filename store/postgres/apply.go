package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// hostname is this server's machine, a new session's captured_on (as the
// SQLite store records the machine that wrote it).
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// Apply validates a batch (Batch.Validate) and writes it in one
// transaction, all or nothing, as the SQLite store does: it returns
// Validate's errors, a *store.DeletedError for a deleted session, a
// *store.ReferenceError when a record points at nothing, and a
// *store.ConflictError when a step seq is held by another step. A batch
// that matches what is stored writes nothing and moves no stamp.
func (s *Store) Apply(ctx context.Context, b *store.Batch) (store.ApplyResult, error) {
	if err := b.Validate(); err != nil {
		return store.ApplyResult{}, fmt.Errorf("store: apply batch: %w", store.Describe(err))
	}
	var res store.ApplyResult
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		res, err = applyBatch(ctx, tx, b)
		return err
	})
	if err != nil {
		return store.ApplyResult{}, fmt.Errorf("store: apply batch: %w", store.Describe(unstorable("", err)))
	}
	return res, nil
}

// unstorable gives PostgreSQL's refusal of a text value (a NUL character,
// which its text type cannot hold and SQLite's can) the kind of an invalid
// batch, verdict or note (subject, as InvalidError.Subject), so the writer
// gets a 400 with the reason rather than a 500.
func unstorable(subject string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "22021" || pe.Code == "22P05") { // character_not_in_repertoire, untranslatable_character
		return &store.InvalidError{Subject: subject, Problems: []store.Problem{{Path: "", Message: "text this server cannot store: " + pe.Message}}}
	}
	return err
}

// applyBatch writes a validated batch inside a write transaction: the
// checks (deleted, references, seqs), then the records (applyRecords).
func applyBatch(ctx context.Context, tx pgx.Tx, b *store.Batch) (store.ApplyResult, error) {
	res := store.ApplyResult{
		SessionID: b.Session.ID,
		Steps:     len(b.Steps), Turns: len(b.Turns), Segments: len(b.Segments), Actors: len(b.Actors),
	}
	var pk int64
	var deleted bool
	err := tx.QueryRow(ctx, `SELECT coalesce((SELECT pk FROM sessions WHERE id = $1), 0),
		  EXISTS (SELECT 1 FROM tombstones WHERE id = $1)`, b.Session.ID).Scan(&pk, &deleted)
	if err != nil {
		return res, err
	}
	if deleted {
		return res, &store.DeletedError{SessionID: b.Session.ID}
	}
	var stored store.RefLookup
	var groups map[string]storedStep
	if pk != 0 {
		refs, err := loadRefs(ctx, tx, pk, b)
		if err != nil {
			return res, err
		}
		stored, groups = refs, refs.groups
	}
	if err := store.CheckReferences(stored, b); err != nil {
		return res, err
	}
	if err := store.CheckSeqs(stored, b.Steps); err != nil {
		return res, err
	}
	res.Created = pk == 0
	res.Changed, res.StepsWritten, err = applyRecords(ctx, tx, pk, b, groups)
	return res, err
}

// pgRefs answers store.RefLookup from the stored records a batch points
// at, read up front in one round trip (loadRefs): a lookup per record
// would cost a round trip each.
type pgRefs struct {
	segments map[int64]bool
	actors   map[string]bool
	turns    map[string]bool
	seqs     map[int64]string
	groups   map[string]storedStep // by step id: the batch's steps already stored
}

func (r *pgRefs) Segment(i int64) (bool, error)       { return r.segments[i], nil }
func (r *pgRefs) Actor(id string) (bool, error)       { return r.actors[id], nil }
func (r *pgRefs) Turn(id string) (bool, error)        { return r.turns[id], nil }
func (r *pgRefs) SeqHolder(seq int64) (string, error) { return r.seqs[seq], nil }

// loadRefs reads which of the segments, actors, turns and seqs that b
// names the stored session pk has.
func loadRefs(ctx context.Context, tx pgx.Tx, pk int64, b *store.Batch) (*pgRefs, error) {
	var segments, seqs []int64
	var actors, turns, ids []string
	for _, a := range b.Actors {
		if a.ParentID != "" {
			actors = append(actors, a.ParentID)
		}
	}
	for _, t := range b.Turns {
		segments, actors = append(segments, t.SegmentIndex), append(actors, t.ActorID)
	}
	for _, st := range b.Steps {
		segments, actors, turns = append(segments, st.SegmentIndex), append(actors, st.ActorID), append(turns, st.TurnID)
		seqs, ids = append(seqs, st.Seq), append(ids, st.ID)
	}
	r := &pgRefs{segments: map[int64]bool{}, actors: map[string]bool{}, turns: map[string]bool{}, seqs: map[int64]string{},
		groups: map[string]storedStep{}}
	var q pgx.Batch
	q.Queue(`SELECT idx FROM segments WHERE session_pk = $1 AND idx = ANY($2)`, pk, segments).Query(func(rows pgx.Rows) error {
		var i int64
		_, err := pgx.ForEachRow(rows, []any{&i}, func() error { r.segments[i] = true; return nil })
		return err
	})
	q.Queue(`SELECT id FROM actors WHERE session_pk = $1 AND id = ANY($2)`, pk, actors).Query(func(rows pgx.Rows) error {
		var id string
		_, err := pgx.ForEachRow(rows, []any{&id}, func() error { r.actors[id] = true; return nil })
		return err
	})
	q.Queue(`SELECT id FROM turns WHERE session_pk = $1 AND id = ANY($2)`, pk, turns).Query(func(rows pgx.Rows) error {
		var id string
		_, err := pgx.ForEachRow(rows, []any{&id}, func() error { r.turns[id] = true; return nil })
		return err
	})
	q.Queue(`SELECT seq, id FROM steps WHERE session_pk = $1 AND seq = ANY($2)`, pk, seqs).Query(func(rows pgx.Rows) error {
		var seq int64
		var id string
		_, err := pgx.ForEachRow(rows, []any{&seq, &id}, func() error { r.seqs[seq] = id; return nil })
		return err
	})
	q.Queue(`SELECT id, type, outcome = 'failed', content_status = 'reference_only', flag_count FROM steps
		WHERE session_pk = $1 AND id = ANY($2)`, pk, ids).Query(func(rows pgx.Rows) error {
		var id string
		var g storedStep
		_, err := pgx.ForEachRow(rows, []any{&id, &g.group.typ, &g.group.failed, &g.group.referenceOnly, &g.flags},
			func() error { r.groups[id] = g; return nil })
		return err
	})
	return r, tx.SendBatch(ctx, &q).Close()
}

// applyRecords upserts the session and its records, stamping the session
// only if some row actually changed; written counts the steps that did.
// stored has the groups of the batch's steps already stored (loadRefs),
// for the session's step counts (tallies): a batch names each step once
// (CheckReferences), so that is each step's group before its upsert.
func applyRecords(ctx context.Context, tx pgx.Tx, pk int64, b *store.Batch, stored map[string]storedStep) (changed bool, written int, err error) {
	stamp, err := nextStamp(ctx, tx)
	if err != nil {
		return false, 0, err
	}
	if pk == 0 {
		if pk, err = insertSession(ctx, tx, &b.Session, b.Owner, stamp); err != nil {
			return false, 0, err
		}
		changed = true
	} else if changed, err = updateSession(ctx, tx, pk, &b.Session); err != nil {
		return false, 0, err
	}
	// Every record in one round trip: the statements run in order, as
	// SQLite's do, each an upsert that writes only what differs.
	var q pgx.Batch
	upserted := func(cmd pgconn.CommandTag) error {
		changed = changed || cmd.RowsAffected() > 0
		return nil
	}
	for i := range b.Segments {
		queueSegment(&q, pk, &b.Segments[i]).Exec(upserted)
	}
	for i := range b.Actors {
		queueActor(&q, pk, &b.Actors[i]).Exec(upserted)
	}
	for i := range b.Turns {
		queueTurn(&q, pk, &b.Turns[i], stamp).Exec(upserted)
	}
	counts := tallies{}
	docs := make([]store.StepDoc, len(b.Steps)) // what each indexes (indexWrite)
	for i := range b.Steps {
		st := &b.Steps[i]
		qq, doc, err := queueStep(&q, pk, st, stamp)
		if err != nil {
			return false, 0, err
		}
		docs[i] = doc
		qq.Exec(func(cmd pgconn.CommandTag) error {
			if cmd.RowsAffected() > 0 {
				written++
				if g, ok := stored[st.ID]; ok { // the step leaves the group it was counted in
					counts.add(g.group, -1, -g.flags)
				}
				counts.add(tallyGroup{st.Type, st.Outcome == "failed", st.ContentStatus == "reference_only"}, 1, int64(len(st.Flags)))
			}
			return upserted(cmd)
		})
	}
	hours, removed := store.UsageHours{}, false
	for i := range b.Usage {
		queueUsage(&q, pk, &b.Usage[i], stamp, hours, &removed, upserted)
	}
	if err := tx.SendBatch(ctx, &q).Close(); err != nil {
		return false, 0, err
	}
	if err := writeUsageHours(ctx, tx, pk, hours, removed); err != nil {
		return false, 0, err
	}
	if err := counts.write(ctx, tx, pk); err != nil {
		return false, 0, err
	}
	if changed = changed || removed; !changed {
		return false, 0, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = $1 WHERE pk = $2`, stamp, pk); err != nil {
		return false, 0, err
	}
	if err := indexWrite(ctx, tx, pk, b, docs, stamp); err != nil { // search_index.go
		return false, 0, err
	}
	return true, written, commitStamp(ctx, tx, stamp)
}

func insertSession(ctx context.Context, tx pgx.Tx, h *store.SessionHeader, owner string, stamp int64) (int64, error) {
	if owner == "" {
		owner = store.OwnerLocal
	}
	source := h.Source
	if source == "" {
		source = "push:" + h.Agent.Kind
	}
	started, _ := store.ParseTimestamp(h.StartedAt)
	metrics, err := store.MetricsJSON(h.Metrics)
	if err != nil {
		return 0, err
	}
	var pk int64
	err = tx.QueryRow(ctx, `INSERT INTO sessions (id, agent_kind, agent_version, agent_format_version,
		  workspace_root, workspace_repo, started_at, started_ns, ended_at, source, metrics, owner_id, captured_on, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING pk`,
		h.ID, h.Agent.Kind, h.Agent.Version, store.Nullable(h.Agent.FormatVersion),
		h.Workspace.Root, store.Nullable(h.Workspace.Repo), h.StartedAt, store.StartedNS(started), store.Nullable(h.EndedAt),
		source, metrics, owner, hostname(), stamp).Scan(&pk)
	return pk, err
}

// updateSession writes the header of a stored session: kind, version,
// workspace root and start on every push; the optional fields only when the
// batch has them, so a steps-only push never resets cost or reopens a session.
func updateSession(ctx context.Context, tx pgx.Tx, pk int64, h *store.SessionHeader) (bool, error) {
	started, _ := store.ParseTimestamp(h.StartedAt)
	metrics, err := store.MetricsJSON(h.Metrics)
	if err != nil {
		return false, err
	}
	cmd, err := tx.Exec(ctx, `UPDATE sessions SET
		  agent_kind = $2, agent_version = $3, workspace_root = $4, started_at = $5, started_ns = $6,
		  agent_format_version = coalesce($7, agent_format_version),
		  workspace_repo = coalesce($8, workspace_repo),
		  ended_at = coalesce($9, ended_at),
		  source = coalesce($10, source),
		  metrics = coalesce($11, metrics)
		WHERE pk = $1 AND (agent_kind, agent_version, workspace_root, started_at,
		    agent_format_version, workspace_repo, ended_at, source, metrics)
		  IS DISTINCT FROM ($2, $3, $4, $5,
		    coalesce($7, agent_format_version), coalesce($8, workspace_repo), coalesce($9, ended_at),
		    coalesce($10, source), coalesce($11, metrics))`,
		pk, h.Agent.Kind, h.Agent.Version, h.Workspace.Root, h.StartedAt, store.StartedNS(started),
		store.Nullable(h.Agent.FormatVersion), store.Nullable(h.Workspace.Repo), store.Nullable(h.EndedAt),
		store.Nullable(h.Source), metrics)
	return cmd.RowsAffected() > 0, err
}

func queueSegment(q *pgx.Batch, pk int64, g *store.Segment) *pgx.QueuedQuery {
	return q.Queue(`INSERT INTO segments AS t (session_pk, idx, start_reason, started_at, ended_at, source_files)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (session_pk, idx) DO UPDATE SET
		  start_reason = excluded.start_reason, started_at = excluded.started_at,
		  ended_at = excluded.ended_at, source_files = excluded.source_files
		WHERE (t.start_reason, t.started_at, t.ended_at, t.source_files)
		  IS DISTINCT FROM (excluded.start_reason, excluded.started_at, excluded.ended_at, excluded.source_files)`,
		pk, g.Index, g.StartReason, g.StartedAt, store.Nullable(g.EndedAt), store.SourceFilesJSON(g.SourceFiles))
}

func queueActor(q *pgx.Batch, pk int64, a *store.Actor) *pgx.QueuedQuery {
	return q.Queue(`INSERT INTO actors AS t (session_pk, id, parent_id, type, label) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (session_pk, id) DO UPDATE SET
		  parent_id = excluded.parent_id, type = excluded.type, label = excluded.label
		WHERE (t.parent_id, t.type, t.label) IS DISTINCT FROM (excluded.parent_id, excluded.type, excluded.label)`,
		pk, a.ID, store.Nullable(a.ParentID), a.Type, store.Nullable(a.Label))
}

func queueTurn(q *pgx.Batch, pk int64, t *store.Turn, stamp int64) *pgx.QueuedQuery {
	return q.Queue(`INSERT INTO turns AS t (session_pk, id, segment_index, actor_id, idx, prompt_id, mode, started_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (session_pk, id) DO UPDATE SET
		  segment_index = excluded.segment_index, actor_id = excluded.actor_id, idx = excluded.idx,
		  prompt_id = excluded.prompt_id, mode = excluded.mode, started_at = excluded.started_at,
		  updated_at = excluded.updated_at
		WHERE (t.segment_index, t.actor_id, t.idx, t.prompt_id, t.mode, t.started_at)
		  IS DISTINCT FROM (excluded.segment_index, excluded.actor_id, excluded.idx, excluded.prompt_id, excluded.mode, excluded.started_at)`,
		pk, t.ID, t.SegmentIndex, t.ActorID, t.Index, store.Nullable(t.PromptID), store.Nullable(t.Mode), t.StartedAt, stamp)
}

// upsertStepSQL is SQLite's step upsert (store/apply.go) in PostgreSQL's
// words: the same columns, and a row is written only when one differs.
// Two steps swapping seqs in one batch would meet the unique seq on the
// way (as on SQLite); CheckSeqs refuses the stored half of that first.
const upsertStepSQL = `INSERT INTO steps AS t (session_pk, id, seq, segment_index, turn_id, actor_id, at, type,
	  decision, outcome, content_status, role, flag_count, error, channels, flags, updated_at, payload,
	  stdout, stderr, text, old_string, new_string, command_files, tool_name)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
	ON CONFLICT (session_pk, id) DO UPDATE SET
	  seq = excluded.seq, segment_index = excluded.segment_index, turn_id = excluded.turn_id,
	  actor_id = excluded.actor_id, at = excluded.at, type = excluded.type, decision = excluded.decision,
	  outcome = excluded.outcome, content_status = excluded.content_status, role = excluded.role,
	  flag_count = excluded.flag_count, error = excluded.error, channels = excluded.channels,
	  flags = excluded.flags, updated_at = excluded.updated_at, payload = excluded.payload, stdout = excluded.stdout,
	  stderr = excluded.stderr, text = excluded.text, old_string = excluded.old_string, new_string = excluded.new_string,
	  command_files = excluded.command_files, tool_name = excluded.tool_name
	WHERE (t.seq, t.segment_index, t.turn_id, t.actor_id, t.at, t.type, t.decision, t.outcome, t.content_status, t.role,
	       t.error, t.channels, t.flags, t.payload, t.stdout, t.stderr, t.text, t.old_string, t.new_string)
	  IS DISTINCT FROM (excluded.seq, excluded.segment_index, excluded.turn_id, excluded.actor_id, excluded.at,
	       excluded.type, excluded.decision, excluded.outcome, excluded.content_status, excluded.role,
	       excluded.error, excluded.channels, excluded.flags, excluded.payload, excluded.stdout,
	       excluded.stderr, excluded.text, excluded.old_string, excluded.new_string)`

// tallies is what a batch adds to its session's step counts (migration
// 008, step_tallies), by group: how many steps and flags.
type tallies map[tallyGroup]*[2]int64

// tallyGroup is a group of steps the list counts (store.StepCount).
type tallyGroup struct {
	typ                   string
	failed, referenceOnly bool
}

// storedStep is the group a stored step is counted in, and its flags.
type storedStep struct {
	group tallyGroup
	flags int64
}

// add counts steps steps (-1: one leaves the group) with flags flags.
func (t tallies) add(g tallyGroup, steps, flags int64) {
	if t[g] == nil {
		t[g] = new([2]int64)
	}
	t[g][0] += steps
	t[g][1] += flags
}

// write adds the counts to step_tallies and drops the groups left empty.
func (t tallies) write(ctx context.Context, tx pgx.Tx, pk int64) error {
	var types []string
	var failed, refer []bool
	var steps, flags []int64
	emptied := false
	for g, n := range t {
		if n[0] == 0 && n[1] == 0 {
			continue
		}
		types, failed, refer = append(types, g.typ), append(failed, g.failed), append(refer, g.referenceOnly)
		steps, flags = append(steps, n[0]), append(flags, n[1])
		emptied = emptied || n[0] < 0
	}
	if len(types) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO step_tallies AS t (session_pk, type, failed, reference_only, steps, flags)
		SELECT $1, * FROM unnest($2::text[], $3::boolean[], $4::boolean[], $5::bigint[], $6::bigint[])
		ON CONFLICT (session_pk, type, failed, reference_only) DO UPDATE
		  SET steps = t.steps + excluded.steps, flags = t.flags + excluded.flags`,
		pk, types, failed, refer, steps, flags)
	if err == nil && emptied {
		_, err = tx.Exec(ctx, `DELETE FROM step_tallies WHERE session_pk = $1 AND steps = 0`, pk)
	}
	return err
}

// queueStep queues the upsert of a step and returns what the step
// indexes, from the same split (StepColumns.Doc).
func queueStep(q *pgx.Batch, pk int64, st *store.Step, stamp int64) (*pgx.QueuedQuery, store.StepDoc, error) {
	r, err := store.SplitStep(st)
	if err != nil {
		return nil, store.StepDoc{}, err
	}
	p := &st.Payload
	return q.Queue(upsertStepSQL, pk, st.ID, st.Seq, st.SegmentIndex, st.TurnID, st.ActorID, st.At, st.Type,
		st.Decision, st.Outcome, st.ContentStatus, store.Nullable(p.Role), int64(len(st.Flags)), store.Nullable(r.ErrorJSON),
		r.Channels, r.Flags, stamp, r.Payload, p.Stdout, p.Stderr, p.Text, p.OldString, p.NewString, store.Nullable(r.CommandFiles),
		store.Nullable(r.ToolName)), r.Doc(st), nil
}

// queueUsage writes one usage record as SQLite's writeUsage does: a
// changed record is deleted and inserted again, never updated in place,
// and what it takes from and adds to usage_hours is added up in hours.
func queueUsage(q *pgx.Batch, pk int64, r *store.UsageRecord, stamp int64, hours store.UsageHours, removed *bool, upserted func(pgconn.CommandTag) error) {
	atNS, requests := r.Normalized()
	q.Queue(`DELETE FROM usage_records WHERE session_pk = $1 AND id = $2
		AND (at, model, actor_id, turn_id, input, output, cache_read, cache_creation, requests, cost_usd, source, cache_creation_1h)
		  IS DISTINCT FROM ($3::text, $4::text, $5::text, $6::text, $7::bigint, $8::bigint, $9::bigint, $10::bigint,
		    $11::bigint, $12::double precision, $13::text, $14::bigint)
		RETURNING at_ns, model, input, output, cache_read, cache_creation, requests, cost_usd, source, cache_creation_1h`,
		pk, r.ID, r.At, r.Model, r.ActorID, r.TurnID, r.Tokens.Input, r.Tokens.Output, r.Tokens.CacheRead,
		r.Tokens.CacheCreation, requests, r.CostUSD, r.Source, r.Tokens.CacheCreation1h).Query(func(rows pgx.Rows) error {
		var old struct {
			atNS, requests int64
			model, source  string
			tokens         pricing.Tokens
			cost           *float64
		}
		_, err := pgx.ForEachRow(rows, []any{&old.atNS, &old.model, &old.tokens.Input, &old.tokens.Output,
			&old.tokens.CacheRead, &old.tokens.CacheCreation, &old.requests, &old.cost, &old.source, &old.tokens.CacheCreation1h}, func() error {
			hours.Add(old.atNS, old.model, old.tokens, old.source, old.requests, old.cost, -1)
			*removed = true
			return nil
		})
		return err
	})
	q.Queue(`INSERT INTO usage_records (session_pk, id, at, at_ns, model, actor_id, turn_id,
		  input, output, cache_read, cache_creation, requests, cost_usd, source, updated_at, cache_creation_1h)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING`,
		pk, r.ID, r.At, atNS, r.Model, r.ActorID, r.TurnID, r.Tokens.Input, r.Tokens.Output, r.Tokens.CacheRead,
		r.Tokens.CacheCreation, requests, r.CostUSD, r.Source, stamp, r.Tokens.CacheCreation1h).Exec(func(cmd pgconn.CommandTag) error {
		if cmd.RowsAffected() > 0 {
			hours.Add(atNS, r.Model, r.Tokens, r.Source, requests, r.CostUSD, 1)
		}
		return upserted(cmd)
	})
}

// writeUsageHours adds a batch's usage to usage_hours, one statement per
// row in a fixed order, and drops rows its removals emptied.
func writeUsageHours(ctx context.Context, tx pgx.Tx, pk int64, hours store.UsageHours, removed bool) error {
	if len(hours) == 0 {
		return nil
	}
	var q pgx.Batch
	for _, k := range hours.Keys() {
		h := hours[k]
		q.Queue(`INSERT INTO usage_hours AS h (session_pk, hour_ns, model, prompt_range, source, reported,
			  input, output, cache_read, cache_creation, requests, cost_usd, last_ns, cache_creation_1h)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (session_pk, hour_ns, model, prompt_range, source, reported) DO UPDATE SET
			  input = h.input + excluded.input, output = h.output + excluded.output,
			  cache_read = h.cache_read + excluded.cache_read, cache_creation = h.cache_creation + excluded.cache_creation,
			  cache_creation_1h = h.cache_creation_1h + excluded.cache_creation_1h,
			  requests = h.requests + excluded.requests, cost_usd = h.cost_usd + excluded.cost_usd,
			  last_ns = greatest(h.last_ns, excluded.last_ns)`,
			pk, k.HourNS, k.Model, k.PromptRange, k.Source, k.Reported,
			h.Input, h.Output, h.CacheRead, h.CacheCreation, h.Requests, h.Cost, h.LastNS, h.CacheCreation1h)
	}
	if removed {
		q.Queue(`DELETE FROM usage_hours WHERE session_pk = $1 AND requests <= 0`, pk)
	}
	return tx.SendBatch(ctx, &q).Close()
}
