package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentreview/service/store"
)

// Reader is the store's read side.
type Reader interface {
	List(ctx context.Context, q store.ListQuery) (store.SessionList, error)
	Detail(ctx context.Context, id string, q store.DetailQuery) (store.SessionDetail, error)
	TurnSteps(ctx context.Context, id, turnID string, after int64, budget int) ([]store.Step, error)
	FileChanges(ctx context.Context, id string) ([]store.FileChange, error)
	NextProblem(ctx context.Context, id string, seq int64, back bool) (next int64, ok bool, err error)
	Searcher
	store.UsageReporter
}

// listSessions is GET /api/sessions[?agent=<kind>][&verdict=<state>][&owner=<user>][&limit=N][&after=<next>]:
// every session, or a page of them with a cursor to the next.
func listSessions(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseListQuery(r.URL.Query())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		l, err := st.List(r.Context(), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeList(w, r, log, l)
	})
}

// writeList answers l as writeJSON would, streamed, without encoding again
// the sessions the store remembers the encoding of: the whole list of a
// large store is mostly those bytes. WriteJSON writes nothing when it
// fails, so the error still gets its status.
func writeList(w http.ResponseWriter, r *http.Request, log *slog.Logger, l store.SessionList) {
	w.Header().Set("Content-Type", "application/json")
	if err := l.WriteJSON(w); err != nil {
		writeError(w, r, log, err)
		return
	}
	w.Write([]byte("\n"))
}

// sessionDetail is GET /api/sessions/:id: the whole session, or the part
// that the query parameters of DetailQuery ask for (turns, before, since,
// seq, head, steps, from, around, turn, steps_after, steps_before), which
// is how the review app reads it.
func sessionDetail(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseDetailQuery(r.URL.Query())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		d, err := st.Detail(r.Context(), sessionID(r), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
}

// parseDetailQuery reads a DetailQuery from query parameters; since is an
// updated_at timestamp as the API returns it.
func parseDetailQuery(v url.Values) (store.DetailQuery, error) {
	var q store.DetailQuery
	bad := func(name string) error {
		return &statusError{http.StatusBadRequest, fmt.Sprintf("query parameter %s=%q is not valid", name, v.Get(name))}
	}
	// Counts and seqs, none below 0.
	var turns, before, head, steps, after, most int64 = 0, 0, 0, 0, -1, 0
	for name, dst := range map[string]*int64{"turns": &turns, "before": &before, "head": &head, "steps": &steps,
		"steps_after": &after, "steps_before": &q.StepsBefore, "around": &q.Around, "most_changed": &most} {
		if s := v.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return q, bad(name)
			}
			*dst = n
		}
	}
	q.Turns, q.Before, q.Head, q.Steps, q.MostChanged = int(turns), int(before), int(head), int(steps), int(most)
	if after >= 0 {
		q.StepsAfter = &after
	}
	if s := v.Get("since"); s != "" {
		t, ok := store.ParseTimestamp(s)
		if !ok {
			return q, bad("since")
		}
		q.Since = t.UnixMicro()
	}
	if s := v.Get("seq"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return q, bad("seq")
		}
		q.Seq = &n
	}
	if s := v.Get("from"); s != "" {
		if q.From = parseSeqs(s, maxSeqs); q.From == nil {
			return q, bad("from")
		}
	}
	q.Turn = v.Get("turn")
	return q, nil
}

// maxSeqs bounds a list of steps in a query (from, open): a page's
// request line is bounded by the server's header limit already; this
// bounds the work of a list of short numbers.
const maxSeqs = 100_000

// parseSeqs reads a comma-separated list of at most limit seqs; nil when
// it is not one.
func parseSeqs(s string, limit int) []int64 {
	if strings.Count(s, ",") >= limit {
		return nil
	}
	parts := strings.Split(s, ",")
	seqs := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil
		}
		seqs[i] = n
	}
	return seqs
}

// seqsParam is seqs as parseSeqs reads them.
func seqsParam(seqs []int64) string {
	parts := make([]string, len(seqs))
	for i, n := range seqs {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

// listValues is q as query parameters, parseListQuery's inverse but for
// the limit.
func listValues(q store.ListQuery) url.Values {
	v := url.Values{}
	for name, val := range map[string]string{"agent": q.Agent, "verdict": q.Verdict, "unreviewed": flagParam(q.Unreviewed), "owner": q.Owner,
		"workspace": q.Workspace, "since": q.Since, "until": q.Until, "failed": flagParam(q.Failed), "flagged": flagParam(q.Flagged),
		"noted": flagParam(q.Noted), "cost": q.Cost, "after": q.After, "estimate": flagParam(q.Estimate)} {
		if val != "" {
			v.Set(name, val)
		}
	}
	return v
}

// parseListQuery reads a ListQuery from query parameters.
func parseListQuery(v url.Values) (store.ListQuery, error) {
	q := store.ListQuery{
		Agent: v.Get("agent"), Verdict: v.Get("verdict"), Owner: v.Get("owner"), Workspace: v.Get("workspace"), Since: v.Get("since"), Until: v.Get("until"),
		Failed: v.Get("failed") != "", Flagged: v.Get("flagged") != "", Noted: v.Get("noted") != "", Cost: v.Get("cost"), After: v.Get("after"),
		Unreviewed: v.Get("unreviewed") != "", Estimate: v.Get("estimate") != "",
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, &statusError{http.StatusBadRequest, fmt.Sprintf("query parameter limit=%q is not valid", s)}
		}
		q.Limit = n
	}
	return q, nil
}
