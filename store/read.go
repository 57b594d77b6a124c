package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Session is a stored session header with what the service keeps beside it.
type Session struct {
	ID         string    `json:"id"`
	Agent      Agent     `json:"agent"`
	Workspace  Workspace `json:"workspace"`
	StartedAt  string    `json:"started_at"`
	EndedAt    string    `json:"ended_at,omitempty"`
	Source     string    `json:"source"`
	Metrics    *Metrics  `json:"metrics,omitempty"` // nil: not recorded
	OwnerID    string    `json:"owner_id"`
	CapturedOn string    `json:"captured_on"`
	Verdict    *Verdict  `json:"verdict,omitempty"`
	UpdatedAt  string    `json:"updated_at"` // the change stamp
}

// Verdict is a reviewer's judgement of a session. A push never changes it.
type Verdict struct {
	State    string `json:"state"` // reviewed, approved, needs_attention, or any string
	Note     string `json:"note,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
}

// Summary is what the store computes about a session when it is read.
type Summary struct {
	Title         string         `json:"title"` // first line of the first user prompt, else of the first task prompt
	Steps         int            `json:"steps"`
	StepsByType   map[string]int `json:"steps_by_type"`
	Failed        int            `json:"failed"`
	ReferenceOnly int            `json:"reference_only"`
	Flags         int            `json:"flags"`
	Turns         int            `json:"turns"`
	Segments      int            `json:"segments"`
	// LastStepAt is the time of the last step (by seq): the session's last
	// activity. Empty without steps.
	LastStepAt string `json:"last_step_at,omitempty"`
	// Notes counts the reviewers' notes on the session's steps.
	Notes int `json:"notes"`
}

// SessionOverview is a session with its summary: one row of the list.
type SessionOverview struct {
	Session
	Summary Summary `json:"summary"`
}

// SessionList is the list route's result, newest session first.
type SessionList struct {
	Sessions []SessionOverview `json:"sessions"`
	Agents   []AgentCount      `json:"agents"` // every agent kind in the store, for filtering
	// Verdicts counts the sessions of each verdict state, for filtering,
	// and Unreviewed those without one, under the other filters.
	Verdicts   []VerdictCount `json:"verdicts"`
	Unreviewed int            `json:"unreviewed"`
	Total      Total          `json:"total"` // over every session the filter keeps
	// Next, when set, asks for the following page (ListQuery.After).
	Next string `json:"next,omitempty"`

	encoded [][]byte // each session's JSON as List read it (list_json.go)
}

// AgentCount is how many sessions an agent kind has.
type AgentCount struct {
	Kind     string `json:"kind"`
	Sessions int    `json:"sessions"`
}

// VerdictCount is how many sessions have a verdict state.
type VerdictCount struct {
	State    string `json:"state"`
	Sessions int    `json:"sessions"`
}

// Total sums the listed sessions. Cost adds the costs the agents
// reported: a session's metrics, else what its requests reported (usage
// records, as the list's rows show it); sessions with neither are counted
// apart, never guessed.
type Total struct {
	Sessions        int     `json:"sessions"`
	CostUSD         float64 `json:"cost_usd"`
	CostNotRecorded int     `json:"cost_not_recorded"`
	// EstimatedCostUSD, when asked for (ListQuery.Estimate), estimates the
	// requests without a reported cost of the sessions without metrics,
	// whose cost CostUSD has only from their requests' reports, as the
	// usage report by session prices them (UsageQuery.Unrecorded); nil
	// when none is priced. UnpricedModels counts their models without a
	// price, which it leaves out.
	EstimatedCostUSD *float64 `json:"estimated_cost_usd,omitempty"`
	UnpricedModels   int      `json:"unpriced_models,omitempty"`
}

// SessionDetail is a whole session: header, summary, records and report.
type SessionDetail struct {
	SessionOverview
	Segments []Segment `json:"segments"`
	Actors   []Actor   `json:"actors"`
	Turns    []Turn    `json:"turns"`
	Steps    []Step    `json:"steps"`
	Report   Report    `json:"report"`
	Notes    []Note    `json:"notes"` // every note of the session, however narrowed
	// Usage is the session's token usage; nil when none was recorded.
	Usage *Usage `json:"usage,omitempty"`
	// Window is set when the read was narrowed to some turns.
	Window *TurnWindow `json:"window,omitempty"`
	// Gaps are the steps a read of a window of each turn left out
	// (DetailQuery.Steps).
	Gaps []StepGap `json:"gaps,omitempty"`
}

const sessionColumns = `s.pk, s.id, s.agent_kind, s.agent_version, s.agent_format_version,
	s.workspace_root, s.workspace_repo, s.started_at, s.ended_at, s.source, s.metrics,
	s.owner_id, s.captured_on, s.verdict_state, s.verdict_note, s.verdict_reviewer, s.updated_at`

// summaryColumns are what the summary reads beside the step counts, for
// session s: turn and segment counts, the row of the first prompt (its
// row, 0 when it has no text; a session with no user prompt, a
// subagent-only session, takes its first task prompt other than the
// compaction summariser's, which says nothing of the work), the last
// step's time and the count of notes.
// titlePromptSQL is the step of session s's first prompt, whose text is
// its title's (Title); 0 when it has none: the first user prompt (0 when
// it has no text), without one the first task prompt but the compaction
// summariser's.
const titlePromptSQL = `coalesce((SELECT iif(p.text IS NULL, 0, p.pk) FROM steps p
	  WHERE p.session_pk = s.pk AND p.type = 'message' AND p.role = 'user' ORDER BY p.seq LIMIT 1),
	  (SELECT iif(p.text IS NULL, 0, p.pk) FROM steps p
	  WHERE p.session_pk = s.pk AND p.type = 'message' AND p.role = 'task'
	    AND NOT EXISTS (SELECT 1 FROM actors a WHERE a.session_pk = s.pk AND a.id = p.actor_id AND a.label = 'compact')
	  ORDER BY p.seq LIMIT 1), 0)`

const summaryColumns = `(SELECT count(*) FROM turns t WHERE t.session_pk = s.pk),
	(SELECT count(*) FROM segments g WHERE g.session_pk = s.pk),
	` + titlePromptSQL + `,
	(SELECT p.at FROM steps p WHERE p.session_pk = s.pk ORDER BY p.seq DESC LIMIT 1),
	(SELECT count(*) FROM notes n WHERE n.session_pk = s.pk)`

// TitleChars is how much of the first prompt the title is taken from.
const TitleChars = 1000

// scanSession reads a row of sessionColumns then summaryColumns.
func scanSession(conn *sqlite.Conn, st *sqlite.Stmt) (int64, SessionOverview, error) {
	pk, o, err := scanHeader(st)
	if err != nil {
		return 0, o, err
	}
	o.Summary, err = scanSummary(conn, st, 17)
	if err != nil {
		return 0, o, fmt.Errorf("session %s %w", o.ID, err)
	}
	return pk, o, nil
}

// scanHeader reads a row of sessionColumns.
func scanHeader(st *sqlite.Stmt) (int64, SessionOverview, error) {
	r := SessionRow{
		ID: st.ColumnText(1), AgentKind: st.ColumnText(2), AgentVersion: st.ColumnText(3), AgentFormatVersion: st.ColumnText(4),
		WorkspaceRoot: st.ColumnText(5), WorkspaceRepo: st.ColumnText(6), StartedAt: st.ColumnText(7), EndedAt: st.ColumnText(8),
		Source: st.ColumnText(9), OwnerID: st.ColumnText(11), CapturedOn: st.ColumnText(12),
		VerdictState: st.ColumnText(13), VerdictNote: st.ColumnText(14), VerdictReviewer: st.ColumnText(15),
		UpdatedAt: st.ColumnInt64(16),
	}
	if !st.ColumnIsNull(10) {
		m := st.ColumnText(10)
		r.Metrics = &m
	}
	o, err := r.Overview()
	return st.ColumnInt64(0), o, err
}

// SessionRow is a sessions row as every backend stores it; a column left
// NULL reads as "" (Metrics: nil).
type SessionRow struct {
	ID, AgentKind, AgentVersion, AgentFormatVersion string
	WorkspaceRoot, WorkspaceRepo                    string
	StartedAt, EndedAt, Source                      string
	Metrics                                         *string // JSON, nil: not recorded
	OwnerID, CapturedOn                             string
	VerdictState, VerdictNote, VerdictReviewer      string
	UpdatedAt                                       int64 // the change stamp
}

// Overview is the session the row holds, with an empty summary.
func (r *SessionRow) Overview() (SessionOverview, error) {
	o := SessionOverview{
		Session: Session{
			ID:         r.ID,
			Agent:      Agent{Kind: r.AgentKind, Version: r.AgentVersion, FormatVersion: r.AgentFormatVersion},
			Workspace:  Workspace{Root: r.WorkspaceRoot, Repo: r.WorkspaceRepo},
			StartedAt:  r.StartedAt,
			EndedAt:    r.EndedAt,
			Source:     r.Source,
			OwnerID:    r.OwnerID,
			CapturedOn: r.CapturedOn,
			UpdatedAt:  FormatStamp(r.UpdatedAt),
		},
	}
	if r.Metrics != nil {
		o.Metrics = &Metrics{}
		if err := json.Unmarshal([]byte(*r.Metrics), o.Metrics); err != nil {
			return o, fmt.Errorf("session %s metrics: %w", o.ID, err)
		}
	}
	if r.VerdictState != "" {
		o.Verdict = &Verdict{State: r.VerdictState, Note: r.VerdictNote, Reviewer: r.VerdictReviewer}
	}
	return o, nil
}

// scanSummary reads summaryColumns from column from on, and the title
// from the first prompt; the step counts are left at zero.
func scanSummary(conn *sqlite.Conn, st *sqlite.Stmt, from int) (Summary, error) {
	sum := NewSummary()
	sum.Turns, sum.Segments, sum.LastStepAt, sum.Notes = st.ColumnInt(from), st.ColumnInt(from+1), st.ColumnText(from+3), st.ColumnInt(from+4)
	if prompt := st.ColumnInt64(from + 2); prompt != 0 {
		text, err := readHead(conn, "text", prompt, TitleChars)
		if err != nil {
			return sum, fmt.Errorf("title: %w", err)
		}
		sum.Title = Title(text)
	}
	return sum, nil
}

// NewSummary is a summary with no steps: every step type counted 0.
func NewSummary() Summary {
	sum := Summary{StepsByType: make(map[string]int, len(StepTypes))}
	for _, t := range StepTypes {
		sum.StepsByType[t] = 0
	}
	return sum
}

// Title is a session's title from the first TitleChars characters of its
// first prompt (the summary's rule): their first line.
func Title(head string) string { return firstLine(head) }

// readHead returns the first chars characters of a text column of a steps
// row. It reads through incremental blob I/O, which touches only the pages
// it needs: substr() in SQL loads the whole value first.
func readHead(conn *sqlite.Conn, column string, pk int64, chars int) (string, error) {
	b, err := conn.OpenBlob("main", "steps", column, pk, false)
	if err != nil {
		return "", err
	}
	defer b.Close()
	buf := make([]byte, min(b.Size(), 4*int64(chars))) // a character is at most 4 bytes
	if _, err := io.ReadFull(b, buf); err != nil {
		return "", err
	}
	end := 0
	for n := 0; n < chars && end < len(buf); n++ {
		_, size := utf8.DecodeRune(buf[end:])
		end += size
	}
	return string(buf[:end]), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// sqliteSummaries is the SQLite store's SummaryReader, on one connection.
type sqliteSummaries struct {
	conn  *sqlite.Conn
	whole *Tallies
}

func (r sqliteSummaries) ReadSessions(pks []int64, found func(pk int64, o SessionOverview)) error {
	ids, _ := json.Marshal(pks)
	return sqlitex.Execute(r.conn, `SELECT `+sessionColumns+`, `+summaryColumns+` FROM sessions s WHERE s.pk IN (SELECT value FROM json_each(?))`, &sqlitex.ExecOptions{
		Args: []any{string(ids)},
		ResultFunc: func(st *sqlite.Stmt) error {
			pk, o, err := scanSession(r.conn, st)
			if err != nil {
				return err
			}
			found(pk, o)
			return nil
		},
	})
}

func (r sqliteSummaries) CountSteps(pks []int64, add func(pk int64, c StepCount)) error {
	ids, _ := json.Marshal(pks)
	return sqlitex.Execute(r.conn, `SELECT session_pk, type, outcome = 'failed', content_status = 'reference_only',
		  count(*), sum(flag_count)
		FROM steps s WHERE session_pk IN (SELECT value FROM json_each(?)) GROUP BY 1, 2, 3, 4`, &sqlitex.ExecOptions{
		Args: []any{string(ids)},
		ResultFunc: func(st *sqlite.Stmt) error {
			add(st.ColumnInt64(0), StepCount{Type: st.ColumnText(1), Failed: st.ColumnBool(2), ReferenceOnly: st.ColumnBool(3),
				Steps: st.ColumnInt(4), Flags: st.ColumnInt(5)})
			return nil
		},
	})
}

// CountChanged counts session pk's steps into sum from its partial results
// in Tallies, reading again only the blocks written since they were
// remembered (all of them the first time): the same counting as a
// session's page (Detail).
func (r sqliteSummaries) CountChanged(pk int64, sum *Summary) error {
	e, ok, err := r.whole.entry(sqliteBlocks{r.conn}, pk)
	if err != nil || !ok {
		return err // !ok cannot be: the same read found its row
	}
	e.summary(sum)
	return nil
}

// StepCount is a group of a session's steps the list counts: Steps steps
// of one type, failed or not, reference-only or not, with Flags flags in
// all.
type StepCount struct {
	Type                  string
	Failed, ReferenceOnly bool
	Steps, Flags          int
}

// AddCount adds a group of steps to the summary's step counts.
func (sum *Summary) AddCount(c StepCount) {
	sum.Steps += c.Steps
	sum.StepsByType[c.Type] += c.Steps
	if c.Failed {
		sum.Failed += c.Steps
	}
	if c.ReferenceOnly {
		sum.ReferenceOnly += c.Steps
	}
	sum.Flags += c.Flags
}

// ListQuery narrows the list. The zero value lists every session.
type ListQuery struct {
	Agent   string // only sessions of this agent kind
	Verdict string // only sessions with this verdict state
	// Unreviewed keeps only sessions without a verdict; with Verdict, one
	// choice of the same filter, it keeps none.
	Unreviewed bool
	// PageOnly reads the page of sessions alone: Total, Agents, Verdicts
	// and Unreviewed, which count every session, are left empty.
	PageOnly  bool
	Owner     string // only sessions of this owner_id (a team server's user)
	Workspace string // only sessions whose workspace root contains this
	Since     string // only sessions started at or after this date (2026-11-01) or RFC 3339 time
	Until     string // only sessions started before this date or time
	Failed    bool   // only sessions with a failed step
	Flagged   bool   // only sessions with a flagged step
	Noted     bool   // only sessions with a note on a step
	Cost      string // "recorded" or "not_recorded": only sessions with or without a reported cost (Total)
	Limit     int    // at most this many sessions (0: all)
	After     string // a Next cursor of an earlier page: the sessions after it
	// Estimate adds to Total the estimate of the cost it cannot show
	// (Total.EstimatedCostUSD): a read of the usage of every session the
	// filters keep without metrics, so only when asked.
	Estimate bool
}

// ListBounds are what a ListQuery's times and cursor say, checked.
type ListBounds struct {
	// Since and Until bound started_ns (Since inclusive, Until not); nil
	// when not set.
	Since, Until *int64
	// After is set for a later page: the sessions after the one started at
	// AfterNS with id AfterID (newest first, then by id).
	After   bool
	AfterNS int64
	AfterID string
}

// Bounds checks q as List does: ErrBadCursor for an After that is not a
// Next cursor, ErrBadFilter for a since, until or cost it cannot read.
func (q ListQuery) Bounds() (ListBounds, error) {
	var b ListBounds
	var err error
	if b.AfterNS, b.AfterID, err = parseCursor(q.After); err != nil {
		return b, err
	}
	b.After = q.After != ""
	for _, f := range []struct {
		name, value string
		dst         **int64
	}{{"since", q.Since, &b.Since}, {"until", q.Until, &b.Until}} {
		if f.value == "" {
			continue
		}
		t, err := parseSearchTime(f.value)
		if err != nil {
			return b, fmt.Errorf("%w: %s: %v", ErrBadFilter, f.name, err)
		}
		ns := StartedNS(t)
		*f.dst = &ns
	}
	if q.Cost != "" && q.Cost != "recorded" && q.Cost != "not_recorded" {
		return b, fmt.Errorf("%w: cost: %q is not recorded or not_recorded", ErrBadFilter, q.Cost)
	}
	return b, nil
}

// ListCursor is the Next cursor of a page whose last session started at
// startedNS (unix nanoseconds, StartedNS) with this id.
func ListCursor(startedNS int64, id string) string {
	return fmt.Sprintf("%d:%s", startedNS, id)
}

// ListFilter is one filter a ListQuery sets: its name (the chip whose
// count leaves it out) and its argument (nil for the yes/no filters).
type ListFilter struct {
	Name string
	Arg  any
}

// Filters are the filters q sets but the one named except, in one order,
// for every backend: each renders a filter's name with its own SQL
// (sqliteListConds here, listConds in store/postgres). b is q.Bounds().
// Only the filters set are listed, so an unfiltered list reads only the
// sessions_list index (migrations/010), never a row.
func (q ListQuery) Filters(b ListBounds, except string) []ListFilter {
	var fs []ListFilter
	// A verdict state and "unreviewed" are choices of one filter: the
	// verdict chips count under every other filter but both.
	add := func(name string, set bool, arg any) {
		if set && name != except && !(name == "unreviewed" && except == "verdict") {
			fs = append(fs, ListFilter{name, arg})
		}
	}
	if b.Since != nil {
		add("since", true, *b.Since)
	}
	if b.Until != nil {
		add("until", true, *b.Until)
	}
	add("agent", q.Agent != "", q.Agent)
	add("verdict", q.Verdict != "", q.Verdict)
	add("unreviewed", q.Unreviewed, nil)
	add("owner", q.Owner != "", q.Owner)
	add("workspace", q.Workspace != "", q.Workspace)
	add("failed", q.Failed, nil)
	add("flagged", q.Flagged, nil)
	add("noted", q.Noted, nil)
	add("cost", q.Cost != "", q.Cost)
	return fs
}

// sqliteListConds are the list filters in SQLite, each argument :name.
var sqliteListConds = map[string]string{
	"since":      "s.started_ns >= :since",
	"until":      "s.started_ns < :until",
	"agent":      "s.agent_kind = :agent",
	"verdict":    "s.verdict_state = :verdict",
	"unreviewed": "s.verdict_state IS NULL",
	"owner":      "s.owner_id = :owner",
	"workspace":  "instr(s.workspace_root, :workspace) > 0",
	// Each a look-up in an index of those steps alone (migration 016),
	// which SQLite does not choose by itself: it read every step's entry.
	"failed":  "EXISTS (SELECT 1 FROM steps p INDEXED BY steps_failed WHERE p.session_pk = s.pk AND p.outcome = 'failed')",
	"flagged": "EXISTS (SELECT 1 FROM steps p INDEXED BY steps_flagged WHERE p.session_pk = s.pk AND p.flag_count > 0)",
	"noted":   NotedSessionSQL,
	// A cost is recorded when the agent reported the session's (metrics)
	// or its requests' (usage records), as Total counts it.
	"cost": `(json_extract(s.metrics, '$.cost_usd') IS NOT NULL
		OR EXISTS (SELECT 1 FROM usage_hours h WHERE h.session_pk = s.pk AND h.reported = 1)) = (:cost = 'recorded')`,
}

// listFilter is the WHERE clause of the filters q sets but the one named
// except, so a chip's count keeps the other filters ("1" without any), and
// its named arguments.
func listFilter(q ListQuery, b ListBounds, except string) (string, map[string]any) {
	return listFilterAs(q, b, except, "")
}

// listFilterAs is listFilter with its arguments named :<prefix><name>, so
// that a query of other arguments of those names can hold it.
func listFilterAs(q ListQuery, b ListBounds, except, prefix string) (string, map[string]any) {
	conds, args := []string{"1"}, map[string]any{}
	for _, f := range q.Filters(b, except) {
		conds = append(conds, strings.ReplaceAll(sqliteListConds[f.Name], ":"+f.Name, ":"+prefix+f.Name))
		if f.Arg != nil {
			args[":"+prefix+f.Name] = f.Arg
		}
	}
	return strings.Join(conds, " AND "), args
}

// listPage reads the pk, id and change stamp of the sessions of a page
// (after the cursor :ns, :id when after, at most :limit) that where keeps.
func listPage(where string, after bool) string {
	// After a cursor, the page starts at it in whichever index the
	// filters pick (started_ns <= :ns is a range in each), rather than
	// walking every session newer than it: the next not reviewed after a
	// session deep in the list read 10,000 rows (12 ms) for one.
	cursor := ""
	if after {
		cursor = "AND s.started_ns <= :ns AND (s.started_ns < :ns OR s.id > :id)"
	}
	return `SELECT s.pk, s.id, s.updated_at FROM sessions s
		WHERE ` + where + ` ` + cursor + `
		ORDER BY s.started_ns DESC, s.id LIMIT :limit`
}

// List returns stored sessions newest first, a page of them when q has a
// limit; Total covers every session the filters keep, Agents and Verdicts
// every session the other filters keep.
func (s *Store) List(ctx context.Context, q ListQuery) (SessionList, error) {
	l := SessionList{Sessions: []SessionOverview{}, Agents: []AgentCount{}, Verdicts: []VerdictCount{}}
	b, err := q.Bounds()
	if err != nil {
		return l, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	where, args := listFilter(q, b, "")
	whereAgent, argsAgent := listFilter(q, b, "agent")
	whereVerdict, argsVerdict := listFilter(q, b, "verdict")
	err = s.read(ctx, func(conn *sqlite.Conn) error {
		var pks, stamps []int64
		page := maps.Clone(args)
		page[":limit"] = limit
		if b.After {
			page[":ns"], page[":id"] = b.AfterNS, b.AfterID
		}
		err := sqlitex.Execute(conn, listPage(where, b.After), &sqlitex.ExecOptions{
			Named: page,
			ResultFunc: func(st *sqlite.Stmt) error {
				pks = append(pks, st.ColumnInt64(0))
				stamps = append(stamps, st.ColumnInt64(2))
				l.Sessions = append(l.Sessions, SessionOverview{Session: Session{ID: st.ColumnText(1)}})
				return nil
			},
		})
		if err != nil {
			return err
		}
		if err := s.summaries.Fill(sqliteSummaries{conn, &s.whole}, &l, pks, stamps, q == ListQuery{}); err != nil { // summaries.go
			return err
		}
		if q.Limit > 0 && len(pks) == q.Limit {
			err = sqlitex.Execute(conn, `SELECT started_ns FROM sessions WHERE pk = ?`, &sqlitex.ExecOptions{
				Args: []any{pks[len(pks)-1]},
				ResultFunc: func(st *sqlite.Stmt) error {
					l.Next = ListCursor(st.ColumnInt64(0), l.Sessions[len(pks)-1].ID)
					return nil
				},
			})
			if err != nil {
				return err
			}
		}
		if q.PageOnly {
			return nil
		}
		// The sessions with metrics, then those without whose requests
		// reported a cost: from the few reported usage rows (an index of
		// them alone, migration 020), not by a look-up for every session.
		var metricsUSD, requestsUSD float64
		var requestsCosted int
		err = sqlitex.Execute(conn, `SELECT count(*), coalesce(sum(json_extract(s.metrics, '$.cost_usd')), 0), count(*) - count(s.metrics)
			FROM sessions s WHERE `+where, &sqlitex.ExecOptions{
			Named: args,
			ResultFunc: func(st *sqlite.Stmt) error {
				l.Total = Total{Sessions: st.ColumnInt(0), CostNotRecorded: st.ColumnInt(2)}
				metricsUSD = st.ColumnFloat(1)
				return nil
			},
		})
		if err == nil && l.Total.CostNotRecorded > 0 {
			err = sqlitex.Execute(conn, `SELECT count(DISTINCT h.session_pk), coalesce(sum(h.cost_usd), 0)
				FROM usage_hours h INDEXED BY usage_hours_reported JOIN sessions s ON s.pk = h.session_pk
				WHERE h.reported = 1 AND s.metrics IS NULL AND `+where, &sqlitex.ExecOptions{
				Named: args,
				ResultFunc: func(st *sqlite.Stmt) error {
					requestsCosted, requestsUSD = st.ColumnInt(0), st.ColumnFloat(1)
					return nil
				},
			})
		}
		if err != nil {
			return err
		}
		l.Total.CostUSD = metricsUSD + requestsUSD
		l.Total.CostNotRecorded -= requestsCosted
		err = sqlitex.Execute(conn, `SELECT s.agent_kind, count(*) FROM sessions s WHERE `+whereAgent+` GROUP BY 1 ORDER BY 1`, &sqlitex.ExecOptions{
			Named: argsAgent,
			ResultFunc: func(st *sqlite.Stmt) error {
				l.Agents = append(l.Agents, AgentCount{Kind: st.ColumnText(0), Sessions: st.ColumnInt(1)})
				return nil
			},
		})
		if err != nil {
			return err
		}
		err = sqlitex.Execute(conn, `SELECT s.verdict_state, count(*) FROM sessions s WHERE s.verdict_state IS NOT NULL AND `+whereVerdict+` GROUP BY 1 ORDER BY 1`, &sqlitex.ExecOptions{
			Named: argsVerdict,
			ResultFunc: func(st *sqlite.Stmt) error {
				l.Verdicts = append(l.Verdicts, VerdictCount{State: st.ColumnText(0), Sessions: st.ColumnInt(1)})
				return nil
			},
		})
		if err != nil {
			return err
		}
		return sqlitex.Execute(conn, `SELECT count(*) FROM sessions s WHERE s.verdict_state IS NULL AND `+whereVerdict, &sqlitex.ExecOptions{
			Named:      argsVerdict,
			ResultFunc: func(st *sqlite.Stmt) error { l.Unreviewed = st.ColumnInt(0); return nil },
		})
	})
	if err == nil && q.Estimate && !q.PageOnly {
		err = EstimateTotal(ctx, s, q, &l.Total)
	}
	if err != nil {
		return SessionList{}, fmt.Errorf("store: list sessions: %w", err)
	}
	return l, nil
}

// parseCursor reads a Next cursor: "<started_ns>:<id>".
func parseCursor(c string) (int64, string, error) {
	if c == "" {
		return 0, "", nil
	}
	nsText, id, ok := strings.Cut(c, ":")
	ns, err := strconv.ParseInt(nsText, 10, 64)
	if !ok || err != nil {
		return 0, "", ErrBadCursor
	}
	return ns, id, nil
}

// DetailQuery narrows a session read for the review app. The zero value
// reads the whole session.
type DetailQuery struct {
	// Turns keeps only the last Turns turns before turn position Before
	// (0: up to the end), with their steps. 0 keeps every turn.
	Turns  int
	Before int
	// Since keeps only the turns changed after this change stamp, or whose
	// steps changed after it; with MostChanged, only the last MostChanged
	// of those (TurnWindow.Changed counts them all): a reader that cannot
	// show more reads the session again instead.
	Since       int64
	MostChanged int
	// Seq keeps only the step with this seq.
	Seq *int64
	// Head cuts each text field of the steps to its first Head characters,
	// recording the whole length in Step.Cut.
	Head int
	// NoSteps reads no steps, for a reader that reads them a few at a time
	// (TurnSteps).
	NoSteps bool
	// Steps keeps of each turn of more steps its first step and its last
	// Steps, or its first and those from a step of From on, and says what
	// it left out in SessionDetail.Gaps (StepWindow); 0 keeps every step.
	Steps int
	From  []int64
	// Around (with Steps) keeps also the steps near this step in its turn
	// (AroundSteps either side): a link to it. With Turns and no Before,
	// the turns kept are those around the step's turn (AroundTurns after
	// it, fewer at the end), not the last ones.
	Around int64
	// Turn keeps only the turn of this id; StepsAfter (nil: from the
	// first) and StepsBefore (0: to the last), with Steps, only its steps
	// between these seqs: the steps a gap leaves out, a window at a time.
	Turn        string
	StepsAfter  *int64
	StepsBefore int64
}

// TurnWindow tells which turns a narrowed read returned: positions
// [First, First+len(Turns)) in turn order.
type TurnWindow struct {
	First int `json:"first"`
	Total int `json:"total"`
	// Changed is how many turns of the window changed since
	// DetailQuery.Since, those MostChanged left out too; 0 without Since.
	Changed int `json:"changed,omitempty"`
}

// Detail returns a session, whole or narrowed by q, or ErrNotFound (also
// for a deleted one). The summary and report always cover the whole session.
func (s *Store) Detail(ctx context.Context, id string, q DetailQuery) (SessionDetail, error) {
	var d SessionDetail
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		var pk int64
		err := sqlitex.Execute(conn, `SELECT `+sessionColumns+`, `+summaryColumns+` FROM sessions s WHERE s.id = ?`, &sqlitex.ExecOptions{
			Args: []any{id},
			ResultFunc: func(st *sqlite.Stmt) (err error) {
				pk, d.SessionOverview, err = scanSession(conn, st)
				return err
			},
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		e, _, err := s.whole.entry(sqliteBlocks{conn}, pk) // whole.go
		if err != nil {
			return err
		}
		e.summary(&d.Summary)
		d.Report = e.report()
		if d.Notes, err = readNotes(conn, pk); err != nil {
			return err
		}
		if d.Usage, err = s.whole.usage(pk, e, func(after int64) ([]UsageRecord, error) { return usageWrittenAfter(conn, pk, after) }); err != nil {
			return err
		}
		if d.Segments, err = readSegments(conn, pk); err != nil {
			return err
		}
		if d.Actors, err = readActors(conn, pk); err != nil {
			return err
		}
		if d.Turns, d.Window, err = readTurns(conn, pk, id, q); err != nil {
			return err
		}
		d.Report.Turns = e.turnProblems(d.Turns)
		d.Steps, d.Gaps, err = readSteps(conn, pk, id, q, d.Turns)
		return err
	})
	if err != nil {
		return SessionDetail{}, fmt.Errorf("store: read session %s: %w", id, err)
	}
	return d, nil
}

func readSegments(conn *sqlite.Conn, pk int64) ([]Segment, error) {
	out := []Segment{}
	err := sqlitex.Execute(conn, `SELECT idx, start_reason, started_at, ended_at, source_files
		FROM segments WHERE session_pk = ? ORDER BY idx`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			g := Segment{Index: st.ColumnInt64(0), StartReason: st.ColumnText(1), StartedAt: st.ColumnText(2), EndedAt: st.ColumnText(3)}
			out = append(out, g)
			return json.Unmarshal([]byte(st.ColumnText(4)), &out[len(out)-1].SourceFiles)
		},
	})
	return out, err
}

func readActors(conn *sqlite.Conn, pk int64) ([]Actor, error) {
	out := []Actor{}
	err := sqlitex.Execute(conn, `SELECT id, parent_id, type, label FROM actors
		WHERE session_pk = ? ORDER BY parent_id IS NOT NULL, id`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			out = append(out, Actor{ID: st.ColumnText(0), ParentID: st.ColumnText(1), Type: st.ColumnText(2), Label: st.ColumnText(3)})
			return nil
		},
	})
	return out, err
}

// readTurns reads the turns q asks for, in order. step_ids are filled by
// readSteps.
func readTurns(conn *sqlite.Conn, pk int64, sid string, q DetailQuery) ([]Turn, *TurnWindow, error) {
	all := []Turn{}
	var changed map[string]bool
	if q.Since > 0 {
		changed = map[string]bool{}
		err := sqlitex.Execute(conn, `SELECT id FROM turns WHERE session_pk = :pk AND updated_at > :since
			UNION SELECT turn_id FROM steps WHERE session_pk = :pk AND updated_at > :since`, &sqlitex.ExecOptions{
			Named:      map[string]any{":pk": pk, ":since": q.Since},
			ResultFunc: func(st *sqlite.Stmt) error { changed[st.ColumnText(0)] = true; return nil },
		})
		if err != nil {
			return nil, nil, err
		}
	}
	err := sqlitex.Execute(conn, `SELECT id, segment_index, actor_id, idx, prompt_id, mode, started_at
		FROM turns WHERE session_pk = ? ORDER BY idx, started_at, id`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			all = append(all, Turn{
				ID: st.ColumnText(0), SessionID: sid, SegmentIndex: st.ColumnInt64(1), ActorID: st.ColumnText(2),
				Index: st.ColumnInt64(3), PromptID: st.ColumnText(4), Mode: st.ColumnText(5), StartedAt: st.ColumnText(6),
				StepIDs: []string{},
			})
			return nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	var around string
	if q.AroundTurn() {
		err := sqlitex.Execute(conn, `SELECT turn_id FROM steps WHERE session_pk = ? AND seq = ?`, &sqlitex.ExecOptions{
			Args:       []any{pk, q.Around},
			ResultFunc: func(st *sqlite.Stmt) error { around = st.ColumnText(0); return nil },
		})
		if err != nil {
			return nil, nil, err
		}
	}
	out, w := q.Narrow(all, changed, around)
	return out, w, nil
}

// Whole reports whether q reads every turn and step (it may still cut
// them, Head, or leave the steps out, NoSteps).
func (q DetailQuery) Whole() bool {
	return q.Turns == 0 && q.Since == 0 && q.Seq == nil && q.Turn == ""
}

// AroundTurns are the turns a read of DetailQuery.Turns turns keeps after
// the turn of the step it reads around (DetailQuery.Around); those before
// it make up the rest.
const AroundTurns = 20

// AroundTurn says whether q reads the turns around the turn of its step
// Around: the backend then finds that turn for Narrow.
func (q DetailQuery) AroundTurn() bool { return q.Around > 0 && q.Turns > 0 && q.Before == 0 }

// Narrow keeps the turns q asks for of all (a session's turns in order),
// changed being the ids of the turns changed since q.Since (nil when
// q.Since is 0), and around the turn of id around when q.AroundTurn (""
// when the step is not stored: the last turns then), and says which it
// kept (nil for a whole read).
func (q DetailQuery) Narrow(all []Turn, changed map[string]bool, around string) ([]Turn, *TurnWindow) {
	if q.Whole() {
		return all, nil
	}
	end := len(all)
	if q.Before > 0 && q.Before < end {
		end = q.Before
	}
	if q.AroundTurn() && around != "" {
		if i := slices.IndexFunc(all, func(t Turn) bool { return t.ID == around }); i >= 0 {
			end = min(end, i+1+AroundTurns)
		}
	}
	first := 0
	if q.Turns > 0 {
		first = max(0, end-q.Turns)
	}
	var out []Turn
	for _, t := range all[first:end] {
		if (changed == nil || changed[t.ID]) && (q.Turn == "" || q.Turn == t.ID) {
			out = append(out, t)
		}
	}
	w := &TurnWindow{First: first, Total: len(all)}
	if changed != nil {
		w.Changed = len(out)
		if q.MostChanged > 0 && len(out) > q.MostChanged {
			out = out[len(out)-q.MostChanged:]
		}
	}
	if out == nil {
		out = []Turn{}
	}
	return out, w
}

// readSteps reads the steps of the given turns (all of them for a whole
// read, a window of each for a windowed one) in seq order, and fills the
// turns' step_ids.
func readSteps(conn *sqlite.Conn, pk int64, sid string, q DetailQuery, turns []Turn) ([]Step, []StepGap, error) {
	byTurn := make(map[string]*Turn, len(turns))
	for i := range turns {
		byTurn[turns[i].ID] = &turns[i]
	}
	whole := q.Whole()
	var seq any
	if q.Seq != nil {
		seq = *q.Seq
	}
	if q.NoSteps {
		return []Step{}, nil, nil
	}
	named := map[string]any{":pk": pk, ":seq": seq}
	where := "session_pk = :pk AND (:seq IS NULL OR seq = :seq)"
	var gaps []StepGap
	switch {
	case q.Windowed():
		seqs, err := turnSeqs(conn, pk, q, turns)
		if err != nil {
			return nil, nil, err
		}
		var keep []int64
		keep, gaps = q.StepWindow(turns, seqs)
		if err := gapTimes(conn, pk, gaps); err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(keep)
		named[":seqs"] = string(b)
		delete(named, ":seq")
		where = "pk IN (SELECT p.pk FROM json_each(:seqs) AS w CROSS JOIN steps p WHERE p.session_pk = :pk AND p.seq = w.value)"
	case !whole && q.Seq == nil:
		named[":turns"] = turnIDsJSON(turns)
		delete(named, ":seq")
		// The turns' rows by steps_by_turn: with the session's condition
		// beside it, SQLite walked every step of the session in seq order.
		where = "pk IN (SELECT p.pk FROM json_each(:turns) AS w CROSS JOIN steps p WHERE p.session_pk = :pk AND p.turn_id = w.value)"
	}
	if q.Head > 0 {
		named[":head"] = q.Head
	}
	out := []Step{}
	err := sqlitex.Execute(conn, `SELECT `+stepColumns(q.Head > 0)+` FROM steps WHERE `+where+` ORDER BY seq`, &sqlitex.ExecOptions{
		Named: named,
		ResultFunc: func(st *sqlite.Stmt) error {
			t := byTurn[st.ColumnText(3)]
			s, err := scanStep(st, sid)
			if err != nil {
				return err
			}
			if t != nil {
				t.StepIDs = append(t.StepIDs, s.ID)
			}
			out = append(out, s)
			return nil
		},
	})
	return out, gaps, err
}

// gapTimes gives each gap the time of its first step (StepGap.FirstAt).
func gapTimes(conn *sqlite.Conn, pk int64, gaps []StepGap) error {
	if len(gaps) == 0 {
		return nil
	}
	firsts, _ := json.Marshal(GapFirsts(gaps))
	at := make(map[int64]string, len(gaps))
	err := sqlitex.Execute(conn, `SELECT p.seq, p.at FROM json_each(?) AS w CROSS JOIN steps p WHERE p.session_pk = ? AND p.seq = w.value`, &sqlitex.ExecOptions{
		Args:       []any{string(firsts), pk},
		ResultFunc: func(st *sqlite.Stmt) error { at[st.ColumnInt64(0)] = st.ColumnText(1); return nil },
	})
	SetFirstAt(gaps, at)
	return err
}

func turnIDsJSON(turns []Turn) string {
	ids := make([]string, len(turns))
	for i, t := range turns {
		ids[i] = t.ID
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// turnSeqs are the seqs of the steps of turns between q.StepsAfter and
// q.StepsBefore (SeqBounds), by turn: what StepWindow chooses from. They
// come from steps_by_turn alone, without an ORDER BY, which would sort
// every row in a temporary b-tree (StepWindow sorts them if need be).
func turnSeqs(conn *sqlite.Conn, pk int64, q DetailQuery, turns []Turn) (map[string][]int64, error) {
	after, before := q.SeqBounds()
	seqs := make(map[string][]int64, len(turns))
	err := sqlitex.Execute(conn, `SELECT w.key, p.seq FROM json_each(:turns) AS w CROSS JOIN steps p
		WHERE p.session_pk = :pk AND p.turn_id = w.value AND p.seq > :after AND p.seq < :before`, &sqlitex.ExecOptions{
		Named: map[string]any{":pk": pk, ":turns": turnIDsJSON(turns), ":after": after, ":before": before},
		ResultFunc: func(st *sqlite.Stmt) error {
			id := turns[st.ColumnInt(0)].ID
			seqs[id] = append(seqs[id], st.ColumnInt64(1))
			return nil
		},
	})
	return seqs, err
}

// stepColumns are the columns scanStep reads. With head, each text field
// is cut to its first :head characters and followed by its whole length.
func stepColumns(head bool) string {
	cut := func(col string) string {
		if !head {
			return col + ", NULL"
		}
		return fmt.Sprintf("substr(%[1]s, 1, :head), length(%[1]s)", col)
	}
	return `id, seq, segment_index, turn_id, actor_id, at, type, decision, outcome,
		  content_status, role, error, channels, flags, payload, ` +
		cut("stdout") + ", " + cut("stderr") + ", " + cut("text") + ", " + cut("old_string") + ", " + cut("new_string")
}

// bodyFields are the payload fields kept in columns of their own, in
// column order.
var bodyFields = [5]string{"stdout", "stderr", "text", "old_string", "new_string"}

func scanStep(st *sqlite.Stmt, sid string) (Step, error) {
	r := scanStepRow(st)
	return r.Step(sid)
}

// scanStepRow reads a row of stepColumns.
func scanStepRow(st *sqlite.Stmt) StepRow {
	r := StepRow{
		ID: st.ColumnText(0), Seq: st.ColumnInt64(1), SegmentIndex: st.ColumnInt64(2),
		TurnID: st.ColumnText(3), ActorID: st.ColumnText(4), At: st.ColumnText(5), Type: st.ColumnText(6),
		Decision: st.ColumnText(7), Outcome: st.ColumnText(8), ContentStatus: st.ColumnText(9), Role: st.ColumnText(10),
		Error: columnText(st, 11), Channels: st.ColumnText(12), Flags: st.ColumnText(13), Payload: st.ColumnText(14),
	}
	for i := range r.Bodies {
		col := 15 + 2*i // the value, then its whole length when cut
		r.Bodies[i], r.Lengths[i] = columnText(st, col), st.ColumnInt(col+1)
	}
	return r
}

// StepRow is a steps row as every backend stores it: the payload's text
// fields (bodyFields: stdout, stderr, text, old_string, new_string) in
// columns of their own, nil when absent. A read with DetailQuery.Head
// cuts each to its first Head characters and sets Lengths to the whole
// length in characters; else Lengths are 0.
type StepRow struct {
	ID                                     string
	Seq, SegmentIndex                      int64
	TurnID, ActorID, At, Type              string
	Decision, Outcome, ContentStatus, Role string
	Error                                  *string // JSON, nil when none
	Channels, Flags, Payload               string  // JSON
	Bodies                                 [5]*string
	Lengths                                [5]int
}

// Step is the step the row holds, in session sid, with Cut set for each
// field the read cut.
func (r *StepRow) Step(sid string) (Step, error) {
	s := Step{
		ID: r.ID, SessionID: sid, Seq: r.Seq, SegmentIndex: r.SegmentIndex,
		TurnID: r.TurnID, ActorID: r.ActorID, At: r.At, Type: r.Type,
		Decision: r.Decision, Outcome: r.Outcome, ContentStatus: r.ContentStatus,
	}
	if r.Error != nil {
		s.Error = &StepError{}
		if err := json.Unmarshal([]byte(*r.Error), s.Error); err != nil {
			return s, fmt.Errorf("step %s error: %w", s.ID, err)
		}
	}
	for _, col := range [...]struct {
		name, text string
		dst        any
	}{{"channels", r.Channels, &s.Channels}, {"flags", r.Flags, &s.Flags}, {"payload", r.Payload, &s.Payload}} {
		if err := json.Unmarshal([]byte(col.text), col.dst); err != nil {
			return s, fmt.Errorf("step %s %s: %w", s.ID, col.name, err)
		}
	}
	s.Payload.Role = r.Role
	for i, dst := range []**string{&s.Payload.Stdout, &s.Payload.Stderr, &s.Payload.Text, &s.Payload.OldString, &s.Payload.NewString} {
		v := r.Bodies[i]
		if v == nil {
			continue
		}
		*dst = v
		if n := r.Lengths[i]; n > utf8.RuneCountInString(*v) {
			if s.Cut == nil {
				s.Cut = map[string]int{}
			}
			s.Cut[bodyFields[i]] = n
		}
	}
	return s, nil
}

// Bytes is what the row holds of JSON and text: what TurnSteps counts
// against its budget.
func (r *StepRow) Bytes() int {
	n := len(r.Channels) + len(r.Flags) + len(r.Payload)
	if r.Error != nil {
		n += len(*r.Error)
	}
	for _, b := range r.Bodies {
		if b != nil {
			n += len(*b)
		}
	}
	return n
}
