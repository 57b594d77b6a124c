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
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// UsageReport is the body of GET /api/usage: the rows of one group, their
// total and the price table the estimates come from.
type UsageReport struct {
	Group     string            `json:"group"`
	Breakdown string            `json:"breakdown,omitempty"`
	Sort      string            `json:"sort,omitempty"`
	Since     string            `json:"since,omitempty"`
	Until     string            `json:"until,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	Model     string            `json:"model,omitempty"`
	Project   string            `json:"project,omitempty"`
	Rows      []store.UsageRow  `json:"rows"`
	Total     store.UsageRow    `json:"total"`
	Pricing   store.PricingInfo `json:"pricing"`
}

// maxUsageName bounds the agent and model parameters (short names).
const maxUsageName = 200

// maxUsageProject bounds the project parameter: a folder's path, at most
// Linux's PATH_MAX.
const maxUsageProject = 4096

// maxUsageTitles bounds the titles parameter: each title is a read.
const maxUsageTitles = 200

// maxUsageSessions bounds the session parameters: a page of the list.
const maxUsageSessions = pageSessions

// usageAPI is GET /api/usage?group=day|week|month|model|agent|project|session|block
// [&sort=tokens|cost][&breakdown=model|agent][&since=YYYY-MM-DD][&until=YYYY-MM-DD][&agent=<kind>][&model=<model>][&project=<root>][&session=<id>...]:
// the usage report; until is included. A bad parameter is 400 with a JSON error.
func usageAPI(st store.UsageReporter, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseUsageQuery(r.URL.Query(), store.UsageByDay)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		rep, err := usageReport(r.Context(), st, q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
}

// usageReport runs the store's report and adds its total.
func usageReport(ctx context.Context, st store.UsageReporter, q usageQuery) (UsageReport, error) {
	rows, err := store.UsageReport(ctx, st, q.UsageQuery)
	if err != nil {
		return UsageReport{}, err
	}
	table := pricing.Default()
	return UsageReport{Group: q.Group, Breakdown: q.Breakdown, Sort: q.Sort, Since: q.since, Until: q.until, Agent: q.Agent, Model: q.Model, Project: q.Project, Rows: rows,
		Total: store.UsageTotal(rows), Pricing: store.PricingInfo{Source: table.Source, AsOf: table.AsOf}}, nil
}

// usageQuery is a store query with the days as the request gave them.
type usageQuery struct {
	store.UsageQuery
	since, until string
}

// parseUsageQuery reads group (def when absent), sort, since, until (local
// days, until included), agent, model, project, titles
// (store.UsageQuery.Titles) and session, which may repeat
// (store.UsageQuery.Sessions).
func parseUsageQuery(v url.Values, def string) (usageQuery, error) {
	q := usageQuery{UsageQuery: store.UsageQuery{Group: v.Get("group"), Breakdown: v.Get("breakdown"), Sort: v.Get("sort"), Agent: v.Get("agent"), Model: v.Get("model"),
		Project: v.Get("project"), Sessions: v["session"]},
		since: v.Get("since"), until: v.Get("until")}
	if q.Group == "" {
		q.Group = def
	}
	if !slices.Contains(store.UsageGroups, q.Group) {
		return q, badRequest("query parameter group=%q is not valid: give one of %s", q.Group, strings.Join(store.UsageGroups, ", "))
	}
	if q.Breakdown != "" && !slices.Contains(store.UsageBreakdowns, q.Breakdown) {
		return q, badRequest("query parameter breakdown=%q is not valid: give one of %s", q.Breakdown, strings.Join(store.UsageBreakdowns, ", "))
	}
	if q.Sort != "" && !slices.Contains(store.UsageSorts, q.Sort) {
		return q, badRequest("query parameter sort=%q is not valid: give one of %s", q.Sort, strings.Join(store.UsageSorts, ", "))
	}
	if q.Sort != "" && slices.Contains(store.UsageTimeGroups, q.Group) {
		return q, badRequest("query parameter sort=%q is not valid with group=%s: its rows are in the order of time", q.Sort, q.Group)
	}
	if len(q.Agent) > maxUsageName {
		return q, badRequest("query parameter agent is longer than %d bytes", maxUsageName)
	}
	if len(q.Model) > maxUsageName {
		return q, badRequest("query parameter model is longer than %d bytes", maxUsageName)
	}
	if len(q.Project) > maxUsageProject {
		return q, badRequest("query parameter project is longer than %d bytes", maxUsageProject)
	}
	if len(q.Sessions) > maxUsageSessions {
		return q, badRequest("query parameter session is given %d times: give at most %d", len(q.Sessions), maxUsageSessions)
	}
	if t := v.Get("titles"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > maxUsageTitles {
			return q, badRequest("query parameter titles=%q is not valid: give 0 to %d", t, maxUsageTitles)
		}
		q.Titles = n
	}
	var err error
	if q.Since, err = parseDay(q.since, "since"); err != nil {
		return q, err
	}
	if q.Until, err = parseDay(q.until, "until"); err != nil {
		return q, err
	}
	if !q.Until.IsZero() {
		q.Until = q.Until.AddDate(0, 0, 1) // the last day is included
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return q, badRequest("query parameter since=%q is after until=%q", q.since, q.until)
	}
	return q, nil
}

// parseDay reads a local day (store.ParseDay); "" is no day.
func parseDay(s, name string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, ok := store.ParseDay(s); ok {
		return t, nil
	}
	return time.Time{}, badRequest("query parameter %s=%q is not valid: give a day as YYYY-MM-DD or YYYYMMDD", name, s)
}

func badRequest(format string, args ...any) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// UsageReports is GET /api/usage with the query's parameters, once for
// q.Group and once for each of more.
func (c CoreClient) UsageReports(ctx context.Context, uq store.UsageQuery, more ...string) ([][]store.UsageRow, error) {
	if uq.Unrecorded != nil {
		// /api/usage has no list filters: the core's list gives its
		// estimate itself (ListQuery.Estimate).
		return nil, errors.New("core client: a usage report of a list's sessions is asked of the list (estimate=1)")
	}
	q := url.Values{}
	if !uq.Since.IsZero() {
		q.Set("since", uq.Since.Format(time.DateOnly))
	}
	if !uq.Until.IsZero() {
		q.Set("until", uq.Until.AddDate(0, 0, -1).Format(time.DateOnly))
	}
	if uq.Agent != "" {
		q.Set("agent", uq.Agent)
	}
	if uq.Model != "" {
		q.Set("model", uq.Model)
	}
	if uq.Project != "" {
		q.Set("project", uq.Project)
	}
	if uq.Titles > 0 {
		q.Set("titles", strconv.Itoa(uq.Titles))
	}
	q["session"] = uq.Sessions
	if uq.Breakdown != "" {
		q.Set("breakdown", uq.Breakdown)
	}
	var reports [][]store.UsageRow
	for i, g := range append([]string{uq.Group}, more...) {
		q.Set("group", g)
		q.Del("sort")
		switch {
		case i == 0 && uq.Sort != "":
			q.Set("sort", uq.Sort)
		case i > 0 && g == store.UsageBySession && uq.SortSessions != "":
			q.Set("sort", uq.SortSessions)
		}
		var rep UsageReport
		if err := c.get(ctx, "/api/usage", q, &rep); err != nil {
			return nil, err
		}
		reports = append(reports, rep.Rows)
		q.Del("breakdown") // of q.Group alone
	}
	return reports, nil
}
