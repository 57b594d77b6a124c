package claudecode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unique"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// channel names where the steps' evidence came from.
const transcript = "transcript"

// Parse reads one session's transcript files into batches. Files named
// agent-*.jsonl are subagent transcripts; the others are the session's own
// (normally one; excerpts of one session may come as several, read in the
// order of their first timestamp).
//
// The session is mapped as follows. A human prompt starts a turn (a slash
// command or a `!` shell command typed by the user too); prompts and
// replies are message steps, thinking is role thinking, the compaction
// summary is role summary, and text the CLI injects (interruptions, task
// notifications, reminders) is role system. A reply that is an API error
// failed; the notices of its retries before it (system api_error) are one
// system step a stall, not failed (apiRetry). Each tool_use is one step,
// completed by its tool_result. Segments start at the first record
// ("start", or "clear" when the file opens with /clear), at each
// compact_boundary ("compaction"), and where the CLI was started again on
// the same file ("resume": a SessionStart:resume hook record or a new CLI
// version mid-file). Subagents, inline sidechains or their own files, are
// actors under the actor whose Task call spawned them, and their steps join
// that call's turn; a subagent with no file of its own is read from the
// agent_progress records of the parent (never both). Steps are numbered in reading order, each file in its
// own order and the files interleaved by time, so a re-read of grown files
// keeps every earlier number. Claude Code writes no cost, so the session
// has no metrics (the app shows "not recorded"); token usage is still
// counted once per model response into Session.Usage.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	p := &parser{
		u:      u,
		b:      adapters.NewBuilder(u, transcript),
		seen:   map[adapters.Key]struct{}{},
		agents: map[string]*agent{},
		owner:  map[string]*agent{},
		links:  map[string]string{},

		agentFiles: map[string]bool{},
	}
	p.b.EnableSpill(adapters.SpillAfter)
	var mains, subs []*source
	for i, f := range files {
		src := p.open(i, f)
		p.paths = append(p.paths, f.Path)
		if src.sub {
			subs = append(subs, src)
		} else {
			mains = append(mains, src)
		}
	}
	byFirstTime := func(a, b *source) int { return a.first.At.Compare(b.first.At) }
	slices.SortStableFunc(mains, byFirstTime)
	slices.SortStableFunc(subs, byFirstTime)
	for _, src := range subs {
		p.agentFiles[subagentID(src)] = true
	}
	for _, src := range mains {
		p.each(src, func(ln *line) { p.rootLine(src, ln) })
	}
	for _, src := range subs {
		p.subagentFile(src)
	}
	for _, src := range p.sources {
		if p.sid == "" {
			p.sid = src.sid
		}
	}
	return p.finish()
}

type parser struct {
	u     adapters.Unit
	b     *adapters.Builder
	paths []string

	seen map[adapters.Key]struct{} // record uuids read (as keys: a long session has many), to skip replays

	mode     string // the last permission mode a prompt carried
	version  string
	cwd      string
	sid      string    // first sessionId seen, when the unit has no id
	sources  []*source // the files, in the order given
	rootLast adapters.Time
	started  bool // the first segment has its file

	agents     map[string]*agent // by key
	agentOrder []*agent
	owner      map[string]*agent         // inline sidechain record uuid -> its agent
	links      map[string]string         // Claude agentId -> Task tool_use id
	agentFiles map[string]bool           // agentIds whose own file is read: their progress records are not
	spawns     []*adapters.Step          // Task calls, to match subagents by prompt
	local      map[*agent]*adapters.Step // last slash or ! command, for its output
	rootLocal  *adapters.Step
	retries    map[*agent]*adapters.Step // an actor's step of API retries (nil: the root's), for the next notice
}

// source is one of the session's files, read line by line: the lines
// before its first timestamp (and, in a subagent's file, before its first
// agentId) are read ahead to order the files, and none is kept after it is
// mapped.
type source struct {
	idx     int
	path    string
	sub     bool          // a subagent's own file (agent-*.jsonl)
	first   adapters.Time // its first timestamp
	agentID string        // a subagent file's first agentId
	sid     string        // its first sessionId
	ahead   []line        // lines read ahead, not yet mapped
	lines   *adapters.Lines
	reader  *reader // reads lines while each maps them
	steps   *adapters.Stream
	done    bool
}

// readAhead caps the lines read ahead in one file to order it.
const readAhead = 256

type line struct {
	n   int
	rec *record
	at  adapters.Time // zero when the record has no valid timestamp
}

// agent is a subagent: an inline sidechain or a subagent file.
type agent struct {
	actor    *adapters.Actor
	agentID  string // Claude's agentId, when known
	last     adapters.Time
	prompt   string // its first prompt, to find the Task call that sent it
	prompted bool
}

// ctx is where a record's steps go: the root actor or a subagent.
type ctx struct {
	agent *agent
	s     *adapters.Stream
	path  string
}

func (p *parser) skip(kind string) { p.b.Skip(kind) }

func (p *parser) problem(path string, n int, msg string) {
	p.b.Problem(adapters.Problem{Path: path, Line: n, Message: msg})
}

// open starts reading a file and reads ahead to its first timestamp.
func (p *parser) open(idx int, f adapters.File) *source {
	src := &source{idx: idx, path: f.Path, sub: strings.HasPrefix(filepath.Base(f.Path), "agent-"), lines: adapters.NewLines(f.Body), steps: p.b.Stream(f.Path)}
	p.sources = append(p.sources, src)
	for len(src.ahead) < readAhead && (src.first.IsZero() || (src.sub && src.agentID == "")) {
		ln, ok := p.next(src)
		if !ok {
			break
		}
		src.ahead = append(src.ahead, ln)
	}
	return src
}

// next maps a file's next line. Broken lines are reported and left out;
// a broken last line without its newline is a line still being written,
// so the file is marked incomplete instead.
func (p *parser) next(src *source) (line, bool) {
	for !src.done {
		var r read
		if src.reader != nil {
			r = src.reader.next()
		} else {
			r = readLine(src.lines)
		}
		if ln, ok := p.take(src, r); ok {
			return ln, true
		}
	}
	return line{}, false
}

// take maps one line read from src; false when it gives no record.
func (p *parser) take(src *source, r read) (line, bool) {
	if r.err == adapters.ErrLineTooLong {
		p.problem(src.path, r.n, r.err.Error())
		return line{}, false
	}
	if r.err != nil {
		src.done = true
		if r.err != io.EOF {
			p.problem(src.path, 0, "read: "+r.err.Error())
		}
		if r.size == 0 {
			return line{}, false
		}
	}
	p.b.Read(r.size)
	if r.blank {
		return line{}, false
	}
	if r.bad != nil {
		p.b.BadLine(src.path, r.n, r.terminated, r.bad.Error())
		return line{}, false
	}
	ln := line{n: r.n, rec: r.rec}
	if t, ok := adapters.ParseTime(r.rec.Timestamp); ok {
		ln.at = t
		if src.first.IsZero() {
			src.first = t
		}
		p.b.Observe(t)
	}
	if src.sid == "" {
		src.sid = r.rec.SessionID
	}
	if src.agentID == "" {
		src.agentID = r.rec.AgentID
	}
	return ln, true
}

// each maps a file's lines in order, the ones read ahead first; the rest
// are read and decoded on a goroutine of their own (reader) meanwhile.
func (p *parser) each(src *source, fn func(*line)) {
	for i := range src.ahead {
		fn(&src.ahead[i])
	}
	src.ahead = nil
	if !src.done {
		src.reader = startReader(src.lines)
		defer func() {
			src.reader.stop()
			src.reader = nil
		}()
	}
	for {
		ln, ok := p.next(src)
		if !ok {
			return
		}
		fn(&ln)
	}
}

// lineID names a record that has no uuid by its file and line.
func (p *parser) lineID(c ctx, n int) string {
	return fmt.Sprintf("%s:%d", filepath.Base(c.path), n)
}

// recordID is the stable id of a record's step: its uuid, else its line.
func (p *parser) recordID(c ctx, ln *line) string {
	if ln.rec.UUID != "" {
		return ln.rec.UUID
	}
	return p.lineID(c, ln.n)
}

// timeOf is a record's time, or the last time seen before it in the same
// stream when it has none.
func timeOf(ln *line, last *adapters.Time) adapters.Time {
	if !ln.at.IsZero() {
		*last = ln.at
		return ln.at
	}
	return *last
}

// firstSeen marks a record's uuid as read; false means it was read before
// (a resumed session replays earlier records).
func (p *parser) firstSeen(r *record) bool {
	if r.UUID == "" {
		return true
	}
	key := adapters.KeyOf(r.UUID)
	if _, ok := p.seen[key]; ok {
		p.skip("replayed record")
		return false
	}
	p.seen[key] = struct{}{}
	return true
}

func (p *parser) rootLine(src *source, ln *line) {
	r := ln.rec
	if !p.firstSeen(r) {
		return
	}
	c := ctx{s: src.steps, path: src.path}
	if r.IsSidechain {
		p.sidechainLine(c, ln)
		return
	}
	at := timeOf(ln, &p.rootLast)
	if p.cwd == "" && r.Cwd != "" {
		p.cwd = r.Cwd
	}
	switch r.Type {
	case "user", "assistant", "system", "progress":
		if !p.started {
			p.started = true
			p.b.SegmentFile(src.path)
		}
		if r.Version != "" {
			if p.version != "" && r.Version != p.version && p.b.SegmentSteps() > 0 {
				p.newSegment("resume", at, src.path)
			}
			p.version = r.Version
		}
	}
	p.record(c, ln, at)
}

// sidechainLine routes an inline sidechain record (Claude Code before 2.1)
// to its subagent: by agentId, else by the chain its parentUuid belongs to.
func (p *parser) sidechainLine(c ctx, ln *line) {
	r := ln.rec
	var a *agent
	switch {
	case r.AgentID != "":
		a = p.agentFor("id:"+r.AgentID, r.AgentID, "")
	case p.owner[r.ParentUUID] != nil:
		a = p.owner[r.ParentUUID]
	default:
		a = p.agentFor("chain:"+p.recordID(c, ln), "", "sidechain-"+p.recordID(c, ln))
	}
	if r.UUID != "" {
		p.owner[r.UUID] = a
	}
	c.agent = a
	at := timeOf(ln, &a.last)
	p.record(c, ln, at)
}

// subagentFile reads a subagent's own file (Claude Code 2.0.x siblings and
// 2.1 <session>/subagents/): every line is that subagent's.
func (p *parser) subagentFile(src *source) {
	id := subagentID(src)
	a := p.agentFor("id:"+id, id, "")
	c := ctx{agent: a, s: src.steps, path: src.path}
	p.each(src, func(ln *line) {
		if !p.firstSeen(ln.rec) {
			return
		}
		at := timeOf(ln, &a.last)
		if p.cwd == "" && ln.rec.Cwd != "" {
			p.cwd = ln.rec.Cwd
		}
		if p.version == "" && ln.rec.Version != "" {
			p.version = ln.rec.Version // only when the session's own file is missing
		}
		p.record(c, ln, at)
	})
}

// subagentID is the agentId of a subagent's own file: its first agentId,
// else the one in its name.
func subagentID(src *source) string {
	return cmp.Or(src.agentID, strings.TrimPrefix(strings.TrimSuffix(filepath.Base(src.path), ".jsonl"), "agent-"))
}

func (p *parser) agentFor(key, agentID, actor string) *agent {
	if a := p.agents[key]; a != nil {
		return a
	}
	if actor == "" {
		actor = "agent-" + agentID
	}
	a := &agent{actor: p.b.Subagent(actor), agentID: agentID}
	if strings.HasPrefix(agentID, "acompact") {
		a.actor.Label = "compact"
	}
	p.agents[key] = a
	p.agentOrder = append(p.agentOrder, a)
	return a
}

// record maps one record of the root or a subagent.
func (p *parser) record(c ctx, ln *line, at adapters.Time) {
	r := ln.rec
	switch r.Type {
	case "user":
		p.user(c, ln, at)
	case "assistant":
		p.assistant(c, ln, at)
	case "system":
		p.system(c, ln, at)
	case "progress":
		p.progress(c, ln)
	case "":
		p.skip("untyped record")
	default:
		// summary, file-history-snapshot, queue-operation, custom-title,
		// and record types newer than this adapter.
		p.skip(r.Type)
	}
}

func (p *parser) user(c ctx, ln *line, at adapters.Time) {
	r := ln.rec
	if r.IsMeta {
		p.skip("meta")
		return
	}
	if c.agent == nil && r.PermissionMode != "" {
		p.mode = r.PermissionMode // the mode the CLI is in from here on
	}
	blocks := r.Message.Content
	if len(blocks) == 0 {
		p.skip("empty user record")
		return
	}
	id := p.recordID(c, ln)
	var texts []string
	results, images := 0, 0
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results++
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			p.toolResult(c, r, b, results == 1)
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			images++
		}
	}
	text := strings.Join(texts, "\n")
	switch {
	case r.IsCompactSummary:
		p.message(c, id, "summary", text, at)
	case len(texts) > 0 || (images > 0 && results == 0):
		p.userText(c, r, id, text, at)
	}
	if results == 0 {
		c.s.PastedImages(p.actor(c), id, blocks.images(), at)
	}
}

var injectedPrefixes = []string{
	"[Request interrupted", "<task-notification>", "<system-reminder>", "<bash-notification>",
	"<local-command-caveat>", "<user-prompt-submit-hook>", "Caveat: The messages below were generated",
}

// userText maps the text of a user record: a prompt, a slash or shell
// command typed by the user, or text the CLI injected.
func (p *parser) userText(c ctx, r *record, id, text string, at adapters.Time) {
	t := strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(t, "<command-name>") || strings.HasPrefix(t, "<command-message>"):
		p.slashCommand(c, r, id, t, at)
		return
	case strings.HasPrefix(t, "<local-command-stdout>") || strings.HasPrefix(t, "<local-command-stderr>") ||
		strings.HasPrefix(t, "<bash-stdout>") || strings.HasPrefix(t, "<bash-stderr>"):
		p.localOutput(c, t)
		return
	case strings.HasPrefix(t, "<bash-input>"):
		p.shellCommand(c, r, id, tag(t, "bash-input"), at)
		return
	}
	if strings.HasPrefix(t, "<task-notification>") && p.taskNotification(t) {
		p.skip("task notification of a background command") // shown in the command's step
		return
	}
	for _, prefix := range injectedPrefixes {
		if strings.HasPrefix(t, prefix) {
			p.message(c, id, "system", text, at)
			return
		}
	}
	if c.agent != nil {
		role := "system"
		if !c.agent.prompted {
			role, c.agent.prompted, c.agent.prompt = "task", true, t
		}
		p.message(c, id, role, text, at)
		return
	}
	p.newTurn(id, r.PermissionMode, at)
	p.message(c, id, "user", text, at)
}

// tagREs find the text inside the CLI's pseudo-XML tags.
var tagREs = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, name := range []string{"command-name", "command-message", "command-args", "local-command-stdout",
		"local-command-stderr", "bash-input", "bash-stdout", "bash-stderr", "task-id", "status", "summary"} {
		m[name] = regexp.MustCompile(`(?s)<` + name + `>(.*?)</` + name + `>`)
	}
	return m
}()

// tag returns the text inside <name>...</name>, trimmed; name must be one
// of tagREs.
func tag(s, name string) string {
	if m := tagREs[name].FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// slashCommand maps a slash command the user typed (/clear, /compact,
// /model, ...): it starts a turn and is an other step named for it.
func (p *parser) slashCommand(c ctx, r *record, id, t string, at adapters.Time) {
	name := tag(t, "command-name")
	if name == "" {
		if msg := tag(t, "command-message"); msg != "" {
			name = "/" + msg
		} else {
			name = "slash_command"
		}
	}
	if c.agent == nil {
		if name == "/clear" && !p.b.SetStartReason("clear") {
			p.newSegment("clear", at, c.path)
		}
		p.newTurn(id, r.PermissionMode, at)
	}
	raw := map[string]any{"command": name}
	if args := tag(t, "command-args"); args != "" {
		raw["args"] = args
	}
	st := store.Step{
		ID: id, Type: store.TypeOther, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeOK,
		Payload: store.Payload{ToolName: name, Raw: adapters.Raw(raw)},
	}
	s := p.addStep(c, st, at)
	p.setLocal(c, s)
}

// shellCommand maps a command the user ran with `!` in the prompt.
func (p *parser) shellCommand(c ctx, r *record, id, command string, at adapters.Time) {
	if c.agent == nil {
		p.newTurn(id, r.PermissionMode, at)
	}
	st := store.Step{
		ID: id, Type: store.TypeCommand, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeUnknown,
		Payload: store.Payload{Command: adapters.Text(command)},
	}
	if cwd := r.Cwd; cwd != "" {
		st.Payload.Cwd = adapters.Text(cwd)
	}
	s := p.addStep(c, st, at)
	p.setLocal(c, s)
}

func (p *parser) setLocal(c ctx, s *adapters.Step) {
	if c.agent == nil {
		p.rootLocal = s
		return
	}
	if p.local == nil {
		p.local = map[*agent]*adapters.Step{}
	}
	p.local[c.agent] = s
}

// localOutput attaches the output of a slash or shell command to it, when
// it is the last step of its actor.
func (p *parser) localOutput(c ctx, t string) {
	s := p.rootLocal
	if c.agent != nil {
		s = p.local[c.agent]
	}
	if s == nil || c.s.Last() != s {
		p.skip("command output")
		return
	}
	st := s.St
	switch st.Type {
	case store.TypeCommand:
		if strings.Contains(t, "<bash-stdout>") {
			st.Payload.Stdout = adapters.Text(tag(t, "bash-stdout"))
		}
		if strings.Contains(t, "<bash-stderr>") {
			st.Payload.Stderr = adapters.Text(tag(t, "bash-stderr"))
		}
		st.Outcome = adapters.OutcomeOK
	case store.TypeOther:
		var raw map[string]any
		decode(st.Payload.Raw, &raw)
		if raw == nil {
			raw = map[string]any{}
		}
		if out := tag(t, "local-command-stdout"); out != "" || strings.Contains(t, "<local-command-stdout>") {
			raw["stdout"] = out
		}
		if errText := tag(t, "local-command-stderr"); errText != "" {
			raw["stderr"] = errText
		}
		st.Payload.Raw = adapters.Raw(raw)
	}
}

func (p *parser) assistant(c ctx, ln *line, at adapters.Time) {
	r := ln.rec
	m := &r.Message
	p.addUsage(c, ln, at)
	blocks := m.Content
	if len(blocks) == 0 {
		p.skip("empty assistant record")
		return
	}
	base := p.recordID(c, ln)
	for i, b := range blocks {
		id := base
		if i > 0 {
			id = fmt.Sprintf("%s#%d", base, i)
		}
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				p.skip("empty text")
				continue
			}
			s := p.message(c, id, "assistant", b.Text, at)
			if r.IsAPIError {
				adapters.Fail(s.St, "api_error", b.Text)
			}
		case "thinking":
			if b.Thinking == "" {
				p.skip("empty thinking")
				continue
			}
			p.message(c, id, "thinking", b.Thinking, at)
		case "redacted_thinking":
			p.skip("redacted_thinking")
		case "tool_use":
			p.toolUse(c, r, b, id, at)
		default:
			st := store.Step{
				ID: id, Type: store.TypeOther, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeOK,
				Payload: store.Payload{ToolName: cmp.Or(b.Type, "unknown"), Raw: adapters.Raw(map[string]any{"block": rawJSON(b.raw)})},
			}
			p.addStep(c, st, at)
		}
	}
}

func (p *parser) toolUse(c ctx, r *record, b block, fallbackID string, at adapters.Time) {
	id := cmp.Or(ToolStepID(b.ID), fallbackID)
	if p.b.Called(id) {
		p.skip("replayed tool_use")
		return
	}
	call := &toolCall{name: unique.Make(cmp.Or(b.Name, "unknown")).Value(), req: &request{input: b.Input, args: object(b.Input)}}
	if isSpawn(call.name) {
		call.spawn = &spawn{prompt: str(call.req.args, "prompt"), subagentType: str(call.req.args, "subagent_type")}
	}
	if c.agent == nil {
		call.mode = p.mode
	}
	st := store.Step{ID: id}
	startTool(&st, call, cmp.Or(r.Cwd, p.cwd))
	s := p.addStep(c, st, at)
	s.Call = call
	p.b.Call(id, s)
	if call.spawn != nil {
		p.spawns = append(p.spawns, s)
	}
}

func (p *parser) toolResult(c ctx, r *record, b block, single bool) {
	steps, known := p.b.Result(b.ToolUseID)
	if !known {
		p.skip("tool_result without its tool_use")
		return
	}
	if len(steps) == 0 {
		p.skip("replayed tool_result")
		return
	}
	s := steps[0]
	res := &toolResult{text: b.Content.text(), isError: b.IsError, images: b.Content.images()}
	if single && adapters.Present(r.ToolUseResult) {
		res.tur = r.ToolUseResult
		res.turObj = object(r.ToolUseResult)
		decode(r.ToolUseResult, &res.turStr)
	}
	finishTool(s.St, s.Call.(*toolCall), res)
	if aid := str(res.turObj, "agentId"); aid != "" {
		p.links[aid] = s.St.ID
	}
	if bg := backgroundTask(res); bg != "" && s.St.Type == store.TypeCommand {
		p.b.Await(backgroundKey(bg), s) // completed by its task notification
	}
}

func backgroundKey(taskID string) string { return "background:" + taskID }

// exitCodeInSummaryRE finds the exit code in a task notification's summary
// ("Background command \"...\" completed (exit code 0)").
var exitCodeInSummaryRE = regexp.MustCompile(`\(exit code (-?\d{1,9})\)`)

// taskNotification completes the background command a task notification
// reports on with its status and exit code, the notification joining its
// output (Claude Code writes the command's own output to a file, which the
// transcript does not hold). It reports false when no waiting command has
// the notification's task id.
func (p *parser) taskNotification(t string) bool {
	steps, _ := p.b.Result(backgroundKey(tag(t, "task-id")))
	if len(steps) == 0 || steps[0].St == nil {
		return false
	}
	st := steps[0].St
	if m := exitCodeInSummaryRE.FindStringSubmatch(tag(t, "summary")); m != nil {
		if code, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			st.Payload.ExitCode = &code
		}
	}
	switch status := tag(t, "status"); {
	case st.Payload.ExitCode != nil && *st.Payload.ExitCode != 0:
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "exit_code", Message: fmt.Sprintf("Exit code %d", *st.Payload.ExitCode)}
	case status == "failed" || status == "killed":
		st.Outcome = adapters.OutcomeFailed
		st.Error = &store.StepError{Type: "background_" + status, Message: tag(t, "summary")}
	}
	out := t
	if st.Payload.Stdout != nil && *st.Payload.Stdout != "" {
		out = *st.Payload.Stdout + "\n" + t
	}
	st.Payload.Stdout = &out
	return true
}

func (p *parser) system(c ctx, ln *line, at adapters.Time) {
	r := ln.rec
	switch r.Subtype {
	case "compact_boundary":
		if c.agent == nil {
			p.newSegment("compaction", at, c.path)
			return
		}
	case "local_command":
		var text string
		decode(r.Content, &text)
		if strings.TrimSpace(text) != "" {
			p.userText(c, r, p.recordID(c, ln), text, at)
			return
		}
	case "api_error":
		p.apiRetry(c, ln, at)
		return
	}
	p.skip("system:" + cmp.Or(r.Subtype, "?"))
}

// apiRetry maps Claude Code's notice that a request to the model failed
// and is retried (a system api_error record, one per attempt): a system
// message saying why and which attempt, not a failure, since most retries
// succeed and the request that gives up is written as a reply that is an
// API error (a failed step). The notices of one stall, with no other step
// of the actor between them, are one step: its text says the last attempt.
func (p *parser) apiRetry(c ctx, ln *line, at adapters.Time) {
	r := ln.rec
	var e struct {
		Message   string          `json:"message"`
		Formatted string          `json:"formatted"`
		Status    json.RawMessage `json:"status"`
	}
	decode(r.Error, &e)
	why := cmp.Or(strings.TrimSpace(e.Formatted), strings.TrimSpace(e.Message))
	if why == "" && len(e.Status) > 0 {
		why = "status " + strings.Trim(string(e.Status), `"`)
	}
	var content string
	decode(r.Content, &content)
	text := "API error, retrying: " + cmp.Or(why, strings.TrimSpace(content), "the request failed")
	if r.RetryAttempt > 0 {
		text += fmt.Sprintf(" (attempt %d", r.RetryAttempt)
		if r.MaxRetries > 0 {
			text += fmt.Sprintf(" of %d", r.MaxRetries)
		}
		text += ")"
	}
	if s := p.retries[c.agent]; s != nil && c.s.Last() == s {
		s.St.Payload.Text = adapters.Text(text)
		return
	}
	if p.retries == nil {
		p.retries = map[*agent]*adapters.Step{}
	}
	p.retries[c.agent] = p.message(c, p.recordID(c, ln), "system", text, at)
}

func (p *parser) progress(c ctx, ln *line) {
	r := ln.rec
	var d struct {
		Type      string          `json:"type"`
		HookEvent string          `json:"hookEvent"`
		HookName  string          `json:"hookName"`
		AgentID   string          `json:"agentId"`
		Message   json.RawMessage `json:"message"`
	}
	decode(r.Data, &d)
	switch {
	case d.Type == "agent_progress" && d.AgentID != "" && r.ParentToolUseID != "":
		p.links[d.AgentID] = r.ParentToolUseID
		if !p.agentFiles[d.AgentID] && c.agent == nil {
			p.agentProgress(c, ln, d.AgentID, d.Message)
			return
		}
	case d.Type == "hook_progress" && d.HookEvent == "SessionStart" && c.agent == nil:
		_, source, _ := strings.Cut(d.HookName, ":")
		switch {
		case source == "resume" && p.b.SegmentSteps() > 0:
			p.newSegment("resume", p.rootLast, c.path)
		case source == "clear":
			p.b.SetStartReason("clear")
		}
	}
	p.skip("progress")
}

// agentProgress maps the subagent record an agent_progress record carries
// (a Task's subagent whose own file is missing) as a line of that
// subagent: its uuid is the one the subagent's file would hold, so a
// record repeated in later progress is read once.
func (p *parser) agentProgress(c ctx, ln *line, agentID string, raw json.RawMessage) {
	var m struct {
		Type      string  `json:"type"`
		UUID      string  `json:"uuid"`
		Timestamp string  `json:"timestamp"`
		RequestID string  `json:"requestId"`
		Message   message `json:"message"`
	}
	if decode(raw, &m) != nil || (m.Type != "user" && m.Type != "assistant") {
		p.skip("agent_progress")
		return
	}
	inner := line{n: ln.n, at: ln.at, rec: &record{Type: m.Type, UUID: m.UUID, Timestamp: m.Timestamp,
		RequestID: m.RequestID, Message: m.Message, AgentID: agentID, IsSidechain: true, Cwd: ln.rec.Cwd}}
	if t, ok := adapters.ParseTime(m.Timestamp); ok {
		inner.at = t
	}
	if !p.firstSeen(inner.rec) {
		return
	}
	a := p.agentFor("id:"+agentID, agentID, "")
	c.agent = a
	p.record(c, &inner, timeOf(&inner, &a.last))
}

// message adds a message step.
func (p *parser) message(c ctx, id, role, text string, at adapters.Time) *adapters.Step {
	return c.s.Message(p.actor(c), id, role, text, at)
}

// addStep adds a step of the root (to the current turn and segment) or of
// a subagent (placed by the builder, under the call that spawned it).
func (p *parser) addStep(c ctx, st store.Step, at adapters.Time) *adapters.Step {
	return c.s.Add(p.actor(c), st, at)
}

func (p *parser) actor(c ctx) *adapters.Actor {
	if c.agent == nil {
		return nil
	}
	return c.agent.actor
}

// newTurn opens a root turn; the CLI's permission mode carries over to the
// turns that record none.
func (p *parser) newTurn(id, mode string, at adapters.Time) {
	if mode != "" {
		p.mode = mode
	}
	p.b.NewTurn(id, p.mode, at)
}

func (p *parser) newSegment(reason string, at adapters.Time, path string) {
	p.b.NewSegment(reason, at)
	p.b.SegmentFile(path)
}

// finish names the session, finds the calls that spawned its subagents and
// hands it to the builder, with the join of the telemetry the store keeps
// for it (joinTelemetry).
func (p *parser) finish() *adapters.Session {
	h := &p.b.Header
	if h.ID == "" {
		h.ID = p.sid
	}
	if h.ID == "" && len(p.paths) > 0 {
		h.ID = strings.TrimSuffix(filepath.Base(p.paths[0]), ".jsonl")
	}
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(p.version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(p.cwd, "unknown")}
	h.Source = "import:" + Kind
	p.seen, p.owner = nil, nil // the memory goes to the outlines next
	claimed := map[*adapters.Step]bool{}
	for _, a := range p.agentOrder {
		p.resolve(a, claimed)
	}
	p.links, p.spawns = nil, nil
	p.b.Decide = func(s *adapters.Step) string {
		// A subagent's call ran in the mode of the turn it joined.
		call, ok := s.Call.(*toolCall)
		if !ok || !call.accepted {
			return ""
		}
		call.mode = s.Turn().Mode
		return decisionFor(call)
	}
	p.b.Join = func(r *adapters.Records, spilled []*adapters.SpilledStep, stored adapters.Stored) func(*store.Step) {
		return joinTelemetry(r, spilled, decodeTelemetry(r.Header.ID, stored.Telemetry), stored.Seqs)
	}
	sess := p.b.Finish()
	if sess.ID == "" || p.b.Steps() > 0 || p.u.Stored == nil {
		return sess
	}
	// No transcript step yet: the session is what its telemetry says.
	stored, err := p.u.Stored(sess.ID)
	if err != nil {
		p.problem(cmp.Or(strings.Join(p.paths, ", "), sess.ID), 0, err.Error())
		return sess
	}
	sess.Batches = TelemetryBatches(sess.ID, adapters.Records{}, stored.Telemetry, stored.Seqs)
	for _, b := range sess.Batches {
		sess.Steps += len(b.Steps)
	}
	return sess
}

// resolve finds the call that spawned a subagent: the Task call whose
// result named its agentId (or whose progress did), else the Task call
// whose prompt is the subagent's first prompt. The builder places its
// steps in that call's turn; a subagent is labelled with the call's
// subagent_type unless it has a label.
func (p *parser) resolve(a *agent, claimed map[*adapters.Step]bool) {
	var spawn *adapters.Step
	if id := p.links[a.agentID]; a.agentID != "" && id != "" {
		if steps := p.b.CallSteps(id); len(steps) > 0 {
			spawn = steps[0]
		}
	}
	if spawn == nil && a.prompt != "" {
		for _, s := range p.spawns {
			if !claimed[s] && strings.TrimSpace(s.Call.(*toolCall).spawn.prompt) == a.prompt {
				spawn = s
				break
			}
		}
	}
	if spawn == nil || spawn.Actor() == a.actor {
		return
	}
	claimed[spawn] = true
	a.actor.SpawnedBy(spawn)
	if call, ok := spawn.Call.(*toolCall); ok && call.spawn != nil && a.actor.Label == "" {
		a.actor.Label = call.spawn.subagentType
	}
}

func isSpawn(tool string) bool { return tool == "Task" || tool == "Agent" }
