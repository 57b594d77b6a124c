package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Searcher is the store's full-text search.
type Searcher interface {
	Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
}

// searchAPI is GET /api/search?q=<query>[&session=<id>][&limit=N][&after=<next>]:
// a page of hits (of one session with session); a malformed query is 400
// with its problems in details.
func searchAPI(st Searcher, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseSearchQuery(r.URL.Query())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		res, err := st.Search(r.Context(), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

// parseSearchQuery reads q, session, limit (1 to store.MaxSearchLimit)
// and after.
func parseSearchQuery(v url.Values) (store.SearchQuery, error) {
	q := store.SearchQuery{Q: v.Get("q"), After: v.Get("after"), Session: v.Get("session")}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return q, &statusError{http.StatusBadRequest, fmt.Sprintf("query parameter limit=%q is not valid: give 1 to %d", l, store.MaxSearchLimit)}
		}
		q.Limit = n
	}
	return q, nil
}

// Search is GET /api/search with the query's parameters.
func (c CoreClient) Search(ctx context.Context, sq store.SearchQuery) (store.SearchResult, error) {
	var res store.SearchResult
	q := url.Values{"q": {sq.Q}}
	if sq.After != "" {
		q.Set("after", sq.After)
	}
	if sq.Session != "" {
		q.Set("session", sq.Session)
	}
	if sq.Limit > 0 {
		q.Set("limit", strconv.Itoa(sq.Limit))
	}
	return res, c.get(ctx, "/api/search", q, &res)
}

// searchPage is GET /search?q=<query>[&session=<id>][&after=<next>]: the
// hits grouped by session (of one session with session: the session
// page's search box), each linking to its step. A malformed query is 400
// with the page telling what is wrong; no q shows the box and the help.
func searchPage(src PageSource, demo bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query()
		p := views.SearchPage{Query: v.Get("q"), Session: v.Get("session"), Demo: demo}
		if p.Session != "" {
			p.SessionHref = "/session?id=" + url.QueryEscape(p.Session)
			p.EverywhereHref = "/search?" + url.Values{"q": {p.Query}}.Encode()
		}
		if p.Query == "" {
			for _, e := range searchExamples {
				u := url.Values{"q": {e.query}}
				if p.Session != "" {
					u.Set("session", p.Session)
				}
				p.Examples = append(p.Examples, views.SearchExample{Query: e.query, Href: "/search?" + u.Encode(), Finds: e.finds})
			}
			render(w, r, log, http.StatusOK, views.Search(p))
			return
		}
		q := store.SearchQuery{Q: p.Query, Session: p.Session, After: v.Get("after"), Limit: pageHits}
		res, err := src.Search(r.Context(), q)
		var invalid *store.InvalidError
		switch {
		case errors.As(err, &invalid) && len(invalid.Problems) > 0:
			p.Problem = invalid.Problems[0].Message
		case errors.Is(err, store.ErrBadCursor):
			p.Problem = "has a page cursor (after) that is not one this page gave out"
		case err != nil:
			writeError(w, r, log, err)
			return
		}
		if p.Problem != "" {
			render(w, r, log, http.StatusBadRequest, views.Search(p))
			return
		}
		p.Searched, p.Partial, p.Budget = true, res.Partial, store.SearchBudget.String()
		p.Groups = searchGroups(res.Hits)
		if res.Next != "" {
			next := url.Values{"q": {p.Query}, "after": {res.Next}}
			if p.Session != "" {
				next.Set("session", p.Session)
			}
			p.NextHref = "/search?" + next.Encode()
		}
		render(w, r, log, http.StatusOK, views.Search(p))
	})
}

// searchExamples are the queries the page without one offers to start
// from, each with what it finds.
var searchExamples = []struct{ query, finds string }{
	{"status:failed", "failed steps, each with its error"},
	{"flag:*", "flagged steps"},
	{"type:command status:failed", "failed commands"},
	{"type:edit", "edits"},
	{"note:*", "steps with a reviewer's note"},
	{`"rm -rf"`, "a phrase, in any step"},
}

// pageHits is how many hits a page of /search shows.
const pageHits = 50

// noteChars is how much of a note a hit shows (the step shows it whole).
const noteChars = 300

// searchGroups puts consecutive hits of one session together (the store
// orders them by session).
func searchGroups(hits []store.SearchHit) []views.SearchGroup {
	var gs []views.SearchGroup
	for _, h := range hits {
		if len(gs) == 0 || gs[len(gs)-1].SessionID != h.SessionID {
			g := views.SearchGroup{
				Index: len(gs), SessionID: h.SessionID, Agent: shorten(h.Agent, lineChars), Title: oneLine(h.Title),
				StartedAt: h.StartedAt, Started: h.StartedAt, Href: "/session?id=" + url.QueryEscape(h.SessionID),
			}
			if t, ok := store.ParseTimestamp(h.StartedAt); ok {
				g.Started = t.Format("2006-01-02 15:04")
			}
			gs = append(gs, g)
		}
		g := &gs[len(gs)-1]
		snippet, matches := h.SnippetPastRole()
		row := views.SearchHitRow{Seq: h.Seq, Type: h.Type, Label: shorten(h.Label(), lineChars), Status: h.Status, Href: g.Href,
			Snippet: snippetParts(snippet, matches), MoreNotes: h.NoteCount - len(h.Notes)}
		for _, n := range h.Notes {
			row.Notes = append(row.Notes, views.HitNote{Author: shorten(n.Author, lineChars), Text: noteParts(n)})
		}
		if h.Error != nil {
			row.ErrorType, row.ErrorMessage = h.Error.Type, h.Error.Message
		}
		if h.Seq > 0 {
			row.Href += matchedParam(snippet, matches) + "#" + stepDOMID(h.Seq)
		}
		g.Hits = append(g.Hits, row)
	}
	return gs
}

// noteParts is a hit's note cut to noteChars (marked with "…" when cut),
// in runs marked where the query matched it.
func noteParts(n store.HitNote) []views.SnippetPart {
	text, more := clip(n.Text, noteChars)
	var ms [][2]int
	for _, m := range n.Matches {
		if m[1] <= len(text) {
			ms = append(ms, m)
		}
	}
	parts := snippetParts(text, ms)
	if more > 0 {
		parts = append(parts, views.SnippetPart{Text: "…"})
	}
	return parts
}

// matchedParam is "&q=" and the distinct words a hit's snippet matched,
// at most 8, for the session page to mark in the step (static/step-marks.js).
func matchedParam(snippet string, matches [][2]int) string {
	var words []string
	for _, m := range matches {
		if m[0] < 0 || m[1] > len(snippet) || m[0] >= m[1] {
			continue
		}
		if w := strings.ToLower(snippet[m[0]:m[1]]); !slices.Contains(words, w) && len(words) < 8 {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return ""
	}
	return "&q=" + url.QueryEscape(strings.Join(words, " "))
}

// snippetParts splits a snippet at its matches.
func snippetParts(s string, matches [][2]int) []views.SnippetPart {
	var parts []views.SnippetPart
	at := 0
	for _, m := range matches {
		if m[0] < at || m[1] > len(s) || m[0] > m[1] {
			continue
		}
		if m[0] > at {
			parts = append(parts, views.SnippetPart{Text: s[at:m[0]]})
		}
		parts = append(parts, views.SnippetPart{Text: s[m[0]:m[1]], Match: true})
		at = m[1]
	}
	if at < len(s) {
		parts = append(parts, views.SnippetPart{Text: s[at:]})
	}
	return parts
}
