// Package views renders the review app's pages with templ. Components take
// view models built by handlers and never query anything.
package views

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plural is "1 flag", "2 flags", "1,204 steps".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return Number(int64(n)) + " " + word + "s"
}

// Number is n with thousands separators: 1,234,567.
func Number(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Duration is d for reading: "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + " s"
	case d < time.Hour:
		m, sec := int(d.Minutes()), int(d.Seconds())%60
		if sec == 0 {
			return strconv.Itoa(m) + " min"
		}
		return strconv.Itoa(m) + " min " + strconv.Itoa(sec) + " s"
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return strconv.Itoa(h) + " h"
		}
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	default:
		days, h := int(d.Hours())/24, int(d.Hours())%24
		return strconv.Itoa(days) + " d " + strconv.Itoa(h) + " h"
	}
}

// ListPage is the session list at /.
type ListPage struct {
	Agent   string // the agent kind filtered on, or ""
	Chips   []AgentChip
	Rows    []SessionRow
	Total   int
	Cost    string // combined reported cost of every session the filter keeps
	RowsURL string // the rows fragment, refetched on changes
	// EstimateURL is the fragment of the total's estimate
	// (TotalEstimate), loaded after the page; "" for none.
	EstimateURL string
	Demo        bool
	// OlderHref and NewestHref page through the list, 100 sessions a page.
	OlderHref, NewestHref string
	Verdict               string // the verdict state filtered on, or ""
	VerdictChips          []VerdictChip
	Filter                ListFilter
	AllAgentsHref         string // the list with every filter but the agent
	// Filtered is set when a filter is: an empty list then says that none
	// matches, not that the store has no sessions.
	Filtered bool
	Problem  string // a filter or cursor the list cannot read, said in full
}

// ListFilter is the list's filters as the filter form shows them; the
// form keeps the agent and verdict the chips chose.
type ListFilter struct {
	Agent, Verdict, Owner, Workspace, Since, Until string
	Unreviewed, Failed, Flagged, Noted             bool
	Cost                                           string // "", "recorded" or "not_recorded"
	// ShowOwner offers the owner filter: a team server's sessions have
	// several owners, the local service's are all "local".
	ShowOwner bool
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
	Notes        int // the reviewers' notes on its steps, linked to the page's Notes
	// FailedHref and FlagsHref search the session's failed and flagged
	// steps (status:failed, flag:*).
	FailedHref, FlagsHref string
	Cost                  string // "not recorded" when the session has no metrics
	// Usage is, for a session without metrics, the cost of its usage
	// records (reported, estimated, unpriced), priced as Pricing says.
	Usage   *UsageBar
	Pricing string
	Verdict *VerdictView
	// Owner is the user whose session it is, shown on a team server
	// only: the local service's sessions are all "local".
	Owner string
}

// TypeCount is how many steps of one type a session has.
type TypeCount struct {
	Type  string
	Count int
	Href  string // where the page says more of them (the others: its Other tools); "" for none
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
	Tokens       string // "in / out", or "not recorded"
	// Cache is the input tokens read from and written to the agent's
	// prompt cache beside Tokens' input, "" when none: CacheTitle says
	// how many of each.
	Cache, CacheTitle string
	// AddedUp says where APIRequests and the tokens were added up from
	// ("from the agent's files") when the session has no metrics, the
	// totals its agent reported; empty for those totals.
	AddedUp      string
	Usage        *SessionUsageView // nil when the agent recorded no token usage
	Steps        int
	TurnCount    int
	Failed       int
	FailedHref   string // the search of its failed steps
	FlagsHref    string // the search of its flagged steps
	RefOnly      int
	Flags        int
	Workspace    string
	Repo         string
	UsageHref    string // the usage page of its workspace; "" for none
	NotesHref    string // the search of every session's notes; "" for none
	Started      string // RFC 3339, shown in the viewer's time zone
	Ended        string // RFC 3339; empty while the session is open
	Duration     string // from start to end, or to the last step while open
	LastActivity string // RFC 3339: the last step's time, while open
	Segments     int
	Owner        string
	CapturedOn   string
	Files        []FileRow
	FilesMore    int // files past those in Files, in the JSON report only
	Commands     []CommandRow
	CommandsMore int // commands past those in Commands, in the JSON report only
	Tools        []ToolRow
	ToolsMore    int         // tools past those in Tools, in the JSON report only
	StepCounts   []TypeCount // the steps by type, as the list counts them
	Turns        []TurnView
	Actors       []ActorOption // the subagents, for the timeline's filter
	Verdict      *VerdictView
	Notes        []NoteView // every note, in step order
}

// FileRow is one file the session touched.
type FileRow struct {
	Path                          string // as recorded
	Name                          string // as shown: relative to the workspace when in it (InWorkspace)
	Href                          string // a search of the session's steps with this path; "" for none
	FailedHref                    string // of those that failed; "" for none
	Created, Edited, Read, Failed int
	ByCommand                     int // of those steps, the commands whose lines name the file
}

// ToolRow is one tool the session's steps of type other called.
type ToolRow struct {
	Tool          string
	Href          string // a search of the session's steps that called it; "" for none
	FailedHref    string // of those that failed; "" for none
	Calls, Failed int
}

// CommandRow is one distinct command the session ran.
type CommandRow struct {
	Command string
	Href    string // its first run: #step-<seq>
	// FailedHref is its first failed run; empty when none failed.
	FailedHref string
	// RunsSearch and FailedSearch are searches of its runs and of its
	// failed runs, when there are more than one of them and the query
	// language can say the command; a report has none.
	RunsSearch, FailedSearch string
	Runs                     int
	Failed                   int
	ExitCodes                string // "0, 1"
	NotInline                bool
}

// TurnView is the steps that followed one prompt.
type TurnView struct {
	ID       string
	DOMID    string // turn-<hex of ID>: safe in an id attribute
	Number   int64
	Prompt   string
	Mode     string
	Actor    string
	At       string      // RFC 3339
	Duration string      // from the turn's start to its last step
	Tokens   *TurnTokens // nil when no usage was recorded for the turn
	Problems TurnProblems
	Steps    []StepView
	// Earlier, for a turn of more steps than the page shows, are its steps
	// before Steps, each run of them followed by the control of the steps
	// not shown after it: its first step and the gap after it, and on a
	// link to a step, the steps around it and the gap after them.
	Earlier []StepRun
	// Divider, when set, is shown before the turn's header: the turn
	// started in a segment that begins with it.
	Divider *SegmentDivider
}

// TurnProblems is what a turn's header says of its failed steps and the
// flags on its steps: all of them, shown or not, each count a link to the
// first.
type TurnProblems struct {
	Failed     int
	FailedHref string
	Flags      int
	FlagsHref  string
}

// Any is whether the turn has a failed step or a flag.
func (p TurnProblems) Any() bool { return p.Failed > 0 || p.Flags > 0 }

// StepRun is a run of a turn's steps the page shows, and the steps after
// it that it does not (Gap).
type StepRun struct {
	Steps []StepView
	Gap   StepGap
}

// StepGap is the steps of a turn the page does not show, between the
// steps of seq After and Before, and the route that reads the last Next of
// them.
type StepGap struct {
	Steps, Next   int
	After, Before int64
	URL           string
}

// Runs are the turn's steps shown, each run of them: those of Earlier,
// then Steps. They share the turn's steps: a change to one is the turn's.
func (t TurnView) Runs() [][]StepView {
	runs := make([][]StepView, 0, len(t.Earlier)+1)
	for _, r := range t.Earlier {
		runs = append(runs, r.Steps)
	}
	return append(runs, t.Steps)
}

// From is the seq of the first of a turn's last steps, after its last gap;
// 0 for a turn shown whole.
func (t TurnView) From() int64 {
	if len(t.Earlier) == 0 {
		return 0
	}
	return t.Earlier[len(t.Earlier)-1].Gap.Before
}

// StepView is one step: its line in the timeline and its details.
type StepView struct {
	Seq         int64
	Type        string
	Summary     string
	ActorID     string // "root" for the main agent
	ActorType   string // root, subagent
	ActorLabel  string // the subagent's kind or description
	ToolName    string
	SpawnKind   string // a spawn call's subagent kind (subagent_type), to find its block
	SpawnDesc   string // a spawn call's description of the subagent's task
	Status      string // ok, failed: <error type>, reference-only
	StatusClass string // ok, failed, ref
	At          string // RFC 3339
	Duration    string // until the next step of its turn
	Decision    string
	Error       Text
	Flags       []FlagView
	Fields      []Field    // labelled values: command, cwd, exit code, file, range, role, tool...
	Blocks      []Block    // long text: stdout, stderr, message text, raw input
	Diff        []DiffLine // edits only
	DiffFile    string     // the edited file, whose language highlights the diff
	Tool        *ToolView  // a common tool shown for what it is; nil for others
	DiffCut     bool       // the diff was made from cut strings
	Partial     bool       // only the first bytes of its texts are here; opening loads the rest
	Open        bool
	BodyURL     string // the step's details, up to the review app's cut
	AllURL      string // the step's details, whole
	MarkdownURL string // the step as redacted Markdown, to copy (the page's; not the export's)
	Notes       []NoteView
	CanNote     bool // the page offers to add and edit notes (not the export)
	Segment     int64
	// Divider, when set, is shown before the step: a segment begins with it.
	Divider *SegmentDivider

	Images []ImageView // the images its raw holds, shown as thumbnails

	// LineRole is a message's role, when its text was recorded: its line is
	// the role, then Summary (its first line) as its Markdown reads, as a
	// title is: code stays code, emphasis and heading marks go.
	LineRole string
}

// DecisionShown reports whether the step's permission decision was
// recorded: not n/a (a step that is no tool call) and not unknown (an agent
// whose files do not say), which every step of such an agent would repeat.
func (s StepView) DecisionShown() bool {
	return s.Decision != "" && s.Decision != "n/a" && s.Decision != "unknown"
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

// Field is a short labelled value of a step; a value that names files
// (a command's Writes, an edit's File) has them in Files too.
type Field struct {
	Label string
	Value Text
	Files []FileLink
}

// FileLink is a file a step's field names: shown by Name, its whole Path
// on hover, linked to the search of the session's steps with that path
// when Href is set (the session page sets it; an export does not).
type FileLink struct {
	Name, Path, Href string
}

// Linked reports whether the field is shown as its files, linked where
// they can be: the session page's, not an export's.
func (f Field) Linked() bool {
	return slices.ContainsFunc(f.Files, func(l FileLink) bool { return l.Href != "" })
}

// Block is a long labelled text of a step, shown preformatted, or as
// Markdown for a message.
type Block struct {
	Label    string
	Text     Text
	Markdown bool
}

// ToolView is a common tool call shown for what it is: a todo list as a
// checklist, a web fetch as its URL and prompt, a web search as its query,
// answer and sources, a search of files as its pattern and matches, a
// subagent task as its description and type. The step's
// recorded input stays one click away.
type ToolView struct {
	Kind   string // todo, fetch, search, grep, list, task, read; fields for any other tool
	Fields []Field
	Todos  []Todo
	Result Block // matches, the fetched or searched answer, the subagent's report
	// Sources are the pages a web search answered from; MoreSources how
	// many more it named than are shown.
	Sources     []Link
	MoreSources int
	// Blocks are the long parts of any other tool's value; MoreParts says
	// it has more parts than are shown.
	Blocks    []Block
	MoreParts bool
}

// Link is a page an agent's tool named: its title (its URL when it has
// none), its http or https URL and the URL's host.
type Link struct {
	Title, URL, Host string
}

// Todo is one item of an agent's todo list.
type Todo struct {
	Text   string
	Status string // pending, in_progress, completed
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
	// Images: the steps' images are data: URIs in the page, which its
	// policy then allows.
	Images bool
	// Outline, for the Markdown report, gives each step its line alone,
	// with its error, flags and notes: short enough for a pull request.
	Outline bool
}

// ExportTurn is one turn of the export, its steps read as they are shown.
type ExportTurn struct {
	Number   int64
	Mode     string
	At       string      // RFC 3339, when it started
	Duration string      // from its start to its last step, as on the page
	Tokens   *TurnTokens // its usage, as on the page; nil for none
	Problems TurnProblems
	Prompt   string
	Steps    iter.Seq[StepView]
	Divider  *SegmentDivider // before the turn's header, as on the page
}

// ManifestRow counts the distinct secrets one redaction rule masked, and
// names the candidate values the reviewer chose to leave unmasked.
type ManifestRow struct {
	Rule  string
	Count int      // masked
	Kept  []string // placeholders of values left unmasked
}

// KeptTurns is what a page following a live session keeps once its
// appended turns pass twice a first view's: its last Turns turns, and the
// earlier-turns control for the Earlier before them (URL). Turns 0: the
// session has too few turns for it.
type KeptTurns struct {
	Turns, Earlier int
	URL            string
}

// SessionPage is the session view at /session?id=.
type SessionPage struct {
	Session    SessionView
	Stamp      string // the session's updated_at this page shows
	UpdatesURL string // the changed turns since Stamp
	Earlier    int    // turns older than the first one shown
	EarlierURL string // the 50 turns before the first one shown
	Later      int    // turns newer than the last one shown (a page around a linked step)
	LaterURL   string // the 50 turns after the last one shown
	ExportURL  string // the redacted download
	PanelURL   string // the list of values the export masks
	DeleteURL  string // empty in the demo, and on a team server for all but the owner: no delete button
	Resume     string // the command line that reopens the session in its agent; "" for none
	Demo       bool
	// Team is a team server's page: a delete removes the session for
	// every user of the team, and the page says so.
	Team    bool
	Review  ReviewForms // empty in the demo: no verdict or note forms
	Changes ChangesView
}

// ExportPanel lists every value the export masks, before the download.
type ExportPanel struct {
	ExportURL string
	Findings  []PanelFinding
}

// PanelFinding is one distinct value the export masks. Only a value no
// known-format rule matched (a candidate) may be kept unmasked.
type PanelFinding struct {
	Rule, Confidence, Preview, Placeholder string
	Keepable                               bool
	Where                                  []Place
}

// Place is where a value was seen: a field, of a step when Href is set.
type Place struct {
	Label string
	Href  string // #step-<seq>
}

// fieldLabels name in words the fields the export's scan labels by their
// JSON path (redact.Step, redact.Session).
var fieldLabels = map[string]string{
	"payload.command": "command", "payload.cwd": "working folder", "payload.stdout": "output",
	"payload.stderr": "error output", "payload.output_ref": "output file", "payload.path": "path",
	"payload.old_string": "old text", "payload.new_string": "new text", "payload.structured_patch": "patch",
	"payload.text": "text", "payload.text_ref": "text file", "payload.tool_name": "tool name",
	"payload.raw": "tool data", "error.type": "error type", "error.message": "error",
	"flags.kind": "flag", "flags.reason": "flag reason", "note.author": "note author", "note.text": "note",
	"session.title": "title", "session.workspace.root": "workspace", "session.workspace.repo": "repository",
	"session.verdict.note": "verdict note", "session.verdict.reviewer": "reviewer",
	"report.files.path": "files touched", "report.commands.command": "commands run",
	"report.tools.tool": "other tools", "usage.models.model": "model",
}

// FieldLabel is a field the export's scan names by its JSON path
// ("payload.stdout") in words ("output"); a field without a name in words
// stays as it is.
func FieldLabel(field string) string {
	if l, ok := fieldLabels[field]; ok {
		return l
	}
	return field
}

// agentHue is one of nine colour classes for an agent kind, the same for
// a kind everywhere: each agent the service imports has its own, others a
// stable pick.
func agentHue(kind string) string {
	switch kind {
	case "claude-code":
		return "1"
	case "codex":
		return "2"
	case "cline":
		return "3"
	case "gemini-cli":
		return "4"
	case "copilot-cli":
		return "5"
	case "opencode":
		return "6"
	case "crush":
		return "7"
	case "qwen-code":
		return "8"
	case "aider":
		return "9"
	}
	var h uint32 = 2166136261
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint32(kind[i])) * 16777619
	}
	return strconv.Itoa(int(h%9) + 1)
}

// when is how a recorded time reads before the page script shows it in the
// viewer's time zone, and in the export, which runs no script: UTC.
func when(iso, format string) string {
	t, err := time.Parse(time.RFC3339Nano, iso)
	if err != nil {
		return iso
	}
	t = t.UTC()
	switch format {
	case "time":
		return t.Format("15:04:05") + " UTC"
	default:
		return t.Format("2006-01-02 15:04") + " UTC"
	}
}

// TotalEstimateView is the list total's estimate as shown: "≈ $3.65
// estimated", the price table it comes from, and how many models it leaves
// out for want of a price.
type TotalEstimateView struct {
	Estimated string
	Pricing   string
	Unpriced  int
}
