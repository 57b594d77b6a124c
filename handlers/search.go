package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentreview/service/store"
)

// Searcher is the store's full-text search.
type Searcher interface {
	Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
}

// searchAPI is GET /api/search?q=<query>[&limit=N][&after=<next>]: a page
// of hits; a malformed query is 400 with its problems in details.
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

// parseSearchQuery reads q, limit (1 to store.MaxSearchLimit) and after.
func parseSearchQuery(v url.Values) (store.SearchQuery, error) {
	q := store.SearchQuery{Q: v.Get("q"), After: v.Get("after")}
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
	if sq.Limit > 0 {
		q.Set("limit", strconv.Itoa(sq.Limit))
	}
	return res, c.get(ctx, "/api/search", q, &res)
}
