package views

import (
	"cmp"
	"io"
	"strconv"
	"strings"

	"github.com/agentreview/service/internal/term"
)

// ExportMarkdown writes the redacted session report as one Markdown
// document, for pasting into a pull request or an issue: the report the
// HTML export is (summary, review, notes, files, commands, every turn and
// step whole, the redaction's manifest), from the same walk, so the same
// values are masked. Recorded texts never shape the document: an inline
// value is escaped or a code span, a long one a fenced block longer than
// any fence in it, and a message's own Markdown is quoted, so an unclosed
// fence or an HTML block in it ends with the quote.
//
// It writes straight to w, unbuffered: the export scans what was written
// each time the walk pauses between steps, so no value is split between
// two scans.
func ExportMarkdown(w io.Writer, p ExportPage) error {
	m := mdWriter{w: w}
	s := p.Session
	m.line("# " + mdText(titlePlain(titleOr(s.Title, s.ID)))) // as the page reads it
	m.line("")
	m.line("**" + mdText(s.AgentKind) + "** " + mdText(s.AgentVersion) + " · session " + mdCode(s.ID) + " · exported " + p.Generated + " with secrets masked")
	m.line("")
	m.summary(s)
	m.review(s)
	m.files(s)
	m.commands(s)
	m.tools(s)
	m.line("## Timeline")
	for t := range p.Turns {
		m.turn(t, p)
	}
	m.line("")
	m.line("## Redaction")
	m.line("")
	m.manifest(p.Manifest())
	return m.err
}

// ExportMarkdownStep writes one step of a redacted report as Markdown, as
// the whole report writes it: its line, then everything recorded of it.
func ExportMarkdownStep(w io.Writer, s StepView, images bool) error {
	m := mdWriter{w: w}
	m.step(s, images)
	return m.err
}

// mdWriter writes lines to w, keeping the first error.
type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) write(s string) {
	if m.err == nil {
		_, m.err = io.WriteString(m.w, s)
	}
}

func (m *mdWriter) line(s string) { m.write(s + "\n") }

// row writes a table row of cells, each already inline Markdown.
func (m *mdWriter) row(cells ...string) {
	m.line("| " + strings.Join(cells, " | ") + " |")
}

func (m *mdWriter) summary(s SessionView) {
	item := func(label, value string) { m.line("- **" + label + ":** " + value) }
	ws := mdCode(s.Workspace)
	if s.Repo != "" {
		ws += " (" + mdText(s.Repo) + ")"
	}
	item("Workspace", ws)
	took := when(s.Started, "datetime") + " – "
	if s.Ended != "" {
		took += when(s.Ended, "datetime")
	} else {
		took += "open"
	}
	if s.Duration != "" {
		took += " · " + s.Duration
	}
	item("Time", took+" · "+Plural(s.Segments, "segment"))
	cost := mdText(s.Cost)
	if s.Usage != nil {
		if c := costText(s.Usage.Total()); c != "" && c != s.Cost {
			cost += " (" + mdText(c) + ")"
		}
	}
	item("Cost", cost)
	item("API requests", mdText(s.APIRequests))
	tokens := mdText(s.Tokens)
	if s.Cache != "" {
		tokens += " " + mdText(s.Cache)
	}
	if s.AddedUp != "" {
		tokens += ", " + mdText(s.AddedUp)
	}
	item("Tokens in / out", tokens)
	steps := Number(int64(s.Steps))
	if len(s.StepCounts) > 0 {
		byType := make([]string, len(s.StepCounts))
		for i, c := range s.StepCounts {
			byType[i] = Plural(c.Count, c.Type)
		}
		steps += " (" + strings.Join(byType, ", ") + ")"
	}
	item("Steps", steps+" in "+Plural(s.TurnCount, "turn")+" · "+Number(int64(s.Failed))+" failed · "+
		Number(int64(s.RefOnly))+" reference-only · "+Plural(s.Flags, "flag"))
	owner := mdText(s.Owner)
	if s.CapturedOn != "" {
		owner += " on " + mdText(s.CapturedOn)
	}
	item("Owner", owner)
	m.line("")
}

func (m *mdWriter) review(s SessionView) {
	m.line("## Review")
	m.line("")
	if v := s.Verdict; v == nil {
		m.line("Not reviewed yet.")
	} else {
		line := "**" + mdText(v.State) + "**"
		if v.Reviewer != "" {
			line += " by " + mdText(v.Reviewer)
		}
		m.line(line)
		if v.Note != "" {
			m.line("")
			m.quote(v.Note)
		}
	}
	m.line("")
	if len(s.Notes) > 0 {
		m.line("## Notes")
		m.line("")
		for _, n := range s.Notes {
			m.line("- step " + strconv.FormatInt(n.Seq, 10) + ", " + mdText(n.Author) + ": " + mdText(n.Text))
		}
		m.line("")
	}
}

func (m *mdWriter) files(s SessionView) {
	rows := make([][]string, len(s.Files))
	for i, f := range s.Files {
		rows[i] = []string{mdCell(f.Name), Number(int64(f.Created)), Number(int64(f.Edited)), Number(int64(f.Read)), Number(int64(f.Failed))}
	}
	m.table("Files touched", []string{"File", "Created", "Edited", "Read", "Failed"}, rows, s.FilesMore, "other file")
}

func (m *mdWriter) commands(s SessionView) {
	rows := make([][]string, len(s.Commands))
	for i, c := range s.Commands {
		rows[i] = []string{mdCell(c.Command), Number(int64(c.Runs)), Number(int64(c.Failed)), mdText(cmp.Or(c.ExitCodes, "not recorded"))}
	}
	m.table("Commands run", []string{"Command", "Runs", "Failed", "Exit codes"}, rows, s.CommandsMore, "other command")
}

func (m *mdWriter) tools(s SessionView) {
	rows := make([][]string, len(s.Tools))
	for i, t := range s.Tools {
		rows[i] = []string{mdCell(t.Tool), Number(int64(t.Calls)), Number(int64(t.Failed))}
	}
	m.table("Other tools", []string{"Tool", "Calls", "Failed"}, rows, s.ToolsMore, "other tool")
}

// table writes a section of a table: its heading, then the rows under
// head (the first column left, counts right) and how many more there are
// (named by other), or "None.".
func (m *mdWriter) table(title string, head []string, rows [][]string, more int, other string) {
	m.line("## " + title)
	m.line("")
	if len(rows) == 0 {
		m.line("None.")
		m.line("")
		return
	}
	m.row(head...)
	align := []string{"---"}
	for range head[1:] {
		align = append(align, "---:")
	}
	m.row(align...)
	for _, r := range rows {
		m.row(r...)
	}
	if more > 0 {
		m.line("")
		m.line("And " + Plural(more, other) + ".")
	}
	m.line("")
}

func (m *mdWriter) turn(t ExportTurn, p ExportPage) {
	m.line("")
	if t.Divider != nil {
		m.divider(*t.Divider)
	}
	head := "### Turn " + strconv.FormatInt(t.Number, 10)
	if t.Mode != "" {
		head += " (" + mdText(t.Mode) + ")"
	}
	if t.Problems.Failed > 0 {
		head += " · " + Number(int64(t.Problems.Failed)) + " failed"
	}
	if t.Problems.Flags > 0 {
		head += " · " + Plural(t.Problems.Flags, "flag")
	}
	head += " · " + when(t.At, "time")
	if t.Duration != "" {
		head += " · " + t.Duration
	}
	if t.Tokens != nil {
		head += " · " + t.Tokens.Line()
		if c := costText(t.Tokens.Cost); c != "" {
			head += " · " + mdText(c)
		}
	}
	m.line(head)
	if t.Prompt != "" {
		m.line("")
		m.quote(t.Prompt)
	}
	if p.Outline {
		m.line("")
	}
	for s := range t.Steps {
		if s.Divider != nil {
			m.line("")
			m.divider(*s.Divider)
		}
		if p.Outline {
			m.outlineStep(s)
		} else {
			m.line("")
			m.step(s, p.Images)
		}
	}
}

func (m *mdWriter) divider(d SegmentDivider) {
	m.line("---")
	m.line("")
	m.line("*" + mdText(d.Title()) + " · " + when(d.At, "time") + "*")
	m.line("")
}

// stepLine is a step's line: its number and type, subagent, summary,
// status and time to the next step.
func stepLine(s StepView) string {
	line := "**#" + strconv.FormatInt(s.Seq, 10) + " " + s.Type + "**"
	if s.ActorType == "subagent" {
		line += " (" + mdText(s.ActorLabel) + ")"
	}
	if s.LineRole != "" {
		line += " " + mdText(s.LineRole) + ": " + mdText(titlePlain(s.Summary))
	} else {
		line += " " + mdCode(s.Summary)
	}
	line += " · " + mdText(s.Status)
	if s.Duration != "" {
		line += " · " + s.Duration
	}
	return line
}

// outlineStep writes a step as an item of its turn's list: its line, and
// under it its error, flags and notes.
func (m *mdWriter) outlineStep(s StepView) {
	m.line("- " + stepLine(s))
	if s.Error.Shown != "" {
		m.line("  - Error: " + mdText(s.Error.Shown))
	}
	for _, f := range s.Flags {
		m.line("  - Flag: " + mdText(f.Kind) + " (" + mdText(f.Severity) + "): " + mdText(f.Reason.Shown))
	}
	for _, n := range s.Notes {
		m.line("  - **Note** by " + mdText(n.Author) + ": " + mdText(n.Text))
	}
}

// step writes a step's line, then everything recorded of it.
func (m *mdWriter) step(s StepView, images bool) {
	m.line(stepLine(s))
	m.line("")
	m.line("- Time: " + when(s.At, "time"))
	if s.DecisionShown() {
		m.line("- Permission: " + mdText(s.Decision))
	}
	for _, f := range s.Fields {
		if !strings.Contains(f.Value.Shown, "\n") {
			m.line("- " + mdText(f.Label) + ": " + mdCode(f.Value.Shown))
		}
	}
	if s.Error.Shown != "" {
		m.line("- Error: " + mdText(s.Error.Shown))
	}
	for _, f := range s.Flags {
		m.line("- Flag: " + mdText(f.Kind) + " (" + mdText(f.Severity) + "): " + mdText(f.Reason.Shown))
	}
	for _, f := range s.Fields {
		if strings.Contains(f.Value.Shown, "\n") {
			m.line("")
			m.line(mdText(f.Label) + ":")
			m.line("")
			m.fence("", term.Plain(f.Value.Shown))
		}
	}
	if len(s.Diff) > 0 {
		var d strings.Builder
		for _, l := range s.Diff {
			d.WriteString(l.Text)
			d.WriteByte('\n')
		}
		m.line("")
		m.fence("diff", term.Visible(d.String())) // a file's escape sequence is its text
	}
	for _, b := range s.Blocks {
		m.line("")
		m.line(mdText(b.Label) + ":")
		m.line("")
		if b.Markdown {
			m.quote(b.Text.Shown)
		} else {
			m.fence("", term.Plain(b.Text.Shown))
		}
	}
	for _, img := range s.Images {
		m.line("")
		if images && img.Src != "" {
			m.line("![" + mdText(img.Alt(s.Seq)) + "](" + img.Src + ")")
		} else {
			m.line("*" + mdText(img.Alt(s.Seq)) + ": left out*")
		}
	}
	for _, n := range s.Notes {
		m.line("")
		m.quote("**Note** by " + mdText(n.Author) + ": " + mdText(n.Text))
	}
}

func (m *mdWriter) manifest(rows []ManifestRow) {
	if len(rows) == 0 {
		m.line("No secrets were found. Home folders are shown as ~.")
		return
	}
	m.line("Masked values, by rule (each distinct value counted once; the values are not in this file):")
	m.line("")
	m.row("Rule", "Masked", "Kept unmasked by the reviewer")
	m.row("---", "---:", "---")
	for _, r := range rows {
		kept := make([]string, len(r.Kept))
		for i, k := range r.Kept {
			kept[i] = mdCell(k)
		}
		m.row(mdText(r.Rule), Number(int64(r.Count)), strings.Join(kept, ", "))
	}
}

// quote writes text as a block quote: every line of it inside the quote,
// so whatever Markdown it holds ends where the quote does.
func (m *mdWriter) quote(text string) {
	text = term.Plain(text)
	for l := range strings.Lines(strings.TrimRight(text, "\n")) {
		m.line(strings.TrimRight("> "+strings.TrimSuffix(l, "\n"), " "))
	}
}

// fence writes text as a fenced code block whose fence of backticks is
// longer than any run of backticks in it. Its callers, as mdCode, mdText
// and quote, write recorded text as the app shows it: output without
// control sequences, other control characters in caret notation
// (term.Plain), a diff's every control character so (term.Visible).
func (m *mdWriter) fence(lang, text string) {
	f := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	m.line(f + lang)
	m.write(text)
	if !strings.HasSuffix(text, "\n") {
		m.write("\n")
	}
	m.line(f)
}

// mdCode is s as an inline code span on one line: its line breaks are
// spaces, its delimiter longer than any run of backticks in it.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(term.Plain(s))
	if s == "" {
		return ""
	}
	d := strings.Repeat("`", longestRun(s, '`')+1)
	if s[0] == '`' || s[len(s)-1] == '`' || (s[0] == ' ' && s[len(s)-1] == ' ') {
		s = " " + s + " "
	}
	return d + s + d
}

// mdCell is s as a code span in a table's cell, where a pipe, even in a
// code span, would end the cell unless escaped (GitHub's tables).
func mdCell(s string) string { return strings.ReplaceAll(mdCode(s), "|", `\|`) }

// mdSpecial are the characters that could make Markdown of a text: each is
// escaped by mdText (CommonMark lets any ASCII punctuation be). A "!" is
// not: it makes an image only before a "[", which is.
var mdSpecial = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"#", `\#`, "|", `\|`, "~", `\~`, "&", `\&`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText is s as literal text on one line, every character that could be
// Markdown escaped.
func mdText(s string) string { return mdSpecial.Replace(term.Plain(s)) }

// MarkdownLiteral is s with each backslash escape of mdText undone: the
// text a reader of the rendered Markdown sees, for the export's last scan
// for secrets (an escaped underscore must not hide a token).
func MarkdownLiteral(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// costText is a cost as UsageCost shows it, in words: reported,
// estimated, models without a price.
func costText(b UsageBar) string {
	var parts []string
	if b.Reported != "" {
		parts = append(parts, b.Reported+" reported")
	}
	if b.Estimated != "" {
		parts = append(parts, b.Estimated)
	}
	if b.Unpriced != "" {
		parts = append(parts, "no price for "+b.Unpriced)
	}
	return strings.Join(parts, " · ")
}
