package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// searchFilters maps each filter of the query language (store.ParseQuery)
// to its condition, as SQLite's (s is the session, st the step; a
// session's own row has no step, so a step filter leaves it out); $ is
// the filter's value.
var searchFilters = map[string]string{
	"agent":     "s.agent_kind = $",
	"status":    "st.outcome = $",
	"flag":      "st.flag_count > 0 AND EXISTS (SELECT 1 FROM json_array_elements(st.flags::json) f WHERE $ IN ('*', f->>'kind'))", // flag:* any kind
	"path":      "(st.path IS NOT NULL OR st.command_files IS NOT NULL) AND strpos(coalesce(st.command_files, st.path), $) > 0",    // edits, reads and commands that name files (migrations 007, 012)
	"tool":      "st.tool_name = $",                                                                                                // the steps of type other that called it (migration 014)
	"command":   "CASE WHEN st.type = 'command' THEN st.payload::json->>'command' END = $",                                         // the runs of a command, written whole
	"note":      "EXISTS (SELECT 1 FROM notes n WHERE n.step_pk = st.pk AND " + noteHolds("n.folded", "$") + ")",                   // and store.SessionPartOf
	"workspace": "strpos(s.workspace_root, $) > 0",
	"verdict":   "s.verdict_state IS NOT DISTINCT FROM $", // verdict:none binds NULL: no verdict
	"type":      "st.type = ANY($::text[])",
	"after":     "s.started_ns >= $",
	"before":    "s.started_ns < $",
	"owner":     "s.owner_id = $",
	"session":   "s.id = $", // store.SearchQuery.Session
}

// searchQuery is a parsed query as SQL over search_docs: the conditions
// and their arguments.
type searchQuery struct {
	store.ParsedQuery
	where []string
	args  []any
}

// arg adds an argument and returns its placeholder.
func (q *searchQuery) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// cond adds a condition whose $ is v's placeholder.
func (q *searchQuery) cond(sql string, v any) {
	if s, ok := v.(string); ok && !storable(s) {
		q.where = append(q.where, "false") // no stored row has it: the session of a search in one
		return
	}
	q.where = append(q.where, strings.Replace(sql, "$", q.arg(v), 1))
}

// tsPhrase is a phrase of a query as tsquery text: its words in a row
// (<->), the last a prefix when the phrase is one; with and, its words in
// any order (&), for the rows whose tsvector has no positions. "" when it
// has no word.
func tsPhrase(p store.SearchPhrase, and bool) string {
	terms := store.SearchTerms(p.Text)
	op := " <-> "
	if and {
		op = " & "
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = tsLexeme(t)
		if i == len(terms)-1 && p.Prefix {
			parts[i] += ":*"
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, op) + ")"
}

// tsAny is the tsquery text that matches when any of the phrases does; ""
// when none can.
func tsAny(phrases []store.SearchPhrase, and bool) string {
	var parts []string
	for _, p := range phrases {
		if t := tsPhrase(p, and); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " | ")
}

// Search runs a query (store.ParseQuery) over every stored session, with
// the SQLite store's answers: hits newest session first and in step order
// (a session's own row first), the same snippets and cursors. It returns
// an *store.InvalidError for a malformed query and store.ErrBadCursor for
// an After that is not one of its Next cursors.
func (s *Store) Search(ctx context.Context, sq store.SearchQuery) (store.SearchResult, error) {
	res := store.SearchResult{Hits: []store.SearchHit{}}
	pq, err := sq.Parse()
	if err != nil {
		return res, fmt.Errorf("store: search: %w", err)
	}
	limit := sq.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, store.MaxSearchLimit)
	var from *searchKey
	if sq.After != "" {
		ns, pk, seq, err := store.ParseSearchCursor(sq.After)
		if err != nil {
			return res, err // its message is the answer's, as SQLite's
		}
		from = &searchKey{ns, pk, seq}
	}
	q := searchQuery{ParsedQuery: pq}
	var words []string
	for _, p := range pq.Words {
		w := tsPhrase(p, false)
		if w == "" {
			return res, nil // a word SQLite's tokenizer drops whole matches nothing
		}
		words = append(words, w)
	}
	// base is the query's rows: of filters alone, or of words, walked
	// newest session first (w.walk, and w.gin the same rows read from the
	// GIN index first).
	var base string
	var w wordSearch
	if len(words) > 0 {
		match := "d.doc @@ " + q.arg(strings.Join(words, " & ")) + "::tsquery"
		if x := tsAny(pq.Excluded, false); x != "" {
			match += " AND NOT d.doc @@ " + q.arg(x) + "::tsquery"
		}
		var all []string
		for _, p := range pq.Words {
			all = append(all, tsPhrase(p, true))
		}
		candidates := strings.Join(all, " & ")
		check := "d.doc IS NULL OR d.doc @@ " + q.arg(candidates) + "::tsquery"
		docs := "((d.exact AND " + match + ") OR (NOT d.exact AND (" + check + ")))"
		cols := `SELECT s.pk, s.id, s.agent_kind, s.started_at, s.started_ns, coalesce(st.seq, 0),
			  coalesce(st.type, 'session'), coalesce(st.outcome, ''), d.rid, NOT d.exact, coalesce(st.role, '') FROM `
		join := ` d JOIN sessions s ON s.pk = d.session_pk LEFT JOIN steps st ON st.pk = d.rid WHERE `
		base = cols + "search_docs" + join + docs
		w.candidates = candidates
		w.gin = "WITH d AS MATERIALIZED (SELECT rid, session_pk, exact FROM search_docs d WHERE " + docs + ") " + cols + "d" + join + "true"
	} else {
		exclude, check := "false", "false"
		if x := tsAny(pq.Excluded, false); x != "" {
			exclude = "d.exact AND d.doc @@ " + q.arg(x) + "::tsquery"
			check = "NOT d.exact AND (d.doc IS NULL OR d.doc @@ " + q.arg(tsAny(pq.Excluded, true)) + "::tsquery)"
		}
		base = `SELECT s.pk, s.id, s.agent_kind, s.started_at, s.started_ns, st.seq, st.type, st.outcome, st.pk,
			  coalesce(` + check + `, false), coalesce(st.role, '')
			FROM steps st JOIN sessions s ON s.pk = st.session_pk LEFT JOIN search_docs d ON d.rid = st.pk
			WHERE NOT coalesce(` + exclude + `, false)`
	}
	for _, f := range pq.Filters {
		q.cond(searchFilters[f.Key], f.Value)
		if store.IsSessionFilter(f.Key) {
			w.sessions.cond(searchFilters[f.Key], f.Value)
		}
		if c := store.SessionPartOf(f.Key); c != "" {
			q.where, w.sessions.where = append(q.where, c), append(w.sessions.where, c)
		}
	}
	base += conditions(q.where)
	if w.gin != "" {
		w.walk, w.gin, w.args = base, w.gin+conditions(q.where), q.args
	}

	// A page may take SearchBudget, as SQLite's walk: a walk of the
	// sessions stops between two windows once it is over (walkSessions),
	// with a partial page; pgx cancels a statement still running at its
	// end, and the search fails (TooSlowError), as a read of every match
	// (w.gin) or of filters alone does.
	caller := ctx
	ctx, cancel := context.WithTimeout(caller, store.SearchBudget)
	defer cancel()
	deadline := time.Now().Add(store.SearchBudget)
	var hits []searchRow
	var stopped *searchKey // the last session searched, when the walk stopped at its budget
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		// pgx prepares each statement once per connection, and from its
		// sixth run PostgreSQL may plan it for any argument: for a phrase
		// and an owner that plan read the phrase's GIN bitmap once per
		// session of the owner (700 ms a page at 1,000,000 steps, against
		// 36 ms planned for the arguments; docs/performance.md). A
		// search's best plan depends on its words, so each is planned
		// for its own.
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
			return err
		}
		var err error
		if w.walk != "" {
			hits, stopped, err = w.run(ctx, tx, pq, from, limit+1, deadline)
		} else {
			hits, err = readHits(ctx, tx, base, q.args, pq, from, limit+1)
		}
		if err != nil {
			return err
		}
		if err := hitNotes(ctx, tx, hits, pq.NoteValues()); err != nil {
			return err
		}
		return searchTitles(ctx, tx, hits)
	})
	if err != nil && ctx.Err() != nil && caller.Err() == nil {
		err = store.TooSlowError()
	}
	if err != nil {
		return store.SearchResult{}, fmt.Errorf("store: search: %w", err)
	}
	for _, h := range hits[:min(len(hits), limit)] {
		res.Hits = append(res.Hits, h.hit)
	}
	if len(hits) > limit {
		r := hits[limit-1]
		res.Next = store.SearchCursor(r.ns, r.pk, r.hit.Seq)
	} else if stopped != nil {
		res.Next, res.Partial = store.SearchCursor(stopped.ns, stopped.pk, store.WholeSession), true
	}
	return res, nil
}

// readHits reads pages of a search's rows after from until it has n hits
// or the rows end: rows whose text is checked in Go may fail the check.
func readHits(ctx context.Context, tx pgx.Tx, base string, args []any, pq store.ParsedQuery, from *searchKey, n int) ([]searchRow, error) {
	var hits []searchRow
	for len(hits) < n {
		want := n - len(hits)
		page, err := readSearchPage(ctx, tx, base, args, from, want)
		if err != nil {
			return nil, err
		}
		kept, err := checkRows(ctx, tx, page, pq)
		if err != nil {
			return nil, err
		}
		hits = append(hits, kept...)
		if len(page) < want {
			break
		}
		last := page[len(page)-1]
		from = &searchKey{last.ns, last.pk, last.hit.Seq}
	}
	return hits, nil
}

// walkSessions reads a word search's hits (readHits) a window of sessions
// at a time, newest first, and stops between two windows once the
// deadline has passed (store.SearchClock), as SQLite's walk does: with
// the hits so far and the last session searched, from which the next
// page goes on. A word whose matches are all in old sessions made one
// walk of every session read every newer session's rows in one
// statement: on a big store past the budget, so the search failed
// (TooSlowError) where SQLite's gave a partial page. After a first
// window that did not fill the page, a word of fewer than sparseHits
// rows is read from the GIN index for the sessions left. A window is of
// the sessions the query's filters of sessions keep; one that is
// searched quickly grows the next, up to maxWindow.
func (w wordSearch) walkSessions(ctx context.Context, tx pgx.Tx, pq store.ParsedQuery, from *searchKey, n int, deadline time.Time) ([]searchRow, *searchKey, error) {
	var hits []searchRow
	width := firstWindow
	for first := true; ; first = false {
		began := time.Now()
		end, more, err := windowEnd(ctx, tx, w.sessions, from, width)
		if err != nil {
			return nil, nil, err
		}
		window := w.walk
		if more {
			window += " AND (s.started_ns, s.pk) >= (" + strconv.FormatInt(end.ns, 10) + ", " + strconv.FormatInt(end.pk, 10) + ")"
		}
		got, err := readHits(ctx, tx, window, w.args, pq, from, n-len(hits))
		if err != nil {
			return nil, nil, err
		}
		hits = append(hits, got...)
		if len(hits) >= n || !more {
			return hits, nil, nil
		}
		from = &searchKey{end.ns, end.pk, store.WholeSession}
		if first {
			rows, err := w.count(ctx, tx, sparseHits)
			if err != nil {
				return nil, nil, err
			}
			if rows < sparseHits {
				got, err := readHits(ctx, tx, w.gin, w.args, pq, from, n-len(hits))
				return append(hits, got...), nil, err
			}
		}
		if store.SearchClock().After(deadline) {
			return hits, &end, nil
		}
		took, left := time.Since(began), time.Until(deadline)
		if took*4 < left {
			width = min(2*width, maxWindow)
		} else if took*2 > left {
			width = max(width/2, 1)
		}
	}
}

// firstWindow and maxWindow bound walkSessions' windows, in sessions.
// Variables so that the tests walk a session at a time.
var (
	firstWindow = 64
	maxWindow   = 4096
)

// windowEnd is the oldest session of a window of width sessions from
// from's (the cursor's session included unless every row of it was
// searched) that the conditions of sessions keep, and whether an older
// one is left: when none is, the window is every session after from.
func windowEnd(ctx context.Context, tx pgx.Tx, sessions searchQuery, from *searchKey, width int) (searchKey, bool, error) {
	if from != nil {
		op := "<="
		if from.seq == store.WholeSession {
			op = "<"
		}
		sessions.where, sessions.args = slices.Clip(sessions.where), slices.Clip(sessions.args) // the caller's stay as they are
		sessions.where = append(sessions.where, "(s.started_ns, s.pk) "+op+" ("+sessions.arg(from.ns)+", "+sessions.arg(from.pk)+")")
	}
	sql := "SELECT s.started_ns, s.pk FROM sessions s WHERE true" + conditions(sessions.where) +
		" ORDER BY s.started_ns DESC, s.pk DESC OFFSET " + strconv.Itoa(width-1) + " LIMIT 2"
	rows, _ := tx.Query(ctx, sql, sessions.args...)
	ends, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (searchKey, error) {
		var k searchKey
		return k, r.Scan(&k.ns, &k.pk)
	})
	if err != nil || len(ends) < 2 {
		return searchKey{}, false, err
	}
	return ends[0], true, nil
}

// rareHits is how many index rows a search's words may match for the
// search to read every match from the GIN index and sort them, rather
// than walk the sessions newest first: 5,000 rows, about 150 ms on the
// 10,000,000-step store (docs/performance.md "Team server"). sparseHits
// is the same bound for a walk whose first window did not fill its page:
// the words' rows are not among the newest sessions, and reading every
// match is cheaper than walking the older sessions' rows (a word of
// 14,400 rows in the 24 oldest of 1,664 sessions: 2-4 s walked, within
// the budget only on a small store; docs/performance.md). Variables so
// that the tests run every way.
var (
	rareHits   = 5000
	sparseHits = 50_000
)

// wordSearch is a search with words as SQL, in its two ways: walk, the
// rows walked newest session first, and gin, the same rows read from the
// GIN index first and sorted; their arguments; candidates, the tsquery
// of the rows the words may match (count); and sessions, the query's
// filters of sessions alone (windowEnd).
type wordSearch struct {
	walk, gin  string
	args       []any
	candidates string
	sessions   searchQuery
}

// run reads up to n hits after from: every match from the GIN index
// first when the words match fewer than rareHits rows, else by the walk.
func (w wordSearch) run(ctx context.Context, tx pgx.Tx, pq store.ParsedQuery, from *searchKey, n int, deadline time.Time) ([]searchRow, *searchKey, error) {
	rows, err := w.count(ctx, tx, rareHits)
	if err != nil {
		return nil, nil, err
	}
	if rows < rareHits {
		hits, err := readHits(ctx, tx, w.gin, w.args, pq, from, n)
		return hits, nil, err
	}
	return w.walkSessions(ctx, tx, pq, from, n, deadline)
}

// count counts the rows the GIN index gives for the words in any order,
// up to upTo. The planner walks sessions newest first and checks each
// one's rows, fast when matches are spread over the sessions; a word of
// a few old sessions makes that walk read every newer session's rows (10
// s at 10,000,000 steps, docs/performance.md "Team server"). The count
// is answered without reading a row (a phrase's positions are checked on
// each: a phrase of common words is rare but costly).
func (w wordSearch) count(ctx context.Context, tx pgx.Tx, upTo int) (int, error) {
	var n int
	err := tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT FROM search_docs d WHERE d.doc @@ $1::tsquery LIMIT $2) AS m", w.candidates, upTo).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count matches: %w", err)
	}
	return n, nil
}

// searchKey is where a hit sorts: its session's start and pk, then its
// seq (0 for the session's own row).
type searchKey struct{ ns, pk, seq int64 }

// searchRow is a hit and where it sorts, its index row (a step's pk or
// minus its session's), and whether its text must be checked in Go (its
// tsvector has no positions).
type searchRow struct {
	hit       store.SearchHit
	ns, pk    int64
	rid       int64
	checkInGo bool
}

// readSearchPage reads up to n rows of a search after from, in page
// order.
func readSearchPage(ctx context.Context, tx pgx.Tx, base string, args []any, from *searchKey, n int) ([]searchRow, error) {
	args = slices.Clone(args)
	if from != nil {
		args = append(args, from.ns, from.pk, from.seq)
	}
	args = append(args, n)
	rows, err := tx.Query(ctx, wrapPage(base, from != nil, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (searchRow, error) {
		var sr searchRow
		h := &sr.hit
		err := r.Scan(&sr.pk, &h.SessionID, &h.Agent, &h.StartedAt, &sr.ns, &h.Seq, &h.Type, &h.Status, &sr.rid, &sr.checkInGo, &h.Role)
		h.Matches = [][2]int{}
		return sr, err
	})
}

// wrapPage orders a search's rows, after the cursor's when there is one
// (its three arguments come last but one; the limit is last).
func wrapPage(base string, cursor bool, nargs int) string {
	sql := "SELECT * FROM (" + base + ") AS hit (pk, id, agent, started_at, ns, seq, type, status, rid, check_in_go, role)"
	if cursor {
		ns, pk, seq := "$"+strconv.Itoa(nargs-3), "$"+strconv.Itoa(nargs-2), "$"+strconv.Itoa(nargs-1)
		sql += " WHERE ns < " + ns + " OR (ns = " + ns + " AND (pk < " + pk + " OR (pk = " + pk + " AND seq > " + seq + ")))"
	}
	return sql + " ORDER BY ns DESC, pk DESC, seq, rid LIMIT $" + strconv.Itoa(nargs)
}

// checkRows reads the text of every row of a page, drops the rows whose
// text does not match (those to check in Go), and makes the snippets: of
// the query's words, or with filters alone the text's beginning, as
// FTS5's snippet gives it. Each text is let go once its row is done, so a
// page holds one of its texts at a time.
func checkRows(ctx context.Context, tx pgx.Tx, page []searchRow, pq store.ParsedQuery) ([]searchRow, error) {
	type checked struct {
		match         bool
		snippet, tool string
		matches       [][2]int
		err           *store.StepError
	}
	inGo := map[int64]bool{}
	var stepPKs, sessionPKs []int64
	for _, r := range page {
		inGo[r.rid] = r.checkInGo
		if r.rid < 0 {
			sessionPKs = append(sessionPKs, -r.rid)
		} else {
			stepPKs = append(stepPKs, r.rid)
		}
	}
	done := map[int64]checked{}
	// check matches a row's text, made only when the row is to be checked
	// in Go or shown.
	check := func(rid int64, text func() string, tool string, stepErr *store.StepError) {
		c, t := checked{match: true, tool: tool, err: stepErr}, ""
		if inGo[rid] {
			t = text()
			c.match = store.MatchesText(t, pq.Words, pq.Excluded)
		}
		if c.match {
			if !inGo[rid] {
				t = text()
			}
			c.snippet, c.matches = store.SearchSnippet(t, pq.Words)
		}
		done[rid] = c
	}
	if len(stepPKs) > 0 {
		rows, _ := tx.Query(ctx, `SELECT pk, payload, role, text, stdout, stderr, old_string, new_string, error, flags
			FROM steps WHERE pk = ANY($1)`, stepPKs)
		var pk int64
		var d store.StepDoc
		_, err := pgx.ForEachRow(rows, []any{&pk, &d.Payload, &d.Role, &d.Text, &d.Stdout, &d.Stderr, &d.OldString, &d.NewString, &d.Err, &d.Flags},
			func() error {
				var stepErr *store.StepError
				if d.Err != nil {
					stepErr = store.HitError(*d.Err)
				}
				check(pk, d.SearchText, store.ToolNameOf(d.Payload), stepErr)
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	if len(sessionPKs) > 0 {
		rows, _ := tx.Query(ctx, `SELECT pk, agent_kind, workspace_root, workspace_repo FROM sessions WHERE pk = ANY($1)`, sessionPKs)
		var pk int64
		var agent, root string
		var repo *string
		_, err := pgx.ForEachRow(rows, []any{&pk, &agent, &root, &repo},
			func() error {
				check(-pk, func() string { return store.SessionSearchText(agent, root, repo) }, "", nil)
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	kept := page[:0]
	for _, r := range page {
		c, ok := done[r.rid]
		if r.checkInGo && (!ok || !c.match) {
			continue
		}
		if ok {
			r.hit.Snippet, r.hit.Matches, r.hit.Tool, r.hit.Error = c.snippet, c.matches, c.tool, c.err
		}
		kept = append(kept, r)
	}
	return kept, nil
}

// noteHolds is the condition of a note's folded text (notes.folded)
// holding a note: filter's value, folded as well (store.FoldNote), as
// SQLite's.
func noteHolds(folded, value string) string {
	return "strpos(" + folded + ", " + value + ") > 0"
}

// hitNotesSQL is store.HitNotesSQL for PostgreSQL.
var hitNotesSQL = store.HitNotesSQL("SELECT unnest($1::bigint[])", "SELECT unnest($2::text[]) AS v", noteHolds("folded", "v"))

// hitNotes adds to the hits their steps' notes (hitNotesSQL),
// marked where values match (store.AddHitNote).
func hitNotes(ctx context.Context, tx pgx.Tx, hits []searchRow, values []string) error {
	at := make(map[int64]int, len(hits))
	var pks []int64
	for i, h := range hits {
		if h.rid > 0 {
			at[h.rid] = i
			pks = append(pks, h.rid)
		}
	}
	if len(pks) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, hitNotesSQL, pks, values)
	var pk int64
	var author, text string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&pk, &author, &text, &n}, func() error {
		store.AddHitNote(&hits[at[pk]].hit, author, text, n, values)
		return nil
	})
	return err
}

// searchTitles sets the title of each hit's session (sessionTitles).
func searchTitles(ctx context.Context, tx pgx.Tx, hits []searchRow) error {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.hit.SessionID
	}
	titles, err := sessionTitles(ctx, tx, ids)
	for i := range hits {
		hits[i].hit.Title = titles[hits[i].hit.SessionID]
	}
	return err
}

// sessionTitles is the title of each of the sessions ids names, as the
// list shows it (titlePromptSQL).
func sessionTitles(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, ids []string) (map[string]string, error) {
	rows, _ := db.Query(ctx, `SELECT s.id, `+titlePromptSQL+` FROM sessions s WHERE s.id = ANY($1)`, ids)
	titles := map[string]string{}
	var id, prompt string
	_, err := pgx.ForEachRow(rows, []any{&id, &prompt}, func() error { titles[id] = store.Title(prompt); return nil })
	return titles, err
}

// conditions joins SQL conditions with AND, each after an AND.
func conditions(where []string) string {
	var b strings.Builder
	for _, w := range where {
		b.WriteString(" AND (" + w + ")")
	}
	return b.String()
}
