package handlers

import (
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// listPage is GET /: the session list of the review app. GET /rows is the
// region a live update redraws.
func listPage(src PageSource, demo bool, log *slog.Logger, rowsOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, after := r.URL.Query().Get("agent"), r.URL.Query().Get("after")
		l, err := src.List(r.Context(), store.ListQuery{Agent: agent, After: after, Limit: pageSessions})
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p := listPageModel(l, agent, after, time.Now())
		p.Demo = demo
		if rowsOnly {
			render(w, r, log, http.StatusOK, views.SessionRows(p))
			return
		}
		render(w, r, log, http.StatusOK, views.SessionList(p))
	})
}

func listPageModel(l store.SessionList, agent, after string, now time.Time) views.ListPage {
	p := views.ListPage{Agent: agent, Total: l.Total.Sessions, Cost: totalCost(l.Total)}
	page := func(path, after string) string {
		v := url.Values{}
		if agent != "" {
			v.Set("agent", agent)
		}
		if after != "" {
			v.Set("after", after)
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	p.RowsURL = page("/rows", after)
	if l.Next != "" {
		p.OlderHref = page("/", l.Next)
	}
	if after != "" {
		p.NewestHref = page("/", "")
	}
	for _, a := range l.Agents {
		p.Chips = append(p.Chips, views.AgentChip{
			Label: shorten(a.Kind, lineChars), Href: "/?agent=" + url.QueryEscape(a.Kind), Count: a.Sessions, Active: a.Kind == agent,
		})
	}
	for _, s := range l.Sessions {
		p.Rows = append(p.Rows, sessionRow(s, now))
	}
	return p
}

func sessionRow(s store.SessionOverview, now time.Time) views.SessionRow {
	r := views.SessionRow{
		ID: s.ID, ShortID: shortID(s.ID), Href: "/session?id=" + url.QueryEscape(s.ID),
		AgentKind: shorten(s.Agent.Kind, lineChars), AgentVersion: shorten(s.Agent.Version, lineChars), Title: oneLine(s.Summary.Title),
		Workspace: shorten(path.Base(s.Workspace.Root), lineChars), StartedISO: s.StartedAt,
		Failed: s.Summary.Failed, RefOnly: s.Summary.ReferenceOnly, Flags: s.Summary.Flags,
		Cost: cost(s.Metrics),
	}
	if t, ok := store.ParseTimestamp(s.StartedAt); ok {
		r.StartedDate = t.Format("2006-01-02 15:04")
		r.StartedAgo = ago(now.Sub(t))
	}
	for _, typ := range store.StepTypes {
		if n := s.Summary.StepsByType[typ]; n > 0 {
			r.Counts = append(r.Counts, views.TypeCount{Type: typ, Count: n})
		}
	}
	return r
}
