// Package views renders the review app's pages with templ. Components take
// view models built by handlers and never query anything.
package views

// ListPage is the session list at /.
type ListPage struct {
	Agent  string // the agent kind filtered on, or ""
	Chips  []AgentChip
	Rows   []SessionRow
	Total  int
	Cost   string // combined reported cost of the listed sessions
	Stream string // the live stream URL the page listens to
}

// AgentChip filters the list by one agent kind.
type AgentChip struct {
	Label  string
	Href   string
	Count  int
	Active bool
}

// SessionRow is one session in the list.
type SessionRow struct {
	ID           string
	ShortID      string
	Href         string
	AgentKind    string
	AgentVersion string
	Title        string
	Workspace    string // the folder name
	StartedDate  string
	StartedAgo   string
	StartedISO   string
	Counts       []TypeCount
	Failed       int
	RefOnly      int
	Flags        int
	Cost         string // "not recorded" when the session has no metrics
}

// TypeCount is how many steps of one type a session has.
type TypeCount struct {
	Type  string
	Count int
}
