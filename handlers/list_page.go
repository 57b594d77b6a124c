package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// listPage is GET /: the session list of the review app. GET /rows is the
// region a live update redraws. A team server's list shows each session's
// owner and offers the owner filter.
func listPage(src PageSource, demo, team bool, log *slog.Logger, rowsOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseListQuery(r.URL.Query())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		q.Limit = pageSessions
		l, err := src.List(r.Context(), q)
		if problem := listProblem(err); problem != "" {
			// The page, with the filters as given and what is wrong with
			// them, rather than the API's JSON.
			p := listPageModel(store.SessionList{}, q, time.Now())
			p.Demo, p.Filter.ShowOwner, p.Problem = demo, team, problem
			if rowsOnly {
				render(w, r, log, http.StatusBadRequest, views.SessionRows(p))
				return
			}
			render(w, r, log, http.StatusBadRequest, views.SessionList(p))
			return
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p := listPageModel(l, q, time.Now())
		if err := priceUsage(r.Context(), src, l.Sessions, p.Rows); err != nil {
			writeError(w, r, log, err)
			return
		}
		p.Demo = demo
		p.Filter.ShowOwner = team
		if team {
			for i, s := range l.Sessions {
				p.Rows[i].Owner = shorten(s.OwnerID, lineChars)
			}
		}
		if rowsOnly {
			render(w, r, log, http.StatusOK, views.SessionRows(p))
			return
		}
		render(w, r, log, http.StatusOK, views.SessionList(p))
	})
}

// totalEstimate is GET /total-estimate?<the list's filters>: the estimate
// of the cost the list's total cannot show (store.Total.EstimatedCostUSD),
// which the page loads after it, as it reads the usage of every session
// the filters keep; nothing when there is none.
func totalEstimate(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := parseListQuery(r.URL.Query())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		q.Limit, q.After, q.Estimate = 1, "", true
		l, err := src.List(r.Context(), q)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		var v views.TotalEstimateView
		if usd := l.Total.EstimatedCostUSD; usd != nil {
			table := pricing.Default()
			v = views.TotalEstimateView{Estimated: fmt.Sprintf("≈ $%.2f estimated", *usd), Unpriced: l.Total.UnpricedModels,
				Pricing: "The requests that reported no cost. " + pricingNote(table.Source, table.AsOf)}
		}
		render(w, r, log, http.StatusOK, views.TotalEstimate(v))
	})
}

// listProblem is what the list page says of a filter or page cursor it
// cannot read, or "" for any other error.
func listProblem(err error) string {
	switch {
	case errors.Is(err, store.ErrBadFilter):
		return "This filter cannot be read: " + strings.TrimPrefix(err.Error(), store.ErrBadFilter.Error()+": ") + "."
	case errors.Is(err, store.ErrBadCursor):
		return "This page's cursor (after) is not one the list gave out."
	}
	return ""
}

func listPageModel(l store.SessionList, q store.ListQuery, now time.Time) views.ListPage {
	p := views.ListPage{Agent: q.Agent, Verdict: q.Verdict, Total: l.Total.Sessions, Cost: totalCost(l.Total), Filter: views.ListFilter{
		Agent: q.Agent, Verdict: q.Verdict, Unreviewed: q.Unreviewed, Owner: q.Owner, Workspace: q.Workspace, Since: q.Since, Until: q.Until,
		Failed: q.Failed, Flagged: q.Flagged, Noted: q.Noted, Cost: q.Cost,
	}}
	p.Filtered = p.Filter != views.ListFilter{}
	// href is the list with the filters of q, changed by kv (an empty value drops one).
	href := func(path string, kv ...string) string {
		v := listValues(q)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				v.Del(kv[i])
			} else {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	p.RowsURL = href("/rows")
	if l.Total.Sessions > 0 {
		p.EstimateURL = href("/total-estimate", "after", "")
	}
	p.AllAgentsHref = href("/", "agent", "", "after", "")
	if l.Next != "" {
		p.OlderHref = href("/", "after", l.Next)
	}
	if q.After != "" {
		p.NewestHref = href("/", "after", "")
	}
	for _, a := range l.Agents {
		p.Chips = append(p.Chips, views.AgentChip{
			Label: shorten(a.Kind, lineChars), Href: href("/", "agent", a.Kind, "after", ""), Count: a.Sessions, Active: a.Kind == q.Agent,
		})
	}
	p.VerdictChips = verdictChips(l, q, func(state, unreviewed string) string {
		return href("/", "verdict", state, "unreviewed", unreviewed, "after", "")
	})
	for _, s := range l.Sessions {
		p.Rows = append(p.Rows, sessionRow(s, now))
	}
	return p
}

// priceUsage gives each row whose session has no metrics (its cost "not
// recorded") the cost of its usage records as the usage page by session
// counts it: reported where the responses reported a cost, the other
// requests estimated from the price table. One report over the page's
// sessions (usage_hours: a few rows a session, however long it is).
func priceUsage(ctx context.Context, src store.UsageReporter, sessions []store.SessionOverview, rows []views.SessionRow) error {
	var ids []string
	for _, s := range sessions {
		if s.Metrics == nil {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	report, err := store.UsageReport(ctx, src, store.UsageQuery{Group: store.UsageBySession, Sessions: ids})
	if err != nil {
		return err
	}
	bySession := make(map[string]store.UsageRow, len(report))
	for _, u := range report {
		bySession[u.Key] = u
	}
	table := pricing.Default()
	note := pricingNote(table.Source, table.AsOf)
	for i, s := range sessions {
		if u, ok := bySession[s.ID]; ok {
			bar := usageBar(u, 0)
			rows[i].Usage, rows[i].Pricing = &bar, note
		}
	}
	return nil
}

// flagParam is a yes/no filter as a URL value: "1", or "" to leave it out.
func flagParam(on bool) string {
	if on {
		return "1"
	}
	return ""
}

// listVerdict is a row's verdict, its note (shown when the badge is
// hovered) cut to a line's length: a page of 100 rows holds no note whole.
func listVerdict(v *store.Verdict) *views.VerdictView {
	w := verdictView(v)
	if w != nil {
		w.Note = shorten(w.Note, lineChars)
	}
	return w
}

func sessionRow(s store.SessionOverview, now time.Time) views.SessionRow {
	r := views.SessionRow{
		ID: s.ID, ShortID: shortID(s.ID), Href: "/session?id=" + url.QueryEscape(s.ID),
		AgentKind: shorten(s.Agent.Kind, lineChars), AgentVersion: shorten(s.Agent.Version, lineChars), Title: oneLine(s.Summary.Title),
		Workspace: shorten(path.Base(s.Workspace.Root), lineChars), StartedISO: s.StartedAt,
		Failed: s.Summary.Failed, RefOnly: s.Summary.ReferenceOnly, Flags: s.Summary.Flags, Notes: s.Summary.Notes,
		Cost: cost(s.Metrics), Verdict: listVerdict(s.Verdict),
		FailedHref: sessionSearchHref(s.ID, failedFilter), FlagsHref: sessionSearchHref(s.ID, flaggedFilter),
	}
	if t, ok := store.ParseTimestamp(s.StartedAt); ok {
		r.StartedDate = t.Format("2006-01-02 15:04")
		r.StartedAgo = ago(now.Sub(t))
	}
	r.Counts = typeCounts(s.Summary.StepsByType, r.Href+"#tools")
	return r
}

// typeCounts are a session's step counts by type, in StepTypes' order,
// leaving out those it has none of; the others' links to tools, its
// Other tools, which says which they are.
func typeCounts(byType map[string]int, tools string) []views.TypeCount {
	var counts []views.TypeCount
	for _, typ := range store.StepTypes {
		if n := byType[typ]; n > 0 {
			c := views.TypeCount{Type: typ, Count: n}
			if typ == store.TypeOther {
				c.Href = tools
			}
			counts = append(counts, c)
		}
	}
	return counts
}

// sessionSearchHref is the search page of query within one session.
func sessionSearchHref(id, query string) string {
	return "/search?" + url.Values{"q": {query}, "session": {id}}.Encode()
}
