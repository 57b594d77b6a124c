package views

import "strconv"

// SearchPage is the page at /search: the query, its problem when it is
// malformed, and the hits grouped by session, newest first.
type SearchPage struct {
	Query          string
	Session        string          // the one session searched; empty for every session
	SessionHref    string          // its page
	EverywhereHref string          // the same query over every session
	Problem        string          // why the query was refused; empty when it ran
	Searched       bool            // a query ran (the page without q shows the help and Examples)
	Examples       []SearchExample // queries to start from, on the page without q
	Groups         []SearchGroup
	NextHref       string // the next page of hits; empty at the end
	Partial        bool   // the search stopped at its time limit, Budget, before the page was full
	Budget         string
	Demo           bool
}

// Summary says what the page shows: its hits and their sessions, newest
// first, and, when more pages follow, that these are this page's.
func (p SearchPage) Summary() string {
	hits := 0
	for _, g := range p.Groups {
		hits += len(g.Hits)
	}
	s := Plural(hits, "hit") + " in " + Plural(len(p.Groups), "session")
	if p.NextHref != "" {
		s += " on this page"
	}
	return s + ", newest first"
}

// SearchExample is a query the search page offers to start from: the
// query, its search and what it finds.
type SearchExample struct {
	Query, Href, Finds string
}

// SearchGroup is one session's hits.
type SearchGroup struct {
	Index     int // its place on the page, from 0
	SessionID string
	Agent     string
	Title     string
	Started   string
	StartedAt string // RFC 3339, for the time element
	Href      string
	Hits      []SearchHitRow
}

// HitID is the element id of the group's hit i, unique on the page, by
// which the keyboard's selection (j/k) finds it again.
func (g SearchGroup) HitID(i int) string {
	return "hit-" + strconv.Itoa(g.Index) + "-" + strconv.Itoa(i)
}

// SearchHitRow is one step that matched, linking to it on its session's
// page. Seq is 0 for a match on the session's agent or workspace.
type SearchHitRow struct {
	Seq     int64
	Type    string
	Label   string // a message's role, another tool's name (store.SearchHit.Label)
	Status  string
	Href    string
	Snippet []SnippetPart
	// Notes are the step's first notes, each cut to a few lines;
	// MoreNotes how many more it has.
	Notes     []HitNote
	MoreNotes int
	// ErrorType and ErrorMessage are the step's error (each cut by the
	// store, store.HitErrorChars); both empty when it has none.
	ErrorType, ErrorMessage string
}

// HitNote is a reviewer's note on a hit's step, its text in runs marked
// where a note: filter matched; the text is theirs, rendered escaped.
type HitNote struct {
	Author string
	Text   []SnippetPart
}

// SnippetPart is a run of a snippet's text, a match or not; the text is
// agent content, rendered escaped.
type SnippetPart struct {
	Text  string
	Match bool
}
