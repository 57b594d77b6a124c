package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Search limits: a query longer than MaxQueryBytes or with more than
// MaxQueryTerms words and filters is refused; a page holds at most
// MaxSearchLimit hits.
const (
	MaxQueryBytes  = 1000
	MaxQueryTerms  = 32
	MaxSearchLimit = 200
)

// SearchQuery is one search: the query text (see ParseQuery) and a page.
type SearchQuery struct {
	Q       string
	Limit   int    // at most this many hits (0: 50; at most MaxSearchLimit)
	After   string // a Next cursor of an earlier page: the hits after it
	Session string // the id of the one session to search; "" for every session
}

// Parse reads the query (ParseQuery) with its Session as a filter of the
// session's id: any id, which a filter written in the query could not
// always spell (ids may hold spaces and quotes).
func (sq SearchQuery) Parse() (ParsedQuery, error) {
	pq, err := ParseQuery(sq.Q)
	if err == nil && sq.Session != "" {
		pq.Filters = append(pq.Filters, SearchFilter{"session", sq.Session})
	}
	return pq, err
}

// SearchHit is one step (or, with Seq 0 and Type "session", the session's
// own agent and workspace) that matches. Snippet is agent content, never
// HTML: Matches holds the [start, end) byte offsets of each match in it.
type SearchHit struct {
	SessionID string   `json:"session_id"`
	Agent     string   `json:"agent"`
	Title     string   `json:"title"`
	StartedAt string   `json:"started_at"`
	Seq       int64    `json:"seq"`
	Type      string   `json:"type"`
	Role      string   `json:"role,omitempty"` // a message's: user, assistant, thinking...
	Tool      string   `json:"tool,omitempty"` // the tool the step called, as the agent named it
	Status    string   `json:"status"`
	Snippet   string   `json:"snippet"`
	Matches   [][2]int `json:"matches"`
	// The step's notes (at most MaxHitNotes of them: those the query's
	// note: filters match first, then oldest first, HitNotesSQL), and
	// how many it has: a reviewer's word on the step, beside what the
	// agent recorded. Empty on a step without notes.
	Notes     []HitNote `json:"notes,omitempty"`
	NoteCount int       `json:"note_count,omitempty"`
	// The step's error as the agent reported it, its type and message
	// each cut at the end of a word to at most HitErrorChars characters
	// (marked with "…" when cut): why a failed or rejected step did not
	// do its work, which its first words seldom say. Nil when the step
	// recorded none.
	Error *StepError `json:"error,omitempty"`
}

// HitErrorChars is how much of its step's error type and message a hit
// holds.
const HitErrorChars = 200

// HitError is a hit's Error, from its step's error column as stored
// (JSON; empty when NULL).
func HitError(column string) *StepError {
	var e StepError
	if column == "" || json.Unmarshal([]byte(column), &e) != nil || e.Type == "" && e.Message == "" {
		return nil
	}
	e.Type, e.Message = cutAtWord(e.Type, HitErrorChars), cutAtWord(e.Message, HitErrorChars)
	return &e
}

// cutAtWord is s cut to at most n characters, at the end of its last
// word that fits, and marked with "…"; a first word longer than n is cut
// within it. s whole when it has at most n characters; spaces before
// the cut are dropped.
func cutAtWord(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	end := n
	for end > 0 && !unicode.IsSpace(r[n]) && !unicode.IsSpace(r[end-1]) { // n falls within a word: end before it
		end--
	}
	kept := strings.TrimRightFunc(string(r[:end]), unicode.IsSpace)
	if kept == "" {
		kept = string(r[:n])
	}
	return kept + "…"
}

// HitNote is a note of a hit's step: who wrote it and what, with the
// [start, end) byte offsets in Text of what the query's note: filters
// matched (none for note:*).
type HitNote struct {
	Author  string   `json:"author"`
	Text    string   `json:"text"`
	Matches [][2]int `json:"matches,omitempty"`
}

// MaxHitNotes is how many of its step's notes a hit holds.
const MaxHitNotes = 3

// HitNotesSQL reads the first MaxHitNotes notes of each step of a page
// and how many each has: those a note: filter's value matches first (so
// a step with many notes shows the ones found), oldest first within each
// (?1, a JSON array of the steps' pks, and ?2 of the note: filters'
// values; $1 and $2 on PostgreSQL, arrays). pks and values are how each
// backend lists them, and matches how it tests a note's text against a
// value v (a column of values) as its note: filter does.
func HitNotesSQL(pks, values, matches string) string {
	return `SELECT step_pk, author, text, n FROM (
		  SELECT step_pk, author, text, row_number() OVER (PARTITION BY step_pk
		      ORDER BY CASE WHEN EXISTS (SELECT 1 FROM (` + values + `) AS f WHERE ` + matches + `) THEN 0 ELSE 1 END, id) AS r,
		    count(*) OVER (PARTITION BY step_pk) AS n
		  FROM notes WHERE step_pk IN (` + pks + `)) AS x
		WHERE r <= ` + strconv.Itoa(MaxHitNotes) + ` ORDER BY step_pk, r`
}

// AddHitNote adds a note read by HitNotesSQL (its author, text and the
// step's count of notes) to the hit, with what the query's note: filters
// (pq.NoteValues) match in it.
func AddHitNote(h *SearchHit, author, text string, count int, values []string) {
	h.Notes, h.NoteCount = append(h.Notes, HitNote{author, text, noteMatches(text, values)}), count
}

// NoteValues are the values of a query's note: filters that name text
// (not note:*'s empty one), folded (FoldNote).
func (pq ParsedQuery) NoteValues() []string {
	var vs []string
	for _, f := range pq.Filters {
		if v, ok := f.Value.(string); ok && f.Key == "note" && v != "" {
			vs = append(vs, v)
		}
	}
	return vs
}

// noteMatches are where the values (folded, as NoteValues gives them)
// occur in a note's text as note: finds them (in the text folded,
// FoldNote), in order, overlapping ones joined.
func noteMatches(text string, values []string) [][2]int {
	// The text folded a character at a time, and where in the text each
	// byte of it comes from: a character's folded form may have more or
	// fewer bytes (İ is two, its i one).
	var b strings.Builder
	from := make([]int, 0, len(text)+1)
	for i, r := range text {
		n, _ := b.WriteRune(unicode.ToLower(r))
		for range n {
			from = append(from, i)
		}
	}
	from = append(from, len(text))
	folded := b.String()
	var ms [][2]int
	for _, v := range values {
		for at := 0; v != ""; {
			i := strings.Index(folded[at:], v)
			if i < 0 {
				break
			}
			ms = append(ms, [2]int{from[at+i], from[at+i+len(v)]})
			at += i + len(v)
		}
	}
	slices.SortFunc(ms, func(a, b [2]int) int { return a[0] - b[0] })
	var out [][2]int
	for _, m := range ms {
		if n := len(out); n > 0 && m[0] < out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], m[1])
			continue
		}
		out = append(out, m)
	}
	return out
}

// Label is what a view shows after a hit's type: a message's role, or
// the tool a step of another tool called; empty for the rest, whose type
// and snippet say what they are.
func (h SearchHit) Label() string {
	switch {
	case h.Role != "":
		return h.Role
	case h.Type == TypeOther:
		return h.Tool
	}
	return ""
}

// SnippetPastRole is a message's snippet without the role its indexed
// text begins with, for a view that shows the role beside the hit's type,
// with its matches moved to follow; the snippet as it is when a match is in
// the role (the role then says why the step was found) or it does not
// begin with it.
func (h SearchHit) SnippetPastRole() (string, [][2]int) {
	cut := len(h.Role) + 1
	if h.Role == "" || !strings.HasPrefix(h.Snippet, h.Role+"\n") {
		return h.Snippet, h.Matches
	}
	shifted := make([][2]int, 0, len(h.Matches))
	for _, m := range h.Matches {
		if m[0] < cut {
			return h.Snippet, h.Matches
		}
		shifted = append(shifted, [2]int{m[0] - cut, m[1] - cut})
	}
	return h.Snippet[cut:], shifted
}

// SearchResult is a page of hits, newest session first and in step order
// within a session; Next is the cursor of the next page, empty at the end.
// Partial says the page stopped at the search's time limit (SearchBudget)
// before it was full: Next then goes on from where it stopped.
type SearchResult struct {
	Hits    []SearchHit `json:"hits"`
	Next    string      `json:"next,omitempty"`
	Partial bool        `json:"partial,omitempty"`
}

// SearchBudget is how long a page of a search may look for hits. A query
// whose words match so many index terms that it takes longer must not
// hold a core that long (32 short prefixes at 1,000,000 steps ran until
// busyLimit ended them, a 500 after 15 s): a page stops at the budget
// with the hits of the sessions it has searched, Partial and a Next that
// goes on from there, or, when it searched no session in that time, fails
// with an *InvalidError that says so. A variable so that tests can change
// it.
var SearchBudget = 5 * time.Second

// SearchClock is the clock a walk checks its deadline with between two
// batches of sessions (wordPage): tests move it on, so that a walk stops
// after its first batch.
var SearchClock = time.Now

// TooSlowError is the error of a search that searched no session in its
// budget, or (PostgreSQL) whose statement was still running at its end.
func TooSlowError() error {
	return newInvalidSearch([]Problem{{Path: "q", Message: fmt.Sprintf("took longer than %s to search and was stopped: "+
		"use fewer words, longer prefixes (auth* rather than a*) or filters", SearchBudget)}})
}

// ParsedQuery is a search query as ParseQuery read it, in a form every
// backend turns into its own index's query.
type ParsedQuery struct {
	Words    []SearchPhrase // each must match
	Excluded []SearchPhrase // none may match
	Filters  []SearchFilter // each must hold
}

// SearchPhrase is a word or "phrase" of a query: its text as written
// (SearchTerms splits it into the words it matches, in a row) and whether
// its last word is a prefix (auth*).
type SearchPhrase struct {
	Text   string
	Prefix bool
}

// SearchFilter is a key:value filter of a query with its checked value:
// []string (the step types) for type:, int64 (unix nanoseconds) for after:
// and before:, the string as written for the others.
type SearchFilter struct {
	Key   string
	Value any
}

// SearchFilterKeys are the filters of the query language (ParseQuery).
var SearchFilterKeys = []string{"agent", "status", "flag", "path", "tool", "command", "note", "workspace", "verdict", "type", "after", "before", "owner"}

// query is a parsed search as SQLite's FTS5 index runs it.
type query struct {
	match    string // FTS5 expression of the words, "" when there are none
	exclude  string // FTS5 expression of the excluded words, "" when none
	where    []string
	args     []any
	sessions []string // the conditions of where that test a session alone (IsSessionFilter), for wordPage's walk
	sessArgs []any    // and their arguments
	hasWords bool
	words    []SearchPhrase // the phrases of match, for the snippets and the sessions' own rows
	notes    []string       // the values of the note: filters, for the hits' notes (ParsedQuery.NoteValues)
	excluded []SearchPhrase // the phrases of exclude
}

// searchFilters maps each filter to the SQL condition it adds (s is the
// session, st the step).
var searchFilters = map[string]string{
	"agent":     "s.agent_kind = ?",
	"status":    "st.outcome = ?",
	"flag":      "st.flag_count > 0 AND EXISTS (SELECT 1 FROM json_each(st.flags) WHERE ? IN ('*', json_extract(value, '$.kind')))",                               // flag:* any kind
	"path":      "(st.type IN ('edit', 'read') OR st.command_files IS NOT NULL) AND instr(coalesce(st.command_files, json_extract(st.payload, '$.path')), ?) > 0", // edits, reads and commands that name files (migration 021)
	"tool":      "st.tool_name = ?",                                                                                                                               // the steps of type other that called it (migration 024)
	"command":   "CASE WHEN st.type = 'command' THEN json_extract(st.payload, '$.command') END = ?",                                                               // the runs of a command, written whole (a row of Commands run)
	"note":      "EXISTS (SELECT 1 FROM notes n WHERE n.step_pk = st.pk AND " + noteHolds("n.folded", "?") + ")",                                                  // its value folded (FoldNote); note:* binds "", any note (and SessionPartOf)
	"workspace": "instr(s.workspace_root, ?) > 0",
	"verdict":   "s.verdict_state IS ?", // verdict:none binds NULL: no verdict
	"type":      "st.type IN (SELECT value FROM json_each(?))",
	"after":     "s.started_ns >= ?",
	"before":    "s.started_ns < ?",
	"owner":     "s.owner_id = ?",
	"session":   "s.id = ?", // SearchQuery.Session, not a filter of the query language
}

// ParseQuery reads a query; it returns an *InvalidError naming each
// problem. The language: words (found by their parts: auth.go,
// handlers/auth.go), "exact phrases", prefix*, -excluded, and filters
// key:value that also work alone: agent:, type: (one of the step types,
// several with |), status: (the outcome), flag: (a flag kind, * any), path: (part
// of a path), tool: (the tool a step of type other called, whole),
// command: (the command a step ran, whole), note: (part of a note on the step, ignoring case; * any
// note), workspace: (part of the root), after: and before: (a date,
// 2026-11-01, or an RFC 3339 time, on the session's start), verdict: (a
// state, common or not, or none: not reviewed) and owner: (the session's
// owner_id, a team server's user). A filter's value with spaces is quoted:
// verdict:"needs work".
func ParseQuery(text string) (ParsedQuery, error) {
	var q ParsedQuery
	var ps []Problem
	bad := func(format string, a ...any) { ps = append(ps, Problem{Path: "q", Message: fmt.Sprintf(format, a...)}) }
	if len(text) > MaxQueryBytes {
		bad("is longer than %d bytes", MaxQueryBytes)
		return q, newInvalidSearch(ps)
	}
	if !utf8.ValidString(text) {
		bad("is not valid UTF-8")
		return q, newInvalidSearch(ps)
	}
	if strings.IndexByte(text, 0) >= 0 {
		bad("has a NUL character") // SQLite's FTS5 would read its expression only up to it
		return q, newInvalidSearch(ps)
	}
	terms, err := splitTerms(text)
	if err != nil {
		bad("%s", err)
		return q, newInvalidSearch(ps)
	}
	if len(terms) == 0 {
		bad("is empty: give a word, a \"phrase\" or a filter such as agent:claude-code")
	}
	if len(terms) > MaxQueryTerms {
		bad("has %d words and filters; at most %d", len(terms), MaxQueryTerms)
	}
	for _, t := range terms {
		if key, value, ok := strings.Cut(t.text, ":"); ok && !t.quoted && !t.negated && slices.Contains(SearchFilterKeys, key) {
			if (key == "flag" || key == "note") && value == "" && t.prefix {
				value = "*" // flag:*, a flag of any kind; note:*, any note
			}
			if value == "" {
				bad("filter %s: has no value", key)
				continue
			}
			arg, err := filterArg(key, value)
			if err != nil {
				bad("filter %s: %s", key, err)
				continue
			}
			q.Filters = append(q.Filters, SearchFilter{key, arg})
			continue
		}
		if strings.IndexFunc(t.text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			bad("%q has no letters or digits to search for", t.written)
			continue
		}
		p := SearchPhrase{t.text, t.prefix}
		if t.negated {
			q.Excluded = append(q.Excluded, p)
		} else {
			q.Words = append(q.Words, p)
		}
	}
	if len(ps) == 0 && len(q.Words) == 0 && len(q.Filters) == 0 {
		bad("has only excluded words: add a word or a filter to search in")
	}
	if len(ps) > 0 {
		return q, newInvalidSearch(ps)
	}
	return q, nil
}

// parseQuery reads a query (SearchQuery.Parse) as FTS5 expressions and SQL.
func parseQuery(sq SearchQuery) (query, error) {
	pq, err := sq.Parse()
	if err != nil {
		return query{}, err
	}
	var q query
	var match, exclude []string
	for _, p := range pq.Words {
		match = append(match, ftsPhrase(p))
	}
	for _, p := range pq.Excluded {
		exclude = append(exclude, ftsPhrase(p))
	}
	for _, f := range pq.Filters {
		q.where = append(q.where, searchFilters[f.Key])
		arg := f.Value
		if types, ok := arg.([]string); ok {
			arg = `["` + strings.Join(types, `","`) + `"]`
		}
		q.args = append(q.args, arg)
		if IsSessionFilter(f.Key) {
			q.sessions, q.sessArgs = append(q.sessions, searchFilters[f.Key]), append(q.sessArgs, arg)
		}
		if c := SessionPartOf(f.Key); c != "" {
			q.where, q.sessions = append(q.where, c), append(q.sessions, c)
		}
	}
	q.match, q.exclude, q.hasWords, q.words, q.excluded = strings.Join(match, " AND "), strings.Join(exclude, " OR "), len(match) > 0, pq.Words, pq.Excluded
	q.notes = pq.NoteValues()
	return q, nil
}

func newInvalidSearch(ps []Problem) error {
	e := newInvalidError(ps)
	e.Subject = "search query"
	return e
}

// filterArg checks a filter's value and returns what its condition binds.
// VerdictNone is verdict:none, the sessions not reviewed yet.
const VerdictNone = "none"

func filterArg(key, value string) (any, error) {
	switch key {
	case "type":
		types := strings.Split(value, "|")
		for _, t := range types {
			if !slices.Contains(StepTypes, t) {
				return nil, fmt.Errorf("%q is not a step type (%s)", t, strings.Join(StepTypes, ", "))
			}
		}
		return types, nil
	case "verdict":
		if value == VerdictNone {
			return nil, nil // no verdict: the condition's IS NULL
		}
		var c reviewProblems // any state a verdict may have (Verdict.Check), not only VerdictStates
		if reviewText(&c, "state", value, MaxStateChars, true); len(c) > 0 {
			return nil, fmt.Errorf("%q is not a verdict's state: %s", value, c[0].Message)
		}
	case "note":
		if value == "*" {
			return "", nil // any note: every text holds the empty string
		}
		return FoldNote(value), nil // as the notes' texts are (notes.folded)
	case "after", "before":
		t, err := parseSearchTime(value)
		if err != nil {
			return nil, err
		}
		return StartedNS(t), nil
	}
	return value, nil
}

func parseSearchTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date (2026-11-01) or an RFC 3339 time", v)
}

// term is one word, phrase or filter of a query.
type term struct {
	text            string
	quoted, negated bool
	prefix          bool
	written         string // as the query has it, for a problem's message
}

// splitTerms splits a query at spaces outside quotes.
func splitTerms(s string) ([]term, error) {
	var terms []term
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return terms, nil
		}
		var t term
		from := s
		if strings.HasPrefix(s, "-") && len(s) > 1 && !unicode.IsSpace(rune(s[1])) {
			t.negated, s = true, s[1:]
		}
		if key, value, ok := strings.Cut(s, `:"`); ok && !t.negated && slices.Contains(SearchFilterKeys, key) {
			// A filter's value in quotes, with its spaces: verdict:"needs work".
			end := strings.IndexByte(value, '"')
			if end < 0 {
				return nil, fmt.Errorf("has a \" that is never closed")
			}
			t.text, s = key+":"+value[:end], value[end+1:]
		} else if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("has a \" that is never closed")
			}
			t.text, t.quoted, s = s[1:1+end], true, s[2+end:]
			if strings.HasPrefix(s, "*") {
				t.prefix, s = true, s[1:]
			}
		} else {
			end := strings.IndexFunc(s, unicode.IsSpace)
			if end < 0 {
				end = len(s)
			}
			t.text, s = s[:end], s[end:]
			if strings.HasSuffix(t.text, "*") {
				t.text, t.prefix = strings.TrimRight(t.text, "*"), true
			}
		}
		t.written = from[:len(from)-len(s)]
		terms = append(terms, t)
	}
}

// ftsPhrase is a phrase of a query as an FTS5 phrase: its text as the
// index is given text (FTSText: 修改 is the phrase 修, 改) in double quotes,
// so the tokenizer splits it into its parts and no character of it is FTS5
// syntax.
func ftsPhrase(t SearchPhrase) string {
	p := `"` + strings.ReplaceAll(FTSText(t.Text), `"`, `""`) + `"`
	if t.Prefix {
		p += "*"
	}
	return p
}

// Snippet markers: control characters that stored text cannot hold in a
// way that would confuse them with a match (they are stripped from it).
const (
	markOpen  = "\x02"
	markClose = "\x03"
)

// Search runs a query (ParseQuery) over every stored session. It returns
// an *InvalidError for a malformed query and ErrBadCursor for an After
// that is not one of its Next cursors.
func (s *Store) Search(ctx context.Context, sq SearchQuery) (SearchResult, error) {
	res := SearchResult{Hits: []SearchHit{}}
	q, err := parseQuery(sq)
	if err != nil {
		return res, fmt.Errorf("store: search: %w", err)
	}
	// The index follows the writes in the background: catch it up first,
	// so a search sees every committed write.
	if err := s.catchUpIndex(ctx); err != nil {
		return res, fmt.Errorf("store: search: %w", err)
	}
	limit := sq.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxSearchLimit)
	where, args := q.where, q.args
	var from *sessionKey // the walk's first session (wordPage); nil: the newest
	if sq.After != "" {
		ns, spk, seq, err := ParseSearchCursor(sq.After)
		if err != nil {
			return res, err // its message is the answer's, as List's
		}
		from = &sessionKey{ns, spk}
		if seq == WholeSession {
			from.pk-- // the walk starts after the cursor's session: as pk <= pk-1
		}
		where = append(where, afterCursor)
		args = append(args, ns, spk, ns, spk, seq)
	}
	match := q.match
	if q.exclude != "" && q.hasWords {
		match = "(" + q.match + ") NOT (" + q.exclude + ")"
	} else if q.exclude != "" {
		where = append(where, "st.pk NOT IN (SELECT rowid FROM idx.search WHERE search MATCH ?)")
		args = append(args, q.exclude)
	}

	var rows []pageRow
	var stopped *sessionKey // the last session searched, when the page stopped at its budget
	titles := map[int64]string{}
	err = s.read(ctx, func(conn *sqlite.Conn) error {
		// The walk is interrupted at the budget's end (and when ctx ends);
		// what comes after it, the snippets and titles of the hits found,
		// is not.
		walk, cancel := context.WithTimeout(ctx, SearchBudget)
		defer cancel()
		old := conn.SetInterrupt(walk.Done())
		var searched *sessionKey
		var err error
		if q.hasWords {
			rows, searched, err = wordPage(conn, match, q, from, where, args, limit+1, time.Now().Add(SearchBudget))
		} else {
			rows, err = readPage(conn, filterPageSQL(where), append(args, limit+1))
		}
		conn.SetInterrupt(old)
		if sqlite.ErrCode(err) == sqlite.ResultInterrupt && ctx.Err() == nil {
			if searched == nil {
				return TooSlowError()
			}
			stopped, err = searched, nil
		}
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			rids := make([]int64, len(rows))
			for i, r := range rows {
				rids[i] = r.rid
			}
			ids, err := json.Marshal(rids)
			if err != nil {
				return err
			}
			snippets, err := rowSnippets(conn, string(ids), q.words)
			if err != nil {
				return err
			}
			for i, r := range rows {
				sn := snippets[r.rid]
				rows[i].hit.Snippet, rows[i].hit.Matches, rows[i].hit.Tool, rows[i].hit.Error = sn.text, sn.matches, sn.tool, sn.err
			}
			if err := hitNotes(conn, rows, string(ids), q.notes); err != nil {
				return err
			}
		}
		for _, r := range rows {
			titles[r.pk] = ""
		}
		for pk := range titles {
			if titles[pk], err = sessionTitle(conn, pk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return SearchResult{}, fmt.Errorf("store: search: %w", err)
	}
	for _, r := range rows {
		r.hit.Title = titles[r.pk]
		res.Hits = append(res.Hits, r.hit)
	}
	if len(rows) > limit {
		res.Hits = res.Hits[:limit]
		r := rows[limit-1]
		res.Next = SearchCursor(r.ns, r.pk, r.hit.Seq)
	} else if stopped != nil {
		res.Next, res.Partial = SearchCursor(stopped.ns, stopped.pk, WholeSession), true
	}
	return res, nil
}

// filterPageSQL is the page query of filters alone (the conditions of
// where, then the page's size bound last): it walks the sessions in page
// order (migration 015's index read backwards, also when another index
// would find a filter's sessions: sessions_by_agent would leave the page
// to sort) and the steps of each by seq, so a page reads only as far as
// its last hit and sorts nothing. SQLite left to choose read every step
// of the store and sorted every hit: 0.8-1.5 s a page at 1,000,000 steps
// (BenchmarkSearch, docs/performance.md; TestFilterPageWalksInOrder).
func filterPageSQL(where []string) string {
	return `SELECT s.pk, s.id, s.agent_kind, s.started_at, s.started_ns, st.seq, st.type, st.outcome, st.pk, coalesce(st.role, '')
		FROM sessions s INDEXED BY sessions_search_order CROSS JOIN steps st ON st.session_pk = s.pk
		WHERE 1` + conditions(where) + `
		ORDER BY s.started_ns DESC, s.pk DESC, st.seq LIMIT ?`
}

// afterCursor keeps the hits after a cursor's: its started_ns and session
// pk, the two again, and its seq. As a range of (started_ns, pk), so that
// the walk starts at the cursor's session: as one OR of the cases, SQLite
// answered a page of after: from the cursor on by sorting every hit.
const afterCursor = "(s.started_ns, s.pk) <= (?, ?) AND (s.started_ns < ? OR s.pk <> ? OR coalesce(st.seq, 0) > ?)"

// pageRow is a hit of a page and where it sorts: its session's start and
// pk, and its index row (the step's pk, or minus the session's).
type pageRow struct {
	hit         SearchHit
	ns, pk, rid int64
}

// WholeSession is the seq of the cursor of a page that stopped at its
// budget (Partial): every row of its session was searched.
const WholeSession = math.MaxInt64

// sessionKey is where a session sorts: newest start first, then by pk
// from the highest; the zero key is before every session.
type sessionKey struct{ ns, pk int64 }

// readPage runs a page query: its columns are the session's pk, id, agent,
// start and start_ns, the step's seq, type and outcome, the index row, and
// the step's role.
func readPage(conn *sqlite.Conn, sql string, args []any) ([]pageRow, error) {
	var rows []pageRow
	err := sqlitex.Execute(conn, sql, &sqlitex.ExecOptions{
		Args: args,
		ResultFunc: func(st *sqlite.Stmt) error {
			rows = append(rows, pageRow{
				hit: SearchHit{
					SessionID: st.ColumnText(1), Agent: st.ColumnText(2), StartedAt: st.ColumnText(3),
					Seq: st.ColumnInt64(5), Type: st.ColumnText(6), Role: st.ColumnText(9), Status: st.ColumnText(7), Matches: [][2]int{},
				},
				ns: st.ColumnInt64(4), pk: st.ColumnInt64(0), rid: st.ColumnInt64(8),
			})
			return nil
		},
	})
	return rows, err
}

// walkSessionsSQL reads the sessions in page order from a cursor's
// session (?1 its started_ns, ?2 its pk; from the first when ?3 is
// false) that the conditions of sessions keep (their arguments from ?4
// on), with each one's span of index rows and its start (for the cursor
// of a page that stops at its budget). It reads the sessions in page
// order, as filterPageSQL does: by sessions_by_agent, say, SQLite sorted
// the sessions of each start time.
func walkSessionsSQL(sessions []string) string {
	return `SELECT s.pk, coalesce(sp.lo, 0), coalesce(sp.hi, -1), s.started_ns
	FROM sessions s INDEXED BY sessions_search_order LEFT JOIN idx.search_spans sp ON sp.session_pk = s.pk
	WHERE (NOT ?3 OR s.started_ns < ?1 OR (s.started_ns = ?1 AND s.pk <= ?2))` + conditions(sessions) + `
	ORDER BY s.started_ns DESC, s.pk DESC`
}

// IsSessionFilter reports a filter of the query language that tests a
// session alone, not its steps: a walk of the sessions newest first
// (SQLite's wordPage, PostgreSQL's walkSessions) visits only the sessions
// such filters keep, so "error agent:codex" does not read the hits of
// every newer session of another agent.
func IsSessionFilter(key string) bool {
	switch key {
	case "agent", "workspace", "verdict", "after", "before", "owner", "session":
		return true
	}
	return false
}

// SessionPartOf is what a step filter of the query language asks of the
// step's session, a condition without arguments ("" when none), the same
// SQL on both backends: a search adds it to its walk of the sessions, so
// "timeout note:*" reads the hits of the sessions with notes alone, not
// every hit of a common word (814 ms at 1,000,000 steps, the notes in the
// oldest session; docs/performance.md, "Notes in search").
func SessionPartOf(key string) string {
	if key == "note" {
		return NotedSessionSQL
	}
	return ""
}

// NotedSessionSQL is the condition of a session s with a note on a step:
// the list's noted filter, and a note: filter's session part.
const NotedSessionSQL = "EXISTS (SELECT 1 FROM notes n WHERE n.session_pk = s.pk)"

// maxWalkBatch is the most sessions wordPage reads the index rows of in
// one query.
const maxWalkBatch = 256

// wordPage finds up to n hits of an FTS5 expression in page order without
// reading every hit: it walks the sessions newest first (from the cursor's
// session on), a batch of 1, 2, 4 ... sessions at a time, and reads only
// the index rows in the batch's spans (idx.search_spans: a session's steps are
// the rows from its first step's pk to its last's, its own row is minus
// its pk), until it has n. A common word is answered from the newest
// session or two; a rare one costs about twice reading all its hits.
//
// The walk stops at the deadline, between two batches, or when the
// connection is interrupted (Search, SearchBudget) during one: it then
// returns the hits of the batches it finished and the last session of
// those (nil when it finished none), with the interrupt's error.
//
// The sessions' own rows (agent, workspace, repo) are found by a second
// MATCH, over the batch's session rows, except for a query with a prefix:
// FTS5 merges every term of a prefix for each MATCH, whatever its rowid
// range, so that MATCH doubled the time of a short prefix (re*: 1.1 s at
// 1,000,000 steps, 0.56 s without it). Such a query's session rows are
// read and matched in Go (ownRows), which for other words costs more than
// the MATCH (a word no session has: 33 against 20 ms over 11,601
// sessions; docs/performance.md, "One MATCH per batch of a prefix
// search").
func wordPage(conn *sqlite.Conn, match string, q query, from *sessionKey, where []string, args []any, n int, deadline time.Time) (rows []pageRow, searched *sessionKey, err error) {
	sessions := conn.Prep(walkSessionsSQL(q.sessions))
	defer sessions.Reset()
	if from != nil {
		sessions.BindInt64(1, from.ns)
		sessions.BindInt64(2, from.pk)
	}
	sessions.BindBool(3, from != nil)
	for i, arg := range q.sessArgs {
		switch v := arg.(type) {
		case int64:
			sessions.BindInt64(4+i, v)
		case string:
			sessions.BindText(4+i, v)
		case nil: // verdict:none
			sessions.BindNull(4 + i)
		default:
			return nil, nil, fmt.Errorf("a session filter's argument %T", arg)
		}
	}
	hits := `WITH hits (rid) AS (
		  SELECT rowid FROM idx.search WHERE search MATCH ?1 AND rowid BETWEEN ?2 AND ?3
		  UNION ALL
		  SELECT rowid FROM idx.search WHERE NOT ?6 AND search MATCH ?1 AND rowid BETWEEN ?4 AND ?5
		  UNION ALL
		  SELECT -value FROM json_each(?7))
		SELECT s.pk, s.id, s.agent_kind, s.started_at, s.started_ns AS ns, coalesce(st.seq, 0) AS seq,
		  coalesce(st.type, 'session'), coalesce(st.outcome, ''), hits.rid, coalesce(st.role, '')
		FROM hits LEFT JOIN steps st ON st.pk = hits.rid JOIN sessions s ON s.pk = coalesce(st.session_pk, -hits.rid)
		WHERE s.pk IN (SELECT value FROM json_each(?8))` + conditions(where) + `
		ORDER BY ns DESC, s.pk DESC, seq LIMIT ?`
	var own *textMatcher
	isPrefix := func(p SearchPhrase) bool { return p.Prefix }
	if slices.ContainsFunc(q.words, isPrefix) || slices.ContainsFunc(q.excluded, isPrefix) {
		own = newTextMatcher(q.words, q.excluded)
	}
	for size, more := 1, true; more && len(rows) < n; size = min(2*size, maxWalkBatch) {
		if searched != nil && !SearchClock().Before(deadline) {
			return rows, searched, sqlite.ResultInterrupt.ToError()
		}
		var pks []int64
		var last sessionKey
		lo, hi := int64(1), int64(0) // the steps' span: empty until a session has one
		for len(pks) < size {
			if more, err = sessions.Step(); err != nil {
				return rows, searched, err
			} else if !more {
				break
			}
			last = sessionKey{sessions.ColumnInt64(3), sessions.ColumnInt64(0)}
			pks = append(pks, last.pk)
			if l, h := sessions.ColumnInt64(1), sessions.ColumnInt64(2); l <= h {
				if lo > hi {
					lo, hi = l, h
				} else {
					lo, hi = min(lo, l), max(hi, h)
				}
			}
		}
		if len(pks) == 0 {
			break
		}
		ids, err := json.Marshal(pks)
		if err != nil {
			return nil, nil, err
		}
		owned := "[]"
		if own != nil {
			if owned, err = ownRows(conn, own, string(ids)); err != nil {
				return rows, searched, err
			}
		}
		batch, err := readPage(conn, hits, append([]any{match, lo, hi, -slices.Max(pks), -slices.Min(pks), own != nil, owned, string(ids)},
			append(slices.Clone(args), n-len(rows))...))
		if err != nil {
			return rows, searched, err
		}
		rows, searched = append(rows, batch...), &last
	}
	return rows, searched, nil
}

// ownRows is the JSON array of the sessions (of the JSON array ids) whose
// own row matches: the text it indexes, from the index's view, matched in
// Go.
func ownRows(conn *sqlite.Conn, m *textMatcher, ids string) (string, error) {
	own := []int64{}
	err := sqlitex.Execute(conn, `SELECT session_pk, body FROM search_session_docs
		WHERE session_pk IN (SELECT value FROM json_each(?))`, &sqlitex.ExecOptions{
		Args: []any{ids},
		ResultFunc: func(st *sqlite.Stmt) error {
			if m.matches(st.ColumnText(1)) {
				own = append(own, st.ColumnInt64(0))
			}
			return nil
		},
	})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(own)
	return string(b), err
}

// snippet is a hit's snippet and the byte offsets of its matches
// (SearchSnippet), and the tool its step called.
type snippet struct {
	text    string
	matches [][2]int
	tool    string
	err     *StepError
}

// rowSnippetsSQL reads the text of each index row of a page (?1), with
// its step's payload and error, each by its key.
const rowSnippetsSQL = `SELECT step_pk, body, s.payload, s.error
	FROM search_step_docs JOIN steps s ON s.pk = step_pk WHERE step_pk IN (SELECT value FROM json_each(?1) WHERE value > 0)
	UNION ALL
	SELECT -session_pk, body, NULL, NULL FROM search_session_docs WHERE session_pk IN (SELECT -value FROM json_each(?1) WHERE value < 0)`

// rowSnippets makes the snippet of each index row of a page (ids, a JSON
// array of the step's pk, or minus the session's) from the text it was indexed with, read from
// the same views as the index, which keeps no copy of it; with no words
// (filters alone), the text's beginning. Each text is let go once its
// snippet is made, so a page holds one of its hits' texts at
// a time, not all of them. The snippet is made in Go, as on PostgreSQL:
// FTS5's snippet() over a one-page index of the texts, as before,
// tokenized each text twice and took 155 of a page's 166 ms when its hits
// were long outputs (docs/performance.md, "A sweep of the routes on a
// real store").
func rowSnippets(conn *sqlite.Conn, ids string, words []SearchPhrase) (map[int64]snippet, error) {
	snippets := map[int64]snippet{}
	err := sqlitex.Execute(conn, rowSnippetsSQL,
		&sqlitex.ExecOptions{
			Args: []any{ids},
			ResultFunc: func(st *sqlite.Stmt) error {
				s := snippet{tool: ToolNameOf(st.ColumnText(2)), err: HitError(st.ColumnText(3))}
				s.text, s.matches = SearchSnippet(st.ColumnText(1), words)
				snippets[st.ColumnInt64(0)] = s
				return nil
			},
		})
	return snippets, err
}

// hitNotes adds to the hits of a page their steps' notes (HitNotesSQL),
// marked where the note: filters' values match; ids is the JSON array of the rows' index rows (a step's pk, or minus a
// session's, which has no notes).
func hitNotes(conn *sqlite.Conn, rows []pageRow, ids string, values []string) error {
	at := make(map[int64]int, len(rows))
	for i, r := range rows {
		at[r.rid] = i
	}
	vs, err := json.Marshal(append([]string{}, values...)) // [], not null, for none
	if err != nil {
		return err
	}
	return sqlitex.Execute(conn, HitNotesSQL("SELECT value FROM json_each(?1) WHERE value > 0", "SELECT value AS v FROM json_each(?2)",
		noteHolds("folded", "v")), &sqlitex.ExecOptions{
		Args: []any{ids, string(vs)},
		ResultFunc: func(st *sqlite.Stmt) error {
			AddHitNote(&rows[at[st.ColumnInt64(0)]].hit, st.ColumnText(1), st.ColumnText(2), st.ColumnInt(3), values)
			return nil
		},
	})
}

// noteHolds is the condition of a note's folded text (notes.folded)
// holding a note: filter's value, folded as well (filterArg).
func noteHolds(folded, value string) string {
	return "instr(" + folded + ", " + value + ") > 0"
}

// conditions joins SQL conditions with AND, each after an AND.
func conditions(where []string) string {
	var b strings.Builder
	for _, w := range where {
		b.WriteString(" AND (" + w + ")")
	}
	return b.String()
}

// sessionTitle is the session's title as the list shows it, from its
// first prompt (titlePromptSQL).
func sessionTitle(conn *sqlite.Conn, pk int64) (string, error) {
	var prompt int64
	err := sqlitex.Execute(conn, `SELECT `+titlePromptSQL+` FROM sessions s WHERE s.pk = ?`, &sqlitex.ExecOptions{
		Args:       []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error { prompt = st.ColumnInt64(0); return nil },
	})
	if err != nil || prompt == 0 {
		return "", err
	}
	text, err := readHead(conn, "text", prompt, TitleChars)
	return Title(text), err
}

// SearchCursor is the Next cursor of a page whose last hit is the step
// seq (0 for the session's own row) of the session pk started at ns.
func SearchCursor(ns, pk, seq int64) string {
	return fmt.Sprintf("%d:%d:%d", ns, pk, seq)
}

// ParseSearchCursor reads a Next cursor (SearchCursor); ErrBadCursor when
// it is not one.
func ParseSearchCursor(c string) (ns, pk, seq int64, err error) {
	parts := strings.Split(c, ":")
	if len(parts) != 3 {
		return 0, 0, 0, ErrBadCursor
	}
	var n [3]int64
	for i, p := range parts {
		if n[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return 0, 0, 0, ErrBadCursor
		}
	}
	return n[0], n[1], n[2], nil
}

// splitMarks removes the snippet markers and returns the byte offsets of
// the text between them, a match that starts where the one before it ends
// joined to it: FTS5 closes and opens its marker around a joiner FTSText
// put between two words (修\u2060改), which the snippet leaves out, and
// the same text without it (PostgreSQL's) is marked as one.
func splitMarks(s string) (string, [][2]int) {
	matches := [][2]int{}
	var b strings.Builder
	b.Grow(len(s))
	open := -1
	for _, r := range s {
		switch string(r) {
		case markOpen:
			open = b.Len()
		case markClose:
			if open < 0 {
				continue
			}
			if n := len(matches); n > 0 && matches[n-1][1] == open {
				matches[n-1][1] = b.Len()
			} else {
				matches = append(matches, [2]int{open, b.Len()})
			}
			open = -1
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), matches
}
