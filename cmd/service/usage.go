package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// UsageCmd is `service usage [daily|weekly|monthly|session|blocks]`.
type UsageCmd struct {
	Report    string `arg:"" optional:"" enum:"daily,weekly,monthly,session,blocks" default:"daily" help:"daily (the default), weekly (from Monday), monthly, session (most tokens first, or most cost: --sort), or blocks (of 5 hours, as Claude's plans count their limits)."`
	Since     string `help:"First day, YYYY-MM-DD or YYYYMMDD (local time)." placeholder:"DATE"`
	Until     string `help:"Last day, included." placeholder:"DATE"`
	Agent     string `help:"Only sessions of this agent (claude-code, codex, ...)."`
	Project   string `help:"Only sessions in this workspace: its root folder (. for the one you are in)." placeholder:"DIR"`
	Breakdown string `help:"Split each row by model or by agent, a line each." placeholder:"model|agent"`
	Sort      string `help:"The session report's order: tokens (most first, the default) or cost (reported and estimated together, most first)." placeholder:"tokens|cost"`
	JSON      bool   `name:"json" help:"Print JSON instead of a table."`
	DB        string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

var usageGroups = map[string]string{
	"daily": store.UsageByDay, "weekly": store.UsageByWeek, "monthly": store.UsageByMonth, "session": store.UsageBySession,
	"blocks": store.UsageByBlock,
}

// Run prints the usage report from the store file.
func (c *UsageCmd) Run(e *env) error {
	q := store.UsageQuery{Group: usageGroups[c.Report], Agent: c.Agent, Breakdown: c.Breakdown, Sort: c.Sort}
	if q.Breakdown != "" && !slices.Contains(store.UsageBreakdowns, q.Breakdown) {
		return fmt.Errorf("--breakdown %q: want one of %s", q.Breakdown, strings.Join(store.UsageBreakdowns, ", "))
	}
	if q.Sort != "" && !slices.Contains(store.UsageSorts, q.Sort) {
		return fmt.Errorf("--sort %q: want one of %s", q.Sort, strings.Join(store.UsageSorts, ", "))
	}
	if q.Sort != "" && slices.Contains(store.UsageTimeGroups, q.Group) {
		return fmt.Errorf("--sort orders the session report: the %s report is in the order of time", c.Report)
	}
	var err error
	if c.Project != "" {
		// Agents record their workspace as an absolute, clean path.
		if q.Project, err = filepath.Abs(c.Project); err != nil {
			return fmt.Errorf("--project %q: %w", c.Project, err)
		}
	}
	if q.Since, err = parseDay(c.Since, "--since"); err != nil {
		return err
	}
	if q.Until, err = parseDay(c.Until, "--until"); err != nil {
		return err
	}
	if !q.Until.IsZero() {
		q.Until = q.Until.AddDate(0, 0, 1) // the last day is included
	}
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := store.UsageReport(e.ctx, st, q)
	if err != nil {
		return err
	}
	total := store.UsageTotal(rows)
	table := pricing.Default()
	if c.JSON {
		b, err := json.MarshalIndent(struct {
			Group     string            `json:"group"`
			Breakdown string            `json:"breakdown,omitempty"`
			Sort      string            `json:"sort,omitempty"`
			Rows      []store.UsageRow  `json:"rows"`
			Total     store.UsageRow    `json:"total"`
			Pricing   store.PricingInfo `json:"pricing"`
		}{q.Group, q.Breakdown, q.Sort, rows, total, store.PricingInfo{Source: table.Source, AsOf: table.AsOf}}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	if q.Group == store.UsageByBlock {
		rows = slices.Clone(rows)
		for i := range rows {
			rows[i].Key = store.UsageBlockLabel(rows[i].Key, time.Now())
		}
	}
	return printUsage(e.stdout, c.Report, c.Breakdown, rows, total, table)
}

// parseDay reads a local day (store.ParseDay); "" is no day.
func parseDay(s, flag string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, ok := store.ParseDay(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want a day as YYYY-MM-DD or YYYYMMDD", flag, s)
}

// printUsage prints the table ccusage users know: tokens by kind, and the
// cost, reported as is and estimated with ≈, never silently added. The
// period and its models read from the left, one model a line; the
// numbers from the right. The total names no models (the rows do). A row
// with a breakdown has a line for each of its parts instead of its models,
// as ccusage's --breakdown.
func printUsage(w io.Writer, report, breakdown string, rows []store.UsageRow, total store.UsageRow, table *pricing.Table) error {
	head := map[string]string{"daily": "Date", "weekly": "Week", "monthly": "Month", "session": "Session", "blocks": "Block"}[report]
	parts := "Models"
	if breakdown == store.UsageByAgent {
		parts = "Agents"
	}
	lines := [][]string{{head, parts, "Input", "Output", "Cache Create", "Cache Read", "Total Tokens", "Cost (USD)"}}
	// The keys and models are the agents' (a session's id, a model's
	// name): terminalSafe, so no escape sequence in them reaches the
	// terminal.
	line := func(r store.UsageRow, models []string) {
		first := ""
		if len(models) > 0 {
			first = terminalSafe(models[0])
		}
		lines = append(lines, []string{terminalSafe(r.Key), first,
			thousands(r.Tokens.Input), thousands(r.Tokens.Output), thousands(r.Tokens.CacheCreation),
			thousands(r.Tokens.CacheRead), thousands(r.Tokens.Total()), costCell(r)})
		for _, m := range models[min(1, len(models)):] {
			lines = append(lines, []string{"", terminalSafe(m), "", "", "", "", "", ""})
		}
	}
	for _, r := range rows {
		if r.Breakdown == nil {
			line(r, r.Models)
			continue
		}
		line(r, nil)
		for _, part := range r.Breakdown {
			part.Key, part.Models = "", []string{"└ " + part.Key}
			line(part, part.Models)
		}
	}
	line(total, nil)
	width := make([]int, len(lines[0]))
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, l := range lines {
		var b strings.Builder
		for i, c := range l {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i < 2 { // the period and the models read from the left
				b.WriteString(c + pad + "  ")
			} else {
				b.WriteString(pad + c + "  ")
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no usage recorded in this period")
		return err
	}
	fmt.Fprintf(w, "≈ estimated from %s, prices as of %s (%s); reported cost is shown as reported.\n", table.Source, table.AsOf, pricing.HourWriteRule)
	if len(total.Unpriced) > 0 {
		fmt.Fprintf(w, "* no price for: %s\n", terminalSafe(strings.Join(total.Unpriced, ", ")))
	}
	return nil
}

// costCell is reported cost as is, estimated cost after ≈, both when a
// group has both, and * when a model without a price reported none.
func costCell(r store.UsageRow) string {
	var parts []string
	if r.ReportedCostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.2f", *r.ReportedCostUSD))
	}
	if r.EstimatedCostUSD != nil {
		parts = append(parts, fmt.Sprintf("≈ $%.2f", *r.EstimatedCostUSD))
	}
	s := strings.Join(parts, " + ")
	if len(r.Unpriced) > 0 {
		s = strings.TrimSpace(s + " *")
	}
	if s == "" {
		s = "-"
	}
	return s
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
