package aider

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

var channels = []string{"history"}

// Parse reads the run of a chat history that the unit names (Discover) and
// returns it as a session; the other runs of the file are read past, and
// the lines of only this run are held.
//
// Mapping: the run's header gives the session's start (Aider's local time,
// taken as UTC: startTime). Aider writes three kinds of lines, and a run is
// read as blocks of one kind: "#### " lines are what the user typed, "> "
// lines are Aider's own output, other lines are the model's reply (Aider
// ends each of its lines with two spaces, a Markdown line break, which are
// dropped). Each prompt (consecutive #### lines, a /command too) opens a
// turn and is a user message; /clear and /reset start a segment. A reply is
// an assistant message of its text without its SEARCH/REPLACE blocks, and
// each complete block is an edit step after it: the file the block names
// (made absolute against the workspace), its SEARCH and REPLACE text; an
// empty SEARCH is how Aider creates a file, a full write. Aider applies
// edits without asking, so an edit's decision is auto; "Applied edit to X"
// makes the reply's edits of X ok, a SearchReplaceNoExactMatch (or any
// "## Type: message" failure) names the block that failed, and "The LLM
// did not conform to the edit format" without a named block fails them
// all; an edit no line speaks of (a reply cut by ^C) is unknown. Aider then
// sends the failure back to the model by itself, so the reply after it
// stays in the same turn. A reply without SEARCH/REPLACE blocks may be in
// Aider's whole edit format (a file's name, then the whole file in a fenced
// block): "Applied edit to X" makes its block for X a full write, ok
// (wholeEdit); the reply's text keeps it. "/run X", "/test X" and "!X" are a command step
// besides their prompt, whose stdout is the output Aider logged for it
// (Aider logs no exit status: unknown). Lint output ("# Fix any errors
// below" ... "## Running: X") is a command step X that failed.
// "Commit <sha> <message>" is an other step, tool "git commit". Tokens
// lines are usage (usage.go), the "/undo" hint after a commit is skipped,
// and every other output line, the startup banner included, is kept in a
// system message. The banner gives Aider's version and the model of the
// usage records. Aider records no time but the run's start: every step is
// at the session's start. Step ids are the kind and the line of the run
// they start at (prompt-12, edit-30), so a run that only grew keeps them.
//
// Aider reports cost per request and the run's running total, but tokens
// only per request, and metrics need the session's tokens: the session has
// no metrics, and each Tokens line is a usage record with its cost.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channels...)
	b.EnableSpill(adapters.SpillAfter) // a long run's finished steps, past 32 MB or many steps
	p := &parser{b: b}
	for i, f := range files {
		b.Files(f.Path)
		if i == 0 && u.Offset > 0 && p.readAt(f, u.ID, u.Offset) {
			break
		}
		if p.read(f, u.ID) {
			break
		}
	}
	h := &b.Header
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(p.version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(p.root, "unknown")}
	h.Source = "import:" + Kind
	b.SetStart(p.start)
	return b.Finish()
}

// blockKind is the kind of a run's lines (see Parse).
type blockKind int

const (
	noBlock     blockKind = iota
	promptBlock           // #### lines: what the user typed
	outputBlock           // > lines: Aider's own output
	replyBlock            // other text: the model's reply
)

type parser struct {
	b     *adapters.Builder
	s     *adapters.Stream
	root  string
	start adapters.Time

	version, model string
	prompt         string // the text of the last prompt

	// The block being read: its kind, the run line it starts at, and its
	// lines without their prefixes.
	kind  blockKind
	first int
	lines []string

	edits   *pendingEdits // the last reply's edits, until the output after it is read
	whole   *reply        // the last reply without SEARCH/REPLACE blocks: its files may be whole (wholeEdit)
	command *pendingCommand
}

// readAt reads the run named id from offset in f, where Discover found
// its header (Unit.Offset), and reports whether it found the run there: a
// line at offset that is no header of the run's start time (the file was
// rewritten since) sends the reading back to the start of the file (read).
func (p *parser) readAt(f adapters.File, id string, offset int64) bool {
	sk, ok := f.Body.(io.Seeker)
	if !ok {
		return false
	}
	if _, err := sk.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	lr := adapters.NewLines(f.Body)
	_, line, _, err := lr.Next()
	if err != nil || !isRunHeader(line) || !strings.HasSuffix(strings.TrimRightFunc(string(line), unicode.IsSpace), headerTime(id)) {
		if _, err := sk.Seek(0, io.SeekStart); err != nil {
			p.b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
		}
		return false
	}
	p.begin(f.Path, line)
	return p.readRun(f, lr, 1)
}

// read reads f up to the end of the run named id, and reports whether it
// found the run: the way to it when Discover's offset did not hold (readAt).
func (p *parser) read(f adapters.File, id string) (found bool) {
	ids := runIDs{path: f.Path, seen: map[string]int{}}
	lr := adapters.NewLines(f.Body)
	want := headerTime(id)
	for {
		n, line, _, err := lr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return false
		case err != nil && !errors.Is(err, adapters.ErrLineTooLong):
			p.b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
			return false
		case !isRunHeader(line):
			continue
		}
		// Only a run that started in the second of id may be it: the
		// others' ids are not made.
		if h, k := ids.count(line); strings.HasSuffix(h, want) && ids.id(h, k) == id {
			p.begin(f.Path, line)
			return p.readRun(f, lr, n)
		}
	}
}

// readRun reads the lines of the run whose header was line header of lr,
// up to the next run or the end of the file, and reports true.
func (p *parser) readRun(f adapters.File, lr *adapters.Lines, header int) bool {
	for {
		n, line, terminated, err := lr.Next()
		size := lr.Size()
		switch {
		case errors.Is(err, io.EOF):
		case err != nil && !errors.Is(err, adapters.ErrLineTooLong):
			p.b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
		case isRunHeader(line):
			// The next run: this one is complete.
		case err != nil:
			p.b.Read(size)
			p.b.Problem(adapters.Problem{Path: f.Path, Line: n, Message: err.Error()})
			continue
		case !terminated:
			// Aider ends every write with a newline: a last line without
			// one is still being written, and is read when it is whole.
			p.b.Session().Incomplete = append(p.b.Session().Incomplete, f.Path)
		default:
			p.b.Read(size)
			p.line(n-header, line)
			continue
		}
		p.flush()
		p.settle()
		return true
	}
}

// begin starts the run whose header is line, in the history at path.
func (p *parser) begin(path string, line []byte) {
	p.s = p.b.Stream(path)
	// Aider writes its history at the root of the repository it runs in.
	p.root = filepath.Dir(path)
	p.start, _ = startTime(string(line))
}

// line adds the run's line n to the block being read, or ends that block
// and starts one of the line's kind.
func (p *parser) line(n int, raw []byte) {
	text := string(raw)
	kind, content := classify(text)
	if kind == replyBlock && p.kind == outputBlock && strings.HasPrefix(text, "(Y)es/(n)o") {
		// The second line of a question Aider asked, which it logs
		// without the "> " of the first.
		kind, content = outputBlock, unbreak(text)
	}
	if kind == replyBlock && strings.TrimSpace(text) == "" {
		if p.kind == replyBlock {
			p.lines = append(p.lines, text) // a blank line inside a reply
		} else {
			p.flush()
		}
		return
	}
	if kind != p.kind {
		p.flush()
		p.kind, p.first = kind, n
	}
	p.lines = append(p.lines, content)
}

// classify is the kind of a line and its text without Aider's prefix and
// line break.
func classify(line string) (blockKind, string) {
	switch {
	case line == "####" || strings.HasPrefix(line, "#### "):
		s := strings.TrimPrefix(unbreak(line), "####")
		return promptBlock, strings.TrimPrefix(s, " ")
	case line == ">" || strings.HasPrefix(line, "> "):
		s := strings.TrimPrefix(unbreak(line), ">")
		return outputBlock, strings.TrimPrefix(s, " ")
	}
	return replyBlock, line
}

// unbreak drops the two spaces Aider ends its #### and > lines with.
func unbreak(line string) string { return strings.TrimSuffix(line, "  ") }

// flush maps the block read so far.
func (p *parser) flush() {
	lines := p.lines
	switch p.kind {
	case promptBlock:
		p.userPrompt(p.first, lines)
	case replyBlock:
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		p.reply(p.first, lines)
	case outputBlock:
		p.output(p.first, lines)
	}
	p.kind, p.lines = noBlock, p.lines[:0]
}

// userPrompt opens a turn with what the user typed at run line n.
func (p *parser) userPrompt(n int, lines []string) {
	p.whole = nil
	p.settle()
	id := fmt.Sprintf("prompt-%d", n)
	text := strings.Join(lines, "\n")
	p.prompt = text
	if command(text) == "/clear" || command(text) == "/reset" {
		if !p.b.SetStartReason("clear") {
			p.b.NewSegment("clear", adapters.Time{})
		}
	}
	p.b.NewTurn(id, "", adapters.Time{})
	p.s.Message(nil, id, "user", text, adapters.Time{})
	p.shellCommand(n, text)
}

// command is the /command a prompt starts with, "" when it is none.
func command(text string) string {
	if !strings.HasPrefix(text, "/") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	return name
}

// reply adds the model's reply at run line n: its text, then an edit step
// for each SEARCH/REPLACE block in it.
func (p *parser) reply(n int, lines []string) {
	p.settle()
	p.whole = nil
	blocks, text := editBlocks(n, lines)
	id := fmt.Sprintf("reply-%d", n)
	if strings.TrimSpace(text) != "" {
		p.s.Message(nil, id, "assistant", text, adapters.Time{})
	}
	if len(blocks) == 0 {
		p.whole = &reply{line: n, lines: lines}
		return
	}
	e := &pendingEdits{id: id, blocks: blocks}
	for _, bl := range blocks {
		e.steps = append(e.steps, p.s.Add(nil, p.editStep(bl), adapters.Time{}))
	}
	p.b.Call(id, e.steps...) // held until the output after the reply says how they went
	p.edits = e
}

// systemMessage adds Aider's output lines at run line n as a system
// message, unless they are blank.
func (p *parser) systemMessage(n int, lines []string) {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines, n = lines[1:], n+1
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		p.b.Skip("blank output")
		return
	}
	p.s.Message(nil, fmt.Sprintf("output-%d", n), "system", strings.Join(lines, "\n"), adapters.Time{})
}

// settle completes the steps that waited for Aider's output: the last
// reply's edits and a /run command.
func (p *parser) settle() {
	if e := p.edits; e != nil {
		p.b.Result(e.id)
		p.edits = nil
	}
	if c := p.command; c != nil {
		if out := strings.Trim(strings.Join(c.stdout, "\n"), "\n"); out != "" {
			c.step.St.Payload.Stdout = adapters.Text(out)
		}
		p.b.Result(c.id)
		p.command = nil
	}
}
