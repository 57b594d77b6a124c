package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// ApplyResult tells what one batch did. The counts are for the batch, not
// session totals.
type ApplyResult struct {
	SessionID string `json:"session_id"`
	Created   bool   `json:"created"`
	Steps     int    `json:"steps"`
	Turns     int    `json:"turns"`
	Segments  int    `json:"segments"`
	Actors    int    `json:"actors"`
	// Changed is false when the batch matched what was stored and nothing
	// was written: no new change stamp, no change event.
	Changed bool `json:"-"`
	// StepsWritten is how many of the batch's steps were new or differed
	// from what was stored.
	StepsWritten int `json:"-"`
}

// Apply validates a batch (Validate) and writes it in one transaction, all
// or nothing. It returns Validate's errors, a *DeletedError for a deleted
// session, a *ReferenceError when a record points at nothing, and a
// *ConflictError when a step seq is held by another step.
func (s *Store) Apply(ctx context.Context, b *Batch) (ApplyResult, error) {
	if err := b.Validate(); err != nil {
		return ApplyResult{}, fmt.Errorf("store: apply batch: %w", Describe(err))
	}
	var res ApplyResult
	err := s.write(ctx, func(conn *sqlite.Conn) (err error) {
		res, err = s.applyBatch(ctx, conn, b)
		return err
	})
	if err != nil {
		return ApplyResult{}, fmt.Errorf("store: apply batch: %w", Describe(err))
	}
	if res.Changed {
		s.indexLater() // search_index.go
	}
	return res, nil
}

// applyBatch writes a validated batch inside a write transaction: the
// checks (deleted, references, seqs), then the records (applyRecords).
func (s *Store) applyBatch(ctx context.Context, conn *sqlite.Conn, b *Batch) (ApplyResult, error) {
	res := batchResult(b)
	if deleted, err := isDeleted(conn, b.Session.ID); err != nil || deleted {
		if deleted {
			return res, &DeletedError{SessionID: b.Session.ID}
		}
		return res, err
	}
	pk, err := sessionPK(conn, b.Session.ID)
	if err != nil {
		return res, err
	}
	stored := storedRefs(conn, pk)
	if err := CheckReferences(stored, b); err != nil {
		return res, err
	}
	if err := CheckSeqs(stored, b.Steps); err != nil {
		return res, err
	}
	// A batch that may change rows the search index holds takes the
	// index's lock and removes their old text (search_index.go); the live
	// case, new steps, leaves the index to the catch-up alone.
	replaces, err := replacesIndexedRows(conn, pk, b)
	if err != nil {
		return res, err
	}
	if replaces {
		if err := s.holdIndex(ctx, conn); err != nil {
			return res, err
		}
		if err := keepIndexedText(conn, pk, b); err != nil {
			return res, err
		}
	}
	res.Created = pk == 0
	res.Changed, res.StepsWritten, err = s.applyRecords(conn, &pk, b)
	if err != nil || !replaces {
		return res, err
	}
	return res, removeReplacedText(conn)
}

// batchResult is a batch's ApplyResult before it is written: its
// session and how many records of each kind it holds.
func batchResult(b *Batch) ApplyResult {
	return ApplyResult{
		SessionID: b.Session.ID,
		Steps:     len(b.Steps), Turns: len(b.Turns), Segments: len(b.Segments), Actors: len(b.Actors),
	}
}

func isDeleted(conn *sqlite.Conn, id string) (bool, error) {
	found := false
	err := sqlitex.Execute(conn, `SELECT 1 FROM tombstones WHERE id = ?`, &sqlitex.ExecOptions{
		Args:       []any{id},
		ResultFunc: func(*sqlite.Stmt) error { found = true; return nil },
	})
	return found, err
}

// sessionPK returns the row key of a stored session, or 0.
func sessionPK(conn *sqlite.Conn, id string) (int64, error) {
	var pk int64
	err := sqlitex.Execute(conn, `SELECT pk FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
		Args:       []any{id},
		ResultFunc: func(st *sqlite.Stmt) error { pk = st.ColumnInt64(0); return nil },
	})
	return pk, err
}

// applyRecords upserts the session and its records, stamping the session
// only if some row actually changed; written counts the steps that did.
func (s *Store) applyRecords(conn *sqlite.Conn, pk *int64, b *Batch) (changed bool, written int, err error) {
	stamp, err := nextStamp(conn)
	if err != nil {
		return false, 0, err
	}
	if *pk == 0 {
		if *pk, err = s.insertSession(conn, &b.Session, b.Owner, stamp); err != nil {
			return false, 0, err
		}
		changed = true
	} else if changed, err = updateSession(conn, *pk, &b.Session); err != nil {
		return false, 0, err
	}
	return writeRecords(conn, *pk, b, stamp, changed, 0)
}

// writeRecords upserts a batch's segments, actors, turns, its steps from
// the from'th on (ApplyParsing wrote the ones before) and its usage, then
// stamps the session if anything changed (changed says the session's row
// did); written counts the steps that did.
func writeRecords(conn *sqlite.Conn, pk int64, b *Batch, stamp int64, changed bool, from int) (_ bool, written int, err error) {
	for i := range b.Segments {
		c, err := upsertSegment(conn, pk, &b.Segments[i])
		if err != nil {
			return false, 0, err
		}
		changed = changed || c
	}
	for i := range b.Actors {
		c, err := upsertActor(conn, pk, &b.Actors[i])
		if err != nil {
			return false, 0, err
		}
		changed = changed || c
	}
	for i := range b.Turns {
		c, err := upsertTurn(conn, pk, &b.Turns[i], stamp)
		if err != nil {
			return false, 0, err
		}
		changed = changed || c
	}
	for i := from; i < len(b.Steps); i++ {
		c, err := upsertStep(conn, pk, &b.Steps[i], stamp)
		if err != nil {
			return false, 0, err
		}
		if c {
			written++
		}
		changed = changed || c
	}
	c, err := writeUsage(conn, pk, b.Usage, stamp) // usage.go
	if err != nil {
		return false, 0, err
	}
	changed = changed || c
	if !changed {
		return false, 0, nil
	}
	return true, written, sqlitex.Execute(conn, `UPDATE sessions SET updated_at = ? WHERE pk = ?`, &sqlitex.ExecOptions{Args: []any{stamp, pk}})
}

func (s *Store) insertSession(conn *sqlite.Conn, h *SessionHeader, owner string, stamp int64) (int64, error) {
	if owner == "" {
		owner = OwnerLocal
	}
	source := h.Source
	if source == "" {
		source = "push:" + h.Agent.Kind
	}
	started, _ := ParseTimestamp(h.StartedAt)
	metrics, err := MetricsJSON(h.Metrics)
	if err != nil {
		return 0, err
	}
	err = sqlitex.Execute(conn, `INSERT INTO sessions (id, agent_kind, agent_version, agent_format_version,
		workspace_root, workspace_repo, started_at, started_ns, ended_at, source, metrics, owner_id, captured_on, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, &sqlitex.ExecOptions{Args: []any{
		h.ID, h.Agent.Kind, h.Agent.Version, Nullable(h.Agent.FormatVersion),
		h.Workspace.Root, Nullable(h.Workspace.Repo), h.StartedAt, StartedNS(started), Nullable(h.EndedAt),
		source, metrics, owner, s.capturedOn, stamp,
	}})
	return conn.LastInsertRowID(), err
}

// updateSession writes the header of a stored session: kind, version,
// workspace root and start on every push; the optional fields only when the
// batch has them, so a steps-only push never resets cost or reopens a session.
func updateSession(conn *sqlite.Conn, pk int64, h *SessionHeader) (bool, error) {
	started, _ := ParseTimestamp(h.StartedAt)
	metrics, err := MetricsJSON(h.Metrics)
	if err != nil {
		return false, err
	}
	err = sqlitex.Execute(conn, `UPDATE sessions SET
		  agent_kind = :kind, agent_version = :version, workspace_root = :root,
		  started_at = :started, started_ns = :started_ns,
		  agent_format_version = coalesce(:format, agent_format_version),
		  workspace_repo = coalesce(:repo, workspace_repo),
		  ended_at = coalesce(:ended, ended_at),
		  source = coalesce(:source, source),
		  metrics = coalesce(:metrics, metrics)
		WHERE pk = :pk AND NOT (
		  agent_kind IS :kind AND agent_version IS :version AND workspace_root IS :root
		  AND started_at IS :started
		  AND agent_format_version IS coalesce(:format, agent_format_version)
		  AND workspace_repo IS coalesce(:repo, workspace_repo)
		  AND ended_at IS coalesce(:ended, ended_at)
		  AND source IS coalesce(:source, source)
		  AND metrics IS coalesce(:metrics, metrics))`,
		&sqlitex.ExecOptions{Named: map[string]any{
			":pk": pk, ":kind": h.Agent.Kind, ":version": h.Agent.Version, ":root": h.Workspace.Root,
			":started": h.StartedAt, ":started_ns": StartedNS(started),
			":format": Nullable(h.Agent.FormatVersion), ":repo": Nullable(h.Workspace.Repo),
			":ended": Nullable(h.EndedAt), ":source": Nullable(h.Source), ":metrics": metrics,
		}})
	return conn.Changes() > 0, err
}

// The upserts below run once per record of a batch (250 turns in 5,000
// steps): cached statements bound by position, as the step upsert.

func upsertSegment(conn *sqlite.Conn, pk int64, g *Segment) (bool, error) {
	stmt := conn.Prep(`INSERT INTO segments (session_pk, idx, start_reason, started_at, ended_at, source_files)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_pk, idx) DO UPDATE SET
		  start_reason = excluded.start_reason, started_at = excluded.started_at,
		  ended_at = excluded.ended_at, source_files = excluded.source_files
		WHERE (start_reason, started_at, ended_at, source_files)
		  IS NOT (excluded.start_reason, excluded.started_at, excluded.ended_at, excluded.source_files)`)
	defer stmt.Reset()
	stmt.BindInt64(1, pk)
	stmt.BindInt64(2, g.Index)
	stmt.BindText(3, g.StartReason)
	stmt.BindText(4, g.StartedAt)
	bindOptional(stmt, 5, g.EndedAt)
	stmt.BindText(6, SourceFilesJSON(g.SourceFiles))
	return upserted(conn, stmt)
}

func upsertActor(conn *sqlite.Conn, pk int64, a *Actor) (bool, error) {
	stmt := conn.Prep(`INSERT INTO actors (session_pk, id, parent_id, type, label) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_pk, id) DO UPDATE SET
		  parent_id = excluded.parent_id, type = excluded.type, label = excluded.label
		WHERE (parent_id, type, label) IS NOT (excluded.parent_id, excluded.type, excluded.label)`)
	defer stmt.Reset()
	stmt.BindInt64(1, pk)
	stmt.BindText(2, a.ID)
	bindOptional(stmt, 3, a.ParentID)
	stmt.BindText(4, a.Type)
	bindOptional(stmt, 5, a.Label)
	return upserted(conn, stmt)
}

func upsertTurn(conn *sqlite.Conn, pk int64, t *Turn, stamp int64) (bool, error) {
	stmt := conn.Prep(`INSERT INTO turns (session_pk, id, segment_index, actor_id, idx, prompt_id, mode, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_pk, id) DO UPDATE SET
		  segment_index = excluded.segment_index, actor_id = excluded.actor_id, idx = excluded.idx,
		  prompt_id = excluded.prompt_id, mode = excluded.mode, started_at = excluded.started_at,
		  updated_at = excluded.updated_at
		WHERE (segment_index, actor_id, idx, prompt_id, mode, started_at)
		  IS NOT (excluded.segment_index, excluded.actor_id, excluded.idx, excluded.prompt_id, excluded.mode, excluded.started_at)`)
	defer stmt.Reset()
	stmt.BindInt64(1, pk)
	stmt.BindText(2, t.ID)
	stmt.BindInt64(3, t.SegmentIndex)
	stmt.BindText(4, t.ActorID)
	stmt.BindInt64(5, t.Index)
	bindOptional(stmt, 6, t.PromptID)
	bindOptional(stmt, 7, t.Mode)
	stmt.BindText(8, t.StartedAt)
	stmt.BindInt64(9, stamp)
	return upserted(conn, stmt)
}

// SourceFilesJSON is a segment's source_files column: a JSON list, or
// null for a nil list (as json.Marshal writes it).
func SourceFilesJSON(files []string) string {
	if files == nil {
		return "null"
	}
	return string(appendStringsJSON(nil, files)) // step_json.go
}

// upserted runs a bound upsert and reports whether it wrote a row.
func upserted(conn *sqlite.Conn, stmt *sqlite.Stmt) (bool, error) {
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return conn.Changes() > 0, nil
}

const upsertStepSQL = `INSERT INTO steps (session_pk, id, seq, segment_index, turn_id, actor_id, at, type,
	  decision, outcome, content_status, role, flag_count, error, channels, flags, updated_at, payload,
	  stdout, stderr, text, old_string, new_string, command_files, tool_name)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (session_pk, id) DO UPDATE SET
	  seq = excluded.seq, segment_index = excluded.segment_index, turn_id = excluded.turn_id,
	  actor_id = excluded.actor_id, at = excluded.at, type = excluded.type, decision = excluded.decision,
	  outcome = excluded.outcome, content_status = excluded.content_status, role = excluded.role,
	  flag_count = excluded.flag_count, error = excluded.error, channels = excluded.channels,
	  flags = excluded.flags, updated_at = excluded.updated_at, payload = excluded.payload, stdout = excluded.stdout, stderr = excluded.stderr,
	  text = excluded.text, old_string = excluded.old_string, new_string = excluded.new_string,
	  command_files = excluded.command_files, tool_name = excluded.tool_name
	WHERE (seq, segment_index, turn_id, actor_id, at, type, decision, outcome, content_status, role,
	       error, channels, flags, payload, stdout, stderr, text, old_string, new_string)
	  IS NOT (excluded.seq, excluded.segment_index, excluded.turn_id, excluded.actor_id, excluded.at,
	       excluded.type, excluded.decision, excluded.outcome, excluded.content_status, excluded.role,
	       excluded.error, excluded.channels, excluded.flags, excluded.payload, excluded.stdout,
	       excluded.stderr, excluded.text, excluded.old_string, excluded.new_string)`

// StepColumns is the JSON columns of a step, as every backend stores them,
// the files a command's line names (CommandFilesColumn, for the search's
// path: filter) and the tool a step of type other called (for the
// report's tools and the search's tool: filter, which read it without
// the payload: SQLite's JSON functions refuse a tool's input nested deeper
// than they go). The large text fields and the message role leave the
// payload JSON for columns of their own. An empty ErrorJSON, CommandFiles
// or ToolName is NULL.
type StepColumns struct {
	ErrorJSON, Channels, Flags, Payload, CommandFiles, ToolName string
}

const emptyArray = "[]"

// stepScratch holds the buffers the JSON columns are written into before
// they are copied into strings, so each column costs one allocation.
var stepScratch = sync.Pool{New: func() any { return new([]byte) }}

// SplitStep renders a step's JSON columns (StepColumns).
func SplitStep(st *Step) (StepColumns, error) {
	var r StepColumns
	buf := stepScratch.Get().(*[]byte)
	defer stepScratch.Put(buf)
	p := st.Payload
	p.Role, p.Stdout, p.Stderr, p.Text, p.OldString, p.NewString = "", nil, nil, nil, nil, nil
	b, err := appendPayloadJSON((*buf)[:0], &p) // step_json.go
	if err != nil {
		return r, err
	}
	r.Payload = string(b)
	if st.Error != nil {
		b = appendErrorJSON(b[:0], st.Error)
		r.ErrorJSON = string(b)
	}
	r.Channels, r.Flags = emptyArray, emptyArray
	if len(st.Channels) > 0 {
		b = appendStringsJSON(b[:0], st.Channels)
		r.Channels = string(b)
	}
	if len(st.Flags) > 0 {
		b = appendFlagsJSON(b[:0], st.Flags)
		r.Flags = string(b)
	}
	if cap(b) <= 1<<20 { // a huge payload's buffer is not kept
		*buf = b
	}
	if st.Type == TypeCommand && p.Command != nil {
		r.CommandFiles = CommandFilesColumn(*p.Command, deref(p.Cwd))
	}
	if st.Type == TypeOther {
		r.ToolName = p.ToolName
	}
	return r, nil
}

func upsertStep(conn *sqlite.Conn, pk int64, st *Step, stamp int64) (bool, error) {
	r, err := SplitStep(st)
	if err != nil {
		return false, err
	}
	// The hot path of a big batch: a cached statement bound by position.
	stmt := conn.Prep(upsertStepSQL)
	defer stmt.Reset()
	stmt.BindInt64(1, pk)
	stmt.BindText(2, st.ID)
	stmt.BindInt64(3, st.Seq)
	stmt.BindInt64(4, st.SegmentIndex)
	stmt.BindText(5, st.TurnID)
	stmt.BindText(6, st.ActorID)
	stmt.BindText(7, st.At)
	stmt.BindText(8, st.Type)
	stmt.BindText(9, st.Decision)
	stmt.BindText(10, st.Outcome)
	stmt.BindText(11, st.ContentStatus)
	bindOptional(stmt, 12, st.Payload.Role)
	stmt.BindInt64(13, int64(len(st.Flags)))
	bindOptional(stmt, 14, r.ErrorJSON)
	stmt.BindText(15, r.Channels)
	stmt.BindText(16, r.Flags)
	stmt.BindInt64(17, stamp)
	stmt.BindText(18, r.Payload)
	for i, body := range []*string{st.Payload.Stdout, st.Payload.Stderr, st.Payload.Text, st.Payload.OldString, st.Payload.NewString} {
		if body != nil {
			stmt.BindText(19+i, *body)
		} else {
			stmt.BindNull(19 + i)
		}
	}
	bindOptional(stmt, 24, r.CommandFiles)
	bindOptional(stmt, 25, r.ToolName)
	return upserted(conn, stmt)
}

func bindOptional(stmt *sqlite.Stmt, i int, s string) {
	if s == "" {
		stmt.BindNull(i)
	} else {
		stmt.BindText(i, s)
	}
}

// StartedNS is a start time in unix nanoseconds, the list's sort key.
// Times outside what int64 nanoseconds hold (before 1678, after 2262), such
// as a zero time, are clamped so they still sort before or after the rest.
func StartedNS(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Nullable stores an empty optional string as NULL.
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// MetricsJSON is a session's metrics as stored: JSON, or nil (NULL) when
// the header has none.
func MetricsJSON(v *Metrics) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
