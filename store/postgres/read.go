package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// storable reports whether PostgreSQL can hold each s as text: UTF-8
// without a NUL (Apply refuses other text, unstorable). No stored row has
// any other, so a session asked for by such an id is not found and a
// filter with such a value keeps nothing: the SQLite store's answers,
// where PostgreSQL would fail the query (invalid byte sequence, 22021).
func storable(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return false
		}
	}
	return true
}

// read runs fn in one read-only transaction on one snapshot, as the SQLite
// store's reads do: every query of a read sees the same stored state.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// sessionColumns are what scanSession reads of session s: its row
// (store.SessionRow), then the summary's turn and segment counts, the
// first store.TitleChars characters of its first prompt (the first user
// prompt's, "" when it has no text; without a user prompt, the first task
// prompt but the compaction summariser's), the last step's time and the
// count of notes.
// Identifiers and text are ordered with COLLATE "C" wherever order shows,
// so PostgreSQL orders bytewise as SQLite does whatever the database's
// collation.
var sessionColumns = `s.pk, s.id, s.agent_kind, s.agent_version, coalesce(s.agent_format_version, ''),
	s.workspace_root, coalesce(s.workspace_repo, ''), s.started_at, coalesce(s.ended_at, ''), s.source, s.metrics,
	s.owner_id, s.captured_on, coalesce(s.verdict_state, ''), coalesce(s.verdict_note, ''), coalesce(s.verdict_reviewer, ''),
	s.updated_at,
	(SELECT count(*) FROM turns t WHERE t.session_pk = s.pk),
	(SELECT count(*) FROM segments g WHERE g.session_pk = s.pk),
	` + titlePromptSQL + `,
	coalesce((SELECT p.at FROM steps p WHERE p.session_pk = s.pk ORDER BY p.seq DESC LIMIT 1), ''),
	(SELECT count(*) FROM notes n WHERE n.session_pk = s.pk)`

// titlePromptSQL is the head of session s's first prompt, its title's
// text (store.Title): the first user prompt's, "" when it has no text;
// without a user prompt, the first task prompt but the compaction
// summariser's.
var titlePromptSQL = `coalesce((SELECT coalesce(left(p.text, ` + fmt.Sprint(store.TitleChars) + `), '') FROM steps p
	  WHERE p.session_pk = s.pk AND p.type = 'message' AND p.role = 'user' ORDER BY p.seq LIMIT 1),
	  (SELECT coalesce(left(p.text, ` + fmt.Sprint(store.TitleChars) + `), '') FROM steps p
	  WHERE p.session_pk = s.pk AND p.type = 'message' AND p.role = 'task'
	    AND NOT EXISTS (SELECT 1 FROM actors a WHERE a.session_pk = s.pk AND a.id = p.actor_id AND a.label = 'compact')
	  ORDER BY p.seq LIMIT 1), '')`

// scanSession reads a row of sessionColumns: the session with its summary
// but for the step counts (left at zero).
func scanSession(row pgx.Row) (int64, store.SessionOverview, error) {
	var (
		pk     int64
		r      store.SessionRow
		prompt string
	)
	sum := store.NewSummary()
	err := row.Scan(&pk, &r.ID, &r.AgentKind, &r.AgentVersion, &r.AgentFormatVersion,
		&r.WorkspaceRoot, &r.WorkspaceRepo, &r.StartedAt, &r.EndedAt, &r.Source, &r.Metrics,
		&r.OwnerID, &r.CapturedOn, &r.VerdictState, &r.VerdictNote, &r.VerdictReviewer, &r.UpdatedAt,
		&sum.Turns, &sum.Segments, &prompt, &sum.LastStepAt, &sum.Notes)
	if err != nil {
		return 0, store.SessionOverview{}, err
	}
	o, err := r.Overview()
	if err != nil {
		return 0, o, err
	}
	sum.Title = store.Title(prompt)
	o.Summary = sum
	return pk, o, nil
}

// stepColumns are the columns scanStepRow reads. With a head parameter
// ($n), each text field is cut to its first head characters and followed
// by its whole length; without (""), the length is 0.
func stepColumns(head string) string {
	cut := func(col string) string {
		if head == "" {
			return col + ", 0"
		}
		return fmt.Sprintf("left(%[1]s, %[2]s), coalesce(length(%[1]s), 0)", col, head)
	}
	return `id, seq, segment_index, turn_id, actor_id, at, type, decision, outcome,
		  content_status, coalesce(role, ''), error, channels, flags, payload, ` +
		cut("stdout") + ", " + cut("stderr") + ", " + cut("text") + ", " + cut("old_string") + ", " + cut("new_string")
}

// scanStepRow reads a row of stepColumns.
func scanStepRow(rows pgx.Rows) (store.StepRow, error) {
	var r store.StepRow
	err := rows.Scan(&r.ID, &r.Seq, &r.SegmentIndex, &r.TurnID, &r.ActorID, &r.At, &r.Type, &r.Decision, &r.Outcome,
		&r.ContentStatus, &r.Role, &r.Error, &r.Channels, &r.Flags, &r.Payload,
		&r.Bodies[0], &r.Lengths[0], &r.Bodies[1], &r.Lengths[1], &r.Bodies[2], &r.Lengths[2],
		&r.Bodies[3], &r.Lengths[3], &r.Bodies[4], &r.Lengths[4])
	return r, err
}

// sessionPK finds session id's row: 0 when it is not stored (or deleted).
func sessionPK(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
	var pk int64
	if !storable(id) {
		return 0, nil
	}
	err := tx.QueryRow(ctx, `SELECT coalesce((SELECT pk FROM sessions WHERE id = $1), 0)`, id).Scan(&pk)
	return pk, err
}

// tally returns session pk's whole-session results (store.Tally), reading
// only the blocks of steps written since this process last read them;
// ok is false when the session is not stored.
func (s *Store) tally(ctx context.Context, tx pgx.Tx, pk int64) (*store.Tally, bool, error) {
	t, ok, err := s.tallies.Tally(pgBlocks{ctx, tx}, pk)
	if err != nil {
		return nil, ok, fmt.Errorf("tally steps: %w", err)
	}
	return t, ok, nil
}

// pgBlocks is the PostgreSQL store's store.BlockReader, in one read
// transaction.
type pgBlocks struct {
	ctx context.Context
	tx  pgx.Tx
}

func (r pgBlocks) SessionStamp(pk int64) (id string, stamp int64, ok bool, err error) {
	err = r.tx.QueryRow(r.ctx, `SELECT id, updated_at FROM sessions WHERE pk = $1`, pk).Scan(&id, &stamp)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	return id, stamp, err == nil, err
}

func (r pgBlocks) ChangedBlocks(pk, stamp int64) ([]int64, error) {
	rows, _ := r.tx.Query(r.ctx, `SELECT DISTINCT pk >> $3 FROM steps WHERE session_pk = $1 AND updated_at > $2`,
		pk, stamp, store.BlockShift)
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// ReadSteps reads what store.BlockRow holds of each step; the payload is
// decoded only for the step types whose fields are counted.
func (r pgBlocks) ReadSteps(pk, from, to int64, add func(store.BlockRow)) error {
	where, args := "session_pk = $1", []any{pk}
	if to != 0 {
		where, args = "session_pk = $1 AND pk >= $2 AND pk < $3", []any{pk, from, to}
	}
	rows, _ := r.tx.Query(r.ctx, `SELECT pk, seq, type, outcome = 'failed', content_status = 'reference_only', flag_count,
		  decision = 'rejected', coalesce(j ->> 'path', ''), coalesce((j ->> 'is_full_write')::boolean, false),
		  coalesce(j ->> 'command', ''), j ->> 'exit_code' IS NOT NULL, coalesce((j ->> 'exit_code')::bigint, 0),
		  j ->> 'output_ref' IS NOT NULL, coalesce(j ->> 'cwd', ''), text_len, coalesce(tool_name, ''),
		  CASE WHEN outcome = 'failed' OR flag_count > 0 THEN turn_id ELSE '' END
		FROM (SELECT pk, seq, type, outcome, content_status, flag_count, decision, tool_name, turn_id,
		    CASE WHEN type IN ('edit', 'read', 'command') THEN payload::jsonb END AS j,
		    CASE WHEN type = 'edit' THEN coalesce(length(old_string), 0) + coalesce(length(new_string), 0) ELSE 0 END AS text_len
		  FROM steps WHERE `+where+`) p`, args...)
	var b store.BlockRow
	_, err := pgx.ForEachRow(rows, []any{&b.PK, &b.Seq, &b.Type, &b.Failed, &b.ReferenceOnly, &b.Flags,
		&b.Rejected, &b.Path, &b.FullWrite, &b.Command, &b.HasExitCode, &b.ExitCode, &b.OutputRef, &b.Cwd, &b.TextLen, &b.Tool, &b.TurnID},
		func() error { add(b); return nil })
	return err
}

func (r pgBlocks) LiveSessions(pks []int64) (map[int64]string, error) {
	live := map[int64]string{}
	rows, _ := r.tx.Query(r.ctx, `SELECT pk, id FROM sessions WHERE pk = ANY($1)`, pks)
	var (
		pk int64
		id string
	)
	_, err := pgx.ForEachRow(rows, []any{&pk, &id}, func() error { live[pk] = id; return nil })
	return live, err
}
