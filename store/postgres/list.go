package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// listConds are the list filters (store.ListQuery.Filters) in
// PostgreSQL, each argument $?.
var listConds = map[string]string{
	"since":      "s.started_ns >= $?",
	"until":      "s.started_ns < $?",
	"agent":      "s.agent_kind = $?",
	"verdict":    "s.verdict_state = $?",
	"unreviewed": "s.verdict_state IS NULL",
	"owner":      "s.owner_id = $?",
	"workspace":  "strpos(s.workspace_root, $?) > 0",
	"failed":     "EXISTS (SELECT 1 FROM steps p WHERE p.session_pk = s.pk AND p.outcome = 'failed')",
	"flagged":    "EXISTS (SELECT 1 FROM steps p WHERE p.session_pk = s.pk AND p.flag_count > 0)",
	"noted":      store.NotedSessionSQL,
	"cost": `((s.metrics::jsonb ->> 'cost_usd') IS NOT NULL
		OR EXISTS (SELECT 1 FROM usage_hours h WHERE h.session_pk = s.pk AND h.reported = 1)) = ($?::text = 'recorded')`,
}

// listFilter is the WHERE clause of the filters q sets but the one named
// except, so a chip's count keeps the other filters, with its arguments
// ($1 on).
func listFilter(q store.ListQuery, b store.ListBounds, except string) (string, []any) {
	return listFilterAfter(q, b, except, nil)
}

// listFilterAfter is listFilter within a query of the arguments args: its
// own are numbered after them, and returned after them.
func listFilterAfter(q store.ListQuery, b store.ListBounds, except string, args []any) (string, []any) {
	conds := []string{"true"}
	for _, f := range q.Filters(b, except) {
		cond := listConds[f.Name]
		if s, ok := f.Arg.(string); ok && !storable(s) {
			cond = "false" // no stored row has it
		} else if f.Arg != nil {
			args = append(args, f.Arg)
			cond = strings.ReplaceAll(cond, "$?", fmt.Sprintf("$%d", len(args)))
		}
		conds = append(conds, cond)
	}
	return strings.Join(conds, " AND "), args
}

// List returns stored sessions newest first (then by id), a page of them
// when q has a limit, as the SQLite store's List: Total covers every
// session the filters keep, Agents and Verdicts every session the other
// filters keep. A bad cursor is store.ErrBadCursor, a bad filter
// store.ErrBadFilter.
func (s *Store) List(ctx context.Context, q store.ListQuery) (store.SessionList, error) {
	l := store.SessionList{Sessions: []store.SessionOverview{}, Agents: []store.AgentCount{}, Verdicts: []store.VerdictCount{}}
	b, err := q.Bounds()
	if err != nil {
		return l, err
	}
	if b.After && !storable(b.AfterID) {
		return l, store.ErrBadCursor // not one of this list: no session has its id
	}
	where, args := listFilter(q, b, "")
	err = s.read(ctx, func(tx pgx.Tx) error {
		if err := s.listPage(ctx, tx, q, b, where, args, &l); err != nil || q.PageOnly {
			return err
		}
		// Cost is summed as numeric, exactly, and rounded once: SQLite's
		// sum is compensated, so the two agree where plain float addition
		// in another order would not.
		// The sessions with metrics, then those without whose requests
		// reported a cost (the reported usage rows alone, migration 010),
		// the two sums added as SQLite's List adds them.
		var metricsUSD, requestsUSD float64
		var requestsCosted int
		err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum((s.metrics::jsonb ->> 'cost_usd')::numeric), 0)::float8,
			  count(*) - count(s.metrics)
			FROM sessions s WHERE `+where, args...).Scan(&l.Total.Sessions, &metricsUSD, &l.Total.CostNotRecorded)
		if err == nil && l.Total.CostNotRecorded > 0 {
			err = tx.QueryRow(ctx, `SELECT count(DISTINCT h.session_pk), coalesce(sum(h.cost_usd::numeric), 0)::float8
				FROM usage_hours h JOIN sessions s ON s.pk = h.session_pk
				WHERE h.reported = 1 AND s.metrics IS NULL AND `+where, args...).Scan(&requestsCosted, &requestsUSD)
		}
		if err != nil {
			return fmt.Errorf("total: %w", err)
		}
		l.Total.CostUSD = metricsUSD + requestsUSD
		l.Total.CostNotRecorded -= requestsCosted
		whereAgent, argsAgent := listFilter(q, b, "agent")
		rows, _ := tx.Query(ctx, `SELECT s.agent_kind, count(*) FROM sessions s WHERE `+whereAgent+`
			GROUP BY s.agent_kind ORDER BY s.agent_kind COLLATE "C"`, argsAgent...)
		var a store.AgentCount
		_, err = pgx.ForEachRow(rows, []any{&a.Kind, &a.Sessions}, func() error { l.Agents = append(l.Agents, a); return nil })
		if err != nil {
			return fmt.Errorf("agents: %w", err)
		}
		whereVerdict, argsVerdict := listFilter(q, b, "verdict")
		rows, _ = tx.Query(ctx, `SELECT s.verdict_state, count(*) FROM sessions s
			WHERE s.verdict_state IS NOT NULL AND `+whereVerdict+`
			GROUP BY s.verdict_state ORDER BY s.verdict_state COLLATE "C"`, argsVerdict...)
		var v store.VerdictCount
		_, err = pgx.ForEachRow(rows, []any{&v.State, &v.Sessions}, func() error { l.Verdicts = append(l.Verdicts, v); return nil })
		if err != nil {
			return fmt.Errorf("verdicts: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sessions s WHERE s.verdict_state IS NULL AND `+whereVerdict, argsVerdict...).Scan(&l.Unreviewed); err != nil {
			return fmt.Errorf("unreviewed: %w", err)
		}
		return nil
	})
	if err == nil && q.Estimate && !q.PageOnly {
		err = store.EstimateTotal(ctx, s, q, &l.Total)
	}
	if err != nil {
		return store.SessionList{}, fmt.Errorf("store: list sessions: %w", err)
	}
	return l, nil
}

// listPage reads the sessions of the page q asks for, with their
// summaries (remembered by change stamp, store.ListSummaries), into l, and
// sets l.Next when the page is full.
func (s *Store) listPage(ctx context.Context, tx pgx.Tx, q store.ListQuery, b store.ListBounds, where string, args []any, l *store.SessionList) error {
	n := len(args)
	var limit *int // NULL: no limit
	if q.Limit > 0 {
		limit = &q.Limit
	}
	page := append(args[:n:n], limit)
	// After a cursor, a range in the index the filters pick, as SQLite's
	// listPage: not a walk from the newest session.
	cursor := ""
	if b.After {
		page = append(page, b.AfterNS, b.AfterID)
		cursor = fmt.Sprintf(`AND s.started_ns <= $%d AND (s.started_ns < $%d OR s.id COLLATE "C" > $%d)`, n+2, n+2, n+3)
	}
	rows, _ := tx.Query(ctx, fmt.Sprintf(`SELECT s.pk, s.id, s.updated_at, s.started_ns FROM sessions s
		WHERE %s %s
		ORDER BY s.started_ns DESC, s.id COLLATE "C" LIMIT $%d`, where, cursor, n+1), page...)
	var pks, stamps, started []int64
	var (
		pk, stamp, ns int64
		id            string
	)
	_, err := pgx.ForEachRow(rows, []any{&pk, &id, &stamp, &ns}, func() error {
		pks, stamps, started = append(pks, pk), append(stamps, stamp), append(started, ns)
		l.Sessions = append(l.Sessions, store.SessionOverview{Session: store.Session{ID: id}})
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.summaries.Fill(pgSummaries{ctx, tx}, l, pks, stamps, q == store.ListQuery{}); err != nil {
		return err
	}
	if q.Limit > 0 && len(pks) == q.Limit {
		l.Next = store.ListCursor(started[len(pks)-1], l.Sessions[len(pks)-1].ID)
	}
	return nil
}

// pgSummaries is the PostgreSQL store's store.SummaryReader, in one read
// transaction.
type pgSummaries struct {
	ctx context.Context
	tx  pgx.Tx
}

func (r pgSummaries) ReadSessions(pks []int64, found func(pk int64, o store.SessionOverview)) error {
	rows, _ := r.tx.Query(r.ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.pk = ANY($1)`, pks)
	defer rows.Close()
	for rows.Next() {
		pk, o, err := scanSession(rows)
		if err != nil {
			return err
		}
		found(pk, o)
	}
	return rows.Err()
}

// CountSteps reads the counts Apply keeps (migration 008, step_tallies),
// a few rows a session, not its steps.
func (r pgSummaries) CountSteps(pks []int64, add func(pk int64, c store.StepCount)) error {
	rows, _ := r.tx.Query(r.ctx, `SELECT session_pk, type, failed, reference_only, steps, flags
		FROM step_tallies WHERE session_pk = ANY($1)`, pks)
	var (
		pk int64
		c  store.StepCount
	)
	_, err := pgx.ForEachRow(rows, []any{&pk, &c.Type, &c.Failed, &c.ReferenceOnly, &c.Steps, &c.Flags},
		func() error { add(pk, c); return nil })
	if err != nil {
		return fmt.Errorf("step counts: %w", err)
	}
	return nil
}
