package aider

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// The lines of a SEARCH/REPLACE block, as Aider's editblock coder matches
// them.
var (
	searchRE  = regexp.MustCompile(`^<{5,9} SEARCH\s*$`)
	dividerRE = regexp.MustCompile(`^={5,9}\s*$`)
	replaceRE = regexp.MustCompile(`^>{5,9} REPLACE\s*$`)
)

// editBlock is a complete SEARCH/REPLACE block of a reply.
type editBlock struct {
	line    int    // the run line of its SEARCH marker
	name    string // the file, as the reply names it
	search  string // empty: a new file
	replace string
}

// editBlocks finds the complete SEARCH/REPLACE blocks in a reply's lines
// (n is the run line of lines[0]) and returns them with the reply's text
// without them: a block goes with the file name line and fences around it.
// A block's file is the first line before it that is not a fence, within
// three lines, as Aider reads it, else the block before's. A block cut off
// (no ======= or REPLACE: the reply was interrupted) stays in the text.
func editBlocks(n int, lines []string) (blocks []editBlock, text string) {
	drop := make([]bool, len(lines))
	last := ""
	for i := 0; i < len(lines); i++ {
		if !searchRE.MatchString(lines[i]) {
			continue
		}
		div, end := -1, -1
		for j := i + 1; j < len(lines) && end < 0; j++ {
			if div < 0 && dividerRE.MatchString(lines[j]) {
				div = j
			} else if div >= 0 && replaceRE.MatchString(lines[j]) {
				end = j
			}
		}
		if end < 0 {
			break
		}
		name, from := fileName(lines, i)
		if name == "" {
			name = last
		}
		if name == "" {
			i = end
			continue // no file to edit: Aider refuses the block; it stays text
		}
		last = name
		blocks = append(blocks, editBlock{line: n + i, name: name,
			search: strings.Join(lines[i+1:div], "\n"), replace: strings.Join(lines[div+1:end], "\n")})
		if end+1 < len(lines) && isFence(lines[end+1]) {
			end++ // the block's closing fence
		}
		for k := from; k <= end; k++ {
			drop[k] = true
		}
		i = end
	}
	return blocks, keptText(lines, drop)
}

// fileName is the file a block whose SEARCH marker is lines[i] names, and
// the first line of the block with its name and fences ("" and the first
// fence before it when it names none). As Aider's find_filename: the
// nearest of the three lines before that is not a fence, stripped of
// Markdown around it.
func fileName(lines []string, i int) (name string, from int) {
	from = i
	for k := i - 1; k >= 0 && k >= i-3; k-- {
		l := strings.TrimSpace(lines[k])
		if isFence(l) {
			from = k
			continue
		}
		if name = stripName(l); name != "" {
			return name, k
		}
		break
	}
	return "", from
}

func isFence(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "```") }

// stripName is a file name line without the Markdown a model puts around
// it (Aider's strip_filename).
func stripName(l string) string {
	if l == "..." {
		return ""
	}
	l = strings.TrimSpace(strings.TrimLeft(strings.TrimRight(l, ":"), "#"))
	l = strings.Trim(strings.Trim(l, "`"), "*")
	return strings.ReplaceAll(l, `\_`, "_")
}

// keptText joins the lines not dropped; where a block was dropped, the
// blank lines on both sides of it make one.
func keptText(lines []string, drop []bool) string {
	var out []string
	gap := false
	for i, l := range lines {
		if drop[i] {
			gap = true
			continue
		}
		blank := strings.TrimSpace(l) == ""
		if blank && gap && (len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == "") {
			continue
		}
		if !blank {
			gap = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// reply is a reply of the model, kept until the output after it.
type reply struct {
	line  int // the run line of lines[0]
	lines []string
	named map[string]int // file name -> the fence after its last naming line; made once (wholeEdit)
}

// wholeEdit adds the edit Aider applied to file name from the last reply
// when that reply has no SEARCH/REPLACE block: in Aider's whole edit
// format the model writes the file's name on a line, then the whole file
// in a fenced block, and Aider writes it. Only the output's "Applied edit
// to" makes such a block an edit (a reply shows code in fences for many
// reasons): a full write of the block's lines, ok. It reports whether it
// found the block, the last one naming the file; each block makes one
// edit, and the reply is read once however many lines its output has.
func (p *parser) wholeEdit(name string) bool {
	r := p.whole
	if r == nil {
		return false
	}
	if r.named == nil {
		r.named = map[string]int{}
		for k := 1; k < len(r.lines); k++ {
			if isFence(r.lines[k]) && !isFence(r.lines[k-1]) {
				r.named[stripName(r.lines[k-1])] = k
			}
		}
	}
	k, ok := r.named[name]
	if !ok || name == "" {
		return false
	}
	delete(r.named, name)
	end := k + 1
	for end < len(r.lines) && !isFence(r.lines[end]) {
		end++
	}
	if end == len(r.lines) {
		return false // no closing fence: a reply cut off
	}
	content := strings.Join(r.lines[k+1:end], "\n")
	if end > k+1 {
		content += "\n"
	}
	st := p.editStep(editBlock{line: r.line + k, name: name, replace: content})
	st.Outcome = adapters.OutcomeOK
	p.s.Add(nil, st, adapters.Time{})
	return true
}

// editStep is the step of an edit block: its file made absolute against
// the workspace, where Aider applies it.
func (p *parser) editStep(bl editBlock) store.Step {
	path := bl.name
	if !filepath.IsAbs(path) && filepath.IsAbs(p.root) {
		path = filepath.Join(p.root, path)
	}
	st := store.Step{ID: fmt.Sprintf("edit-%d", bl.line), Type: store.TypeEdit,
		Decision: adapters.DecisionAuto, Outcome: adapters.OutcomeUnknown,
		Payload: store.Payload{Path: path, NewString: adapters.Text(bl.replace), IsFullWrite: adapters.Bool(bl.search == "")}}
	if bl.search != "" {
		st.Payload.OldString = adapters.Text(bl.search)
	}
	return st
}

// pendingEdits are the edit steps of the last reply, held (a call of the
// builder) until the output after the reply says how each went.
type pendingEdits struct {
	id     string
	blocks []editBlock
	steps  []*adapters.Step
}

// applied makes the edits of the file Aider names ok, and reports whether
// there were any.
func (e *pendingEdits) applied(name string) bool {
	found := false
	for k, bl := range e.blocks {
		st := e.steps[k].St
		if (bl.name == name || st.Payload.Path == name) && st.Outcome != adapters.OutcomeFailed {
			st.Outcome = adapters.OutcomeOK
			found = true
		}
	}
	return found
}

// fail marks edit k failed.
func (e *pendingEdits) fail(k int, typ, message string) {
	st := e.steps[k].St
	st.Outcome = adapters.OutcomeFailed
	st.Error = &store.StepError{Type: typ, Message: message}
}

// find is the first edit not failed yet of the file name with this SEARCH
// text, else of the file name; -1 when none is.
func (e *pendingEdits) find(name, search string) int {
	for _, exact := range []bool{true, false} {
		for k, bl := range e.blocks {
			if bl.name == name && (!exact || bl.search == search) && e.steps[k].St.Outcome != adapters.OutcomeFailed {
				return k
			}
		}
	}
	return -1
}

// Lines of Aider's output the adapter reads.
var (
	commitRE   = regexp.MustCompile(`^Commit ([0-9a-f]{7,40}) (.*)$`)
	undoHintRE = regexp.MustCompile(`^You can use /undo to (?:revert and discard|undo and discard each aider) commit`)
	// A failed block: "## SearchReplaceNoExactMatch: This SEARCH block
	// failed to exactly match lines in <file>".
	failureRE = regexp.MustCompile(`^## (\w+): (.*)$`)
	othersRE  = regexp.MustCompile(`^# The other \d+ SEARCH/REPLACE blocks? (?:was|were) applied successfully`)
	failedRE  = regexp.MustCompile(`^# \d+ SEARCH/REPLACE blocks? failed to match`)
	// Aider's question whether to add a command's output to the chat
	// (0.47: "Add the output to the chat?"; later "Add 1.2k tokens of
	// command output to the chat?").
	askOutputRE = regexp.MustCompile(`^Add .*output to the chat\?`)
)

const (
	formatError = "The LLM did not conform to the edit format."
	lintStart   = "# Fix any errors below, if possible."
	lintRunning = "## Running: "
	lintAsk     = "Attempt to fix lint errors?"
)

// output maps a block of Aider's output (n is the run line of lines[0]):
// the lines the adapter reads (Parse) make their steps, and each stretch
// of the others one system message, or the output of a /run command.
func (p *parser) output(n int, lines []string) {
	var other []string
	otherAt := 0
	flushOther := func() {
		if len(other) > 0 {
			p.systemMessage(otherAt, other)
			other = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		p.banner(l)
		switch m := commitRE.FindStringSubmatch(l); {
		case isTokens(l):
			flushOther()
			p.usage(n+i, l)
			p.b.Skip("tokens")
		case strings.HasPrefix(l, "Applied edit to ") && p.edits != nil && p.edits.applied(strings.TrimPrefix(l, "Applied edit to ")):
			p.b.Skip("applied edit")
		case strings.HasPrefix(l, "Applied edit to ") && p.wholeEdit(strings.TrimPrefix(l, "Applied edit to ")):
			p.b.Skip("applied edit")
		case m != nil:
			flushOther()
			p.commit(n+i, m[1], m[2])
		case undoHintRE.MatchString(l):
			p.b.Skip("undo hint")
		case l == formatError || failedRE.MatchString(l):
			flushOther()
			j := sectionEnd(lines, i+1, "")
			p.editFailure(n+i, lines[i:j])
			i = j - 1
		case l == lintStart:
			flushOther()
			j := sectionEnd(lines, i+1, lintAsk)
			p.lint(n+i, lines[i:j])
			i = j - 1
		case p.command != nil && !askOutputRE.MatchString(l) && !strings.HasPrefix(l, "(Y)es/(n)o"):
			flushOther()
			p.command.stdout = append(p.command.stdout, l)
		default:
			if len(other) == 0 {
				otherAt = n + i
			}
			other = append(other, l)
		}
	}
	flushOther()
}

// sectionEnd is where a section of output that goes on from lines[i]
// ends: at a line that starts a step of its own, or that begins with stop.
func sectionEnd(lines []string, i int, stop string) int {
	for ; i < len(lines); i++ {
		l := lines[i]
		if isTokens(l) || commitRE.MatchString(l) || undoHintRE.MatchString(l) || l == lintStart ||
			strings.HasPrefix(l, "Applied edit to ") || stop != "" && strings.HasPrefix(l, stop) {
			return i
		}
	}
	return i
}

// banner reads Aider's version and model from its startup lines (the
// model again after a /model).
func (p *parser) banner(l string) {
	if v, ok := strings.CutPrefix(l, "Aider v"); ok && p.version == "" {
		if f := strings.Fields(v); len(f) > 0 {
			p.version = f[0]
		}
	}
	for _, prefix := range []string{"Model: ", "Models: ", "Main model: "} {
		if m, ok := strings.CutPrefix(l, prefix); ok {
			if f := strings.Fields(m); len(f) > 0 {
				p.model = strings.TrimSuffix(f[0], ",")
			}
		}
	}
}

// commit is a commit Aider made (after its edits, or for /commit).
func (p *parser) commit(n int, sha, message string) {
	decision := adapters.DecisionAuto
	if command(p.prompt) == "/commit" {
		decision = adapters.DecisionNone // the user asked for it
	}
	p.s.Add(nil, store.Step{ID: fmt.Sprintf("commit-%d", n), Type: store.TypeOther, Decision: decision, Outcome: adapters.OutcomeOK,
		Payload: store.Payload{ToolName: "git commit", Raw: adapters.Raw(map[string]any{"commit": sha, "message": message})},
	}, adapters.Time{})
}

// editFailure reads Aider's report of edits it could not apply (n is the
// run line of section[0]): a system message of it, and the last reply's
// edits it names failed (every edit, when it names none).
func (p *parser) editFailure(n int, section []string) {
	p.systemMessage(n, section)
	e := p.edits
	if e == nil {
		return
	}
	named, othersOK := false, false
	for i, l := range section {
		if othersRE.MatchString(l) {
			othersOK = true
		}
		m := failureRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := ""
		if k := strings.LastIndex(m[2], " lines in "); k >= 0 {
			name = strings.TrimSpace(m[2][k+len(" lines in "):])
		}
		if k := e.find(name, quotedSearch(section[i+1:])); k >= 0 {
			e.fail(k, m[1], m[2])
			named = true
		}
	}
	for k, st := range e.steps {
		switch {
		case st.St.Outcome == adapters.OutcomeFailed:
		case !named:
			e.fail(k, "edit_format", strings.TrimSpace(strings.Join(section, "\n")))
		case othersOK:
			st.St.Outcome = adapters.OutcomeOK
		}
	}
}

// quotedSearch is the SEARCH text of the block Aider quotes at the start
// of lines, "" when none is there.
func quotedSearch(lines []string) string {
	if len(lines) == 0 || !searchRE.MatchString(lines[0]) {
		return ""
	}
	for j := 1; j < len(lines); j++ {
		if dividerRE.MatchString(lines[j]) {
			return strings.Join(lines[1:j], "\n")
		}
	}
	return ""
}

// lint reads the output of Aider's linter after an edit (n is the run line
// of section[0]): each "## Running: X" is a command X with the output
// after it, failed (Aider shows lint output only when it found errors).
// Output before the first "## Running:" (Aider's own preface) is dropped.
func (p *parser) lint(n int, section []string) {
	at := -1
	for i := range section {
		if !strings.HasPrefix(section[i], lintRunning) {
			continue
		}
		if at >= 0 {
			p.lintStep(n+at, section[at:i])
		}
		at = i
	}
	if at < 0 {
		p.systemMessage(n, section)
		return
	}
	p.lintStep(n+at, section[at:])
}

func (p *parser) lintStep(n int, lines []string) {
	out := strings.Trim(strings.Join(lines[1:], "\n"), "\n")
	p.s.Add(nil, store.Step{ID: fmt.Sprintf("lint-%d", n), Type: store.TypeCommand,
		Decision: adapters.DecisionAuto, Outcome: adapters.OutcomeFailed,
		Error:   &store.StepError{Type: "lint", Message: "the linter reported errors"},
		Payload: store.Payload{Command: adapters.Text(strings.TrimPrefix(lines[0], lintRunning)), Stdout: adapters.Text(out)},
	}, adapters.Time{})
}

// pendingCommand is a command the user ran (/run), held until its output
// is read.
type pendingCommand struct {
	id     string
	step   *adapters.Step
	stdout []string
}

// shellCommand adds the command step of a prompt that runs one: "/run X",
// "/test X" or "!X" (n is its run line).
func (p *parser) shellCommand(n int, text string) {
	var cmd string
	switch name := command(text); {
	case name == "/run" || name == "/test":
		cmd = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), name))
	case strings.HasPrefix(text, "!"):
		cmd = strings.TrimSpace(text[1:])
	}
	if cmd == "" {
		return
	}
	id := fmt.Sprintf("command-%d", n)
	st := p.s.Add(nil, store.Step{ID: id, Type: store.TypeCommand, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeUnknown,
		Payload: store.Payload{Command: adapters.Text(cmd)}}, adapters.Time{})
	p.b.Call(id, st)
	p.command = &pendingCommand{id: id, step: st}
}
