// Package views renders the review app's pages with templ. Components take
// view models built by handlers and never query anything.
package views

import (
	"context"
	"html"
	"io"
	"iter"
	"strconv"

	"github.com/a-h/templ"
)

// Plural is "1 flag", "2 flags".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// ListPage is the session list at /.
type ListPage struct {
	Agent   string // the agent kind filtered on, or ""
	Chips   []AgentChip
	Rows    []SessionRow
	Total   int
	Cost    string // combined reported cost of every session the filter keeps
	RowsURL string // the rows fragment, refetched on changes
	Demo    bool
	// OlderHref and NewestHref page through the list, 100 sessions a page.
	OlderHref, NewestHref string
	Verdict               string // the verdict state filtered on, or ""
	VerdictChips          []VerdictChip
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
	Verdict      *VerdictView
}

// TypeCount is how many steps of one type a session has.
type TypeCount struct {
	Type  string
	Count int
}

// SessionView is one whole session as a reviewer reads it: the summary,
// the report and the timeline. The session page and the export share it.
type SessionView struct {
	ID           string
	Title        string
	AgentKind    string
	AgentVersion string
	Cost         string // "not recorded" when the session has no metrics
	APIRequests  string
	TokensIn     string
	TokensOut    string
	Steps        int
	TurnCount    int
	Failed       int
	RefOnly      int
	Flags        int
	Workspace    string
	Repo         string
	Started      string
	Ended        string // "open" while the session has no end
	Segments     int
	Owner        string
	CapturedOn   string
	Files        []FileRow
	Commands     []CommandRow
	Turns        []TurnView
	Verdict      *VerdictView
	Notes        []NoteView // every note, in step order
}

// FileRow is one file the session touched.
type FileRow struct {
	Path                          string
	Created, Edited, Read, Failed int
}

// CommandRow is one distinct command the session ran.
type CommandRow struct {
	Command   string
	Runs      int
	Failed    int
	ExitCodes string // "0, 1"
	NotInline bool
}

// TurnView is the steps that followed one prompt.
type TurnView struct {
	ID     string
	DOMID  string // turn-<hex of ID>: safe in an id attribute
	Number int64
	Prompt string
	Mode   string
	Actor  string
	Steps  []StepView
}

// StepView is one step: its line in the timeline and its details.
type StepView struct {
	Seq         int64
	Type        string
	Summary     string
	Status      string // ok, failed: <error type>, reference-only
	StatusClass string // ok, failed, ref
	At          string
	Decision    string
	Error       Text
	Flags       []FlagView
	Fields      []Field    // labelled values: command, cwd, exit code, file, range, role, tool...
	Blocks      []Block    // long text: stdout, stderr, message text, raw input
	Diff        []DiffLine // edits only
	DiffCut     bool       // the diff was made from cut strings
	Partial     bool       // only the first bytes of its texts are here; opening loads the rest
	Open        bool
	BodyURL     string // the step's details, up to the review app's cut
	AllURL      string // the step's details, whole
	Notes       []NoteView
	CanNote     bool // the page offers to add and edit notes (not the export)
}

// IsCut reports whether any text of the step was cut.
func (s StepView) IsCut() bool {
	cut := s.DiffCut || s.Error.More > 0
	for _, f := range s.Flags {
		cut = cut || f.Reason.More > 0
	}
	for _, f := range s.Fields {
		cut = cut || f.Value.More > 0
	}
	for _, b := range s.Blocks {
		cut = cut || b.Text.More > 0
	}
	return cut
}

// Text is a recorded value as shown: its first characters, and how many
// more were left out.
type Text struct {
	Shown string
	More  int
}

// FlagView is a flag on a step.
type FlagView struct {
	Kind, Severity string
	Reason         Text
}

// Field is a short labelled value of a step.
type Field struct {
	Label string
	Value Text
}

// Block is a long labelled text of a step, shown preformatted.
type Block struct {
	Label string
	Text  Text
}

// DiffLine is one line of an edit's diff. Kind is add, del, ctx or hunk.
type DiffLine struct {
	Kind, Text string
}

// ExportPage is the redacted report downloaded as one HTML file. The
// turns are read, masked and rendered one at a time, so the report is
// written as it is made; Session.Turns is not used.
type ExportPage struct {
	Session   SessionView
	Turns     iter.Seq[ExportTurn]
	Generated string
	// Manifest is called after the turns: what redaction masked, counts
	// per rule, never values.
	Manifest func() []ManifestRow
}

// ExportTurn is one turn of the export, its steps read as they are shown.
type ExportTurn struct {
	Number int64
	Mode   string
	Prompt string
	Steps  iter.Seq[StepView]
}

// ManifestRow counts the distinct secrets one redaction rule masked.
type ManifestRow struct {
	Rule  string
	Count int
}

// SessionPage is the session view at /session?id=.
type SessionPage struct {
	Session    SessionView
	Stamp      string // the session's updated_at this page shows
	UpdatesURL string // the changed turns since Stamp
	Earlier    int    // turns older than the first one shown
	EarlierURL string // the 50 turns before the first one shown
	ExportURL  string // the redacted download
	PanelURL   string // the list of values the export masks
	DeleteURL  string // empty in the demo: no delete button
	Demo       bool
	Review     ReviewForms // empty in the demo: no verdict or note forms
	Changes    []FileChangeView
}

// ExportPanel lists every value the export masks, before the download.
type ExportPanel struct {
	ExportURL string
	Findings  []PanelFinding
}

// PanelFinding is one distinct value the export masks.
type PanelFinding struct {
	Rule, Confidence, Preview, Placeholder string
	Where                                  []string
}

// textOf writes s as HTML text a slice at a time. Unlike { s }, which
// copies a value whole before escaping it, it holds no copy of a long
// recorded value.
func textOf(s string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for rest := s; rest != ""; {
			n := min(len(rest), 32<<10)
			if _, err := io.WriteString(w, html.EscapeString(rest[:n])); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}
