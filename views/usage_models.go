package views

import (
	"fmt"
	"strconv"

	"github.com/a-h/templ"
)

// UsagePage is the page at /usage: the totals of a period and its usage
// by day, model, agent and project, with the top sessions.
type UsagePage struct {
	Since, Until, Agent string   // the form's values, as YYYY-MM-DD
	Project             string   // the form's project (a workspace root)
	AllProjectsHref     string   // the page with the form's other values, of every project
	Agents              []string // the agents with usage in the period, for the Agent field
	Projects            []string // the projects of the chart by project, for the Project field
	Problem             string   // why the query was refused; empty when it ran
	Total               UsageBar
	Charts              []UsageChart
	Sessions            []UsageBar // most tokens, or cost, first (SessionsBy)
	// SessionsBy is the order of Sessions (store.UsageSorts); the two
	// hrefs are the page with each order.
	SessionsBy                       string
	SessionsByTokens, SessionsByCost string
	Pricing                          string // "estimated from <source>, prices as of <date>"
	Stack                            string // what the day bars are stacked by: model or agent
	// Recorded is the first and last day with usage at any time (for the
	// same agent and project), when the period has none; RecordedHref shows them.
	Recorded     [2]string
	RecordedHref string
	// Empty: the period has no usage.
	Empty bool
	// SessionTotals, when some of the period's usage is the totals of
	// sessions whose agent reports nothing per response, is the model
	// they are shown as (store.SessionTotalsModel).
	SessionTotals string
	Demo          bool
}

// UsageChart is one bar chart with the table under it. Vertical charts
// (days) have a bar per column; the others a bar per row with its label.
type UsageChart struct {
	ID, Title, Head string
	Vertical        bool
	Bars            []UsageBar
	More            int      // groups left out of the chart and table
	Series          []string // the stacked series' labels, in stacking order (vertical charts)
}

// UsageBar is one group: its label, figures as shown, and the bar's length
// as a fraction of the longest.
type UsageBar struct {
	Label, Href                           string
	Title                                 string // a session's, under its id (Label)
	Models                                string
	Input, Output, CacheRead, CacheCreate int64
	CacheCreate1h                         int64 // of CacheCreate, written for an hour
	Total, Requests                       int64
	Reported                              string // "$1.20", empty when none was reported
	Estimated                             string // "≈ $0.40 estimated", empty when none
	Unpriced                              string // models without a price, comma separated
	Frac                                  float64
	Segments                              []int64 // tokens of each of the chart's Series, stacked
	// Series is 1 + the index of the day chart's series this group is
	// stacked as, so that its bar takes that colour; 0 when the days are
	// stacked by another group.
	Series int
	// Parts are the group's figures by the days' stack (model or agent),
	// a line each under its row, when it has two or more; MoreParts
	// counts those not shown.
	Parts     []UsageBar
	MoreParts int
}

// UsageSeriesCount is how many series a stacked chart shows; the rest
// are one more series, "other".
const UsageSeriesCount = 5

// Usage chart geometry, in SVG user units: the columns of the day chart,
// and the bar of a row of the others (stretched to the row's width).
const (
	usageChartW   = 600
	usageColumnsH = 160
	usageRowBarH  = 10
)

func usageViewBox() string    { return fmt.Sprintf("0 0 %d %d", usageChartW, usageColumnsH) }
func usageRowViewBox() string { return fmt.Sprintf("0 0 %d %d", usageChartW, usageRowBarH) }

// usageColumn is where column i of c stands: its x and width, four fifths
// of its share of the chart's width, centred in it.
func usageColumn(c UsageChart, i int) (x, w string) {
	bw := float64(usageChartW) / float64(len(c.Bars))
	return svgUnits(float64(i)*bw + bw*0.1), svgUnits(bw * 0.8)
}

// usageAxis is what the day chart says under its columns: its first and
// last day (the days without usage have no column, so the axis is not a
// time scale) and the day with the most tokens, with them. ok is false
// for a chart without columns.
func usageAxis(c UsageChart) (first, last string, peak UsageBar, ok bool) {
	if len(c.Bars) == 0 {
		return "", "", UsageBar{}, false
	}
	peak = c.Bars[0]
	for _, b := range c.Bars[1:] {
		if b.Total > peak.Total {
			peak = b
		}
	}
	return c.Bars[0].Label, c.Bars[len(c.Bars)-1].Label, peak, true
}

// usageColumnRect is the x, y, width and height of column i of c.
func usageColumnRect(c UsageChart, i int) (x, y, w, h string) {
	bh := max(c.Bars[i].Frac*usageColumnsH, 1)
	x, w = usageColumn(c, i)
	return x, svgUnits(usageColumnsH - bh), w, svgUnits(bh)
}

// usageRowWidth is the width of a row's bar: its share of the longest,
// at least one unit so that a group with few tokens still shows.
func usageRowWidth(b UsageBar) string { return svgUnits(max(b.Frac*usageChartW, 1)) }

func svgUnits(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// usageSegmentRect is segment j of column i of a stacked chart: the
// segments below it (earlier series) lift it.
func usageSegmentRect(c UsageChart, i, j int) (x, y, w, h string) {
	b := c.Bars[i]
	scale := 0.0
	if b.Total > 0 {
		scale = b.Frac * usageColumnsH / float64(b.Total)
	}
	var below int64
	for _, n := range b.Segments[:j] {
		below += n
	}
	bh := float64(b.Segments[j]) * scale
	x, w = usageColumn(c, i)
	return x, svgUnits(usageColumnsH - float64(below)*scale - bh), w, svgUnits(bh)
}

// usageSegmentTitle is a segment's accessible title.
func usageSegmentTitle(c UsageChart, i, j int) string {
	return c.Bars[i].Label + ", " + c.Series[j] + ": " + Thousands(c.Bars[i].Segments[j]) + " tokens"
}

func usageSeriesClass(j int) string {
	return "usage-bar usage-s" + strconv.Itoa(j%(UsageSeriesCount+1))
}

// usageBarClass is a horizontal bar's class: its series' colour in the day
// chart when it has one (UsageBar.Series).
func usageBarClass(b UsageBar) string {
	if b.Series > 0 {
		return usageSeriesClass(b.Series - 1)
	}
	return "usage-bar"
}

// usageBarTitle is a bar's accessible title: its label and tokens.
func usageBarTitle(b UsageBar) string {
	return b.Label + ": " + Thousands(b.Total) + " tokens"
}

// Thousands writes n with comma separators.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + Thousands(-n)
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// SessionUsageView is one session's usage on its page: a row per model,
// then the total, with the price table the estimates come from.
type SessionUsageView struct {
	Rows    []UsageBar // a row per model, then the total
	Pricing string
}

// Total is the row of the session's whole usage.
func (u *SessionUsageView) Total() UsageBar { return u.Rows[len(u.Rows)-1] }

// HasCost reports whether the row has a cost to show (UsageCost): reported,
// estimated, or models without a price.
func (b UsageBar) HasCost() bool { return b.Reported != "" || b.Estimated != "" || b.Unpriced != "" }

// TurnTokens is a turn's usage in its header: the total tokens and API
// requests, with the kinds of tokens in the tooltip, and its cost (Cost's
// reported and estimated, as UsageCost shows them, the price table named
// by Pricing).
type TurnTokens struct {
	Total, Requests                       int64
	Input, Output, CacheRead, CacheCreate int64
	Cost                                  UsageBar
	Pricing                               string
}

// Line is "12,345 tokens · 3 requests".
func (t TurnTokens) Line() string {
	return Thousands(t.Total) + " tokens · " + Plural(int(t.Requests), "request")
}

// Detail is the tokens by kind, for the tooltip.
func (t TurnTokens) Detail() string {
	return "in " + Thousands(t.Input) + ", out " + Thousands(t.Output) + ", cache read " + Thousands(t.CacheRead) + ", cache write " + Thousands(t.CacheCreate)
}

// current marks the link to the page shown (aria-current), among links
// to its variants; nothing on the others.
func current(shown bool) templ.Attributes {
	if shown {
		return templ.Attributes{"aria-current": "page"}
	}
	return nil
}
