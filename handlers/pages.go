package handlers

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/a-h/templ"

	"github.com/agentreview/service/views"

	"github.com/agentreview/service/store"
)

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

// totalCost is the list's total of reported costs and how many sessions
// it leaves out; when none reported one, it says so rather than "$0.00".
func totalCost(t store.Total) string {
	if t.Sessions > 0 && t.CostNotRecorded == t.Sessions {
		return "cost not recorded"
	}
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
		return views.Plural(int(d.Hours()/24), "day") + " ago"
	}
}

// Highlighting budgets (views.WithHighlighting): how many bytes of code a
// page or fragment, and an export, may highlight. Chroma's Go lexer runs
// at about 0.6 MB/s and makes about 900 bytes of garbage a byte, so a
// page spends at most ~25 ms on it; past the budget code is shown plain.
const (
	pageHighlight   = 16 << 10
	exportHighlight = 256 << 10
)

// render writes a component into a buffer first, so a failing component
// never sends half a page with 200.
func render(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(views.WithHighlighting(r.Context(), pageHighlight), &buf); err != nil {
		writeError(w, r, log, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
