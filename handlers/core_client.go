package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"

	"github.com/agentreview/service/store"
)

// CoreClient reads what the pages show from a core server's JSON routes:
// the UI development server (`service dev`) renders the same views from it.
type CoreClient struct {
	Base *url.URL
	HTTP *http.Client
}

func (c CoreClient) get(ctx context.Context, path string, query url.Values, v any) error {
	u := c.Base.JoinPath(path)
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("core %s: %w", c.Base, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound:
		return store.ErrNotFound
	case res.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("core GET %s: %s: %s", u.Path, res.Status, body)
	}
	return json.NewDecoder(res.Body).Decode(v)
}

// List is GET /api/sessions with the query's parameters.
func (c CoreClient) List(ctx context.Context, lq store.ListQuery) (store.SessionList, error) {
	var l store.SessionList
	q := listValues(lq)
	if lq.Limit > 0 {
		q.Set("limit", strconv.Itoa(lq.Limit))
	}
	return l, c.get(ctx, "/api/sessions", q, &l)
}

// Detail is GET /api/sessions/<id> with the query's parameters.
func (c CoreClient) Detail(ctx context.Context, id string, dq store.DetailQuery) (store.SessionDetail, error) {
	var d store.SessionDetail
	q := url.Values{}
	for name, n := range map[string]int64{"turns": int64(dq.Turns), "before": int64(dq.Before), "head": int64(dq.Head),
		"steps": int64(dq.Steps), "steps_before": dq.StepsBefore, "around": dq.Around, "most_changed": int64(dq.MostChanged)} {
		if n > 0 {
			q.Set(name, strconv.FormatInt(n, 10))
		}
	}
	if dq.StepsAfter != nil {
		q.Set("steps_after", strconv.FormatInt(*dq.StepsAfter, 10))
	}
	if dq.Turn != "" {
		q.Set("turn", dq.Turn)
	}
	if len(dq.From) > 0 {
		q.Set("from", seqsParam(dq.From))
	}
	if dq.Since > 0 {
		q.Set("since", store.FormatStamp(dq.Since))
	}
	if dq.Seq != nil {
		q.Set("seq", strconv.FormatInt(*dq.Seq, 10))
	}
	return d, c.get(ctx, "/api/sessions/"+url.PathEscape(id), q, &d)
}

// Review is GET /api/sessions/<id>/export/review.
func (c CoreClient) Review(ctx context.Context, id string) (Review, error) {
	var rv Review
	return rv, c.get(ctx, "/api/sessions/"+url.PathEscape(id)+"/export/review", nil, &rv)
}

// coreProxy forwards /api to the core, streams included.
func coreProxy(core *url.URL) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(core) },
		FlushInterval: -1, // event streams flush at once
	}
}

// NextProblem is the core's GET /session/problem, which goes round at
// either end itself: ok is false only for a session without a problem.
func (c CoreClient) NextProblem(ctx context.Context, id string, seq int64, back bool) (int64, bool, error) {
	q := url.Values{"id": {id}}
	if back {
		q.Set("before", strconv.FormatInt(seq, 10))
	} else {
		q.Set("after", strconv.FormatInt(seq, 10))
	}
	var a problemAnswer
	if err := c.get(ctx, "/session/problem", q, &a); err != nil || a.Seq == nil {
		return 0, false, err
	}
	return *a.Seq, true, nil
}

// FileChanges is GET /api/sessions/<id>/changes.
func (c CoreClient) FileChanges(ctx context.Context, id string) ([]store.FileChange, error) {
	var a changesAnswer
	err := c.get(ctx, "/api/sessions/"+url.PathEscape(id)+"/changes", nil, &a)
	return a.Files, err
}
