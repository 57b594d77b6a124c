package handlers

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/a-h/templ"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// listPage is GET /: the session list of the review app.
func listPage(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent := r.URL.Query().Get("agent")
		l, err := st.List(r.Context(), agent)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		render(w, r, log, http.StatusOK, views.SessionList(listPageModel(l, agent, time.Now())))
	})
}

func listPageModel(l store.SessionList, agent string, now time.Time) views.ListPage {
	p := views.ListPage{Agent: agent, Total: l.Total.Sessions, Cost: totalCost(l.Total)}
	for _, a := range l.Agents {
		p.Chips = append(p.Chips, views.AgentChip{
			Label: a.Kind, Href: "/?agent=" + url.QueryEscape(a.Kind), Count: a.Sessions, Active: a.Kind == agent,
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
		AgentKind: s.Agent.Kind, AgentVersion: s.Agent.Version, Title: s.Summary.Title,
		Workspace: path.Base(s.Workspace.Root), StartedISO: s.StartedAt,
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

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func cost(m *store.Metrics) string {
	if m == nil {
		return "not recorded"
	}
	return fmt.Sprintf("$%.2f", m.CostUSD)
}

func totalCost(t store.Total) string {
	s := fmt.Sprintf("$%.2f", t.CostUSD)
	if t.CostNotRecorded > 0 {
		s += fmt.Sprintf(" (%d not recorded)", t.CostNotRecorded)
	}
	return s
}

// ago renders a duration as a person would say it.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

// render writes a component into a buffer first, so a failing component
// never sends half a page with 200.
func render(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		writeError(w, r, log, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
