package cline

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// Task is the files of one task folder. APIHistory or UIMessages must be
// set; the others may be nil.
type Task struct {
	ID         string
	ModTime    time.Time
	APIHistory *adapters.File
	UIMessages *adapters.File
	Metadata   *adapters.File
}

// SDKSession is the files of one SDK session folder.
type SDKSession struct {
	ID        string
	ModTime   time.Time
	Manifest  *adapters.File
	Messages  *adapters.File
	Subagents []adapters.File
}

// Parse reads one unit found by Discover: a task folder or an SDK session.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	task := Task{ID: u.ID, ModTime: u.ModTime}
	sdk := SDKSession{ID: u.ID, ModTime: u.ModTime}
	for i := range files {
		f := &files[i]
		switch base := filepath.Base(f.Path); {
		case base == apiHistoryFile:
			task.APIHistory = f
		case base == uiMessagesFile:
			task.UIMessages = f
		case base == metadataFile:
			task.Metadata = f
		case strings.HasSuffix(base, messagesSuffix):
			if sdk.Messages == nil && (base == u.ID+messagesSuffix || u.ID == "") {
				sdk.Messages = f
			} else {
				sdk.Subagents = append(sdk.Subagents, *f)
			}
		case strings.HasSuffix(base, ".json"):
			sdk.Manifest = f
		}
	}
	if task.APIHistory != nil || task.UIMessages != nil {
		return ParseTask(task)
	}
	if sdk.Messages == nil && len(sdk.Subagents) > 0 {
		sdk.Messages, sdk.Subagents = &sdk.Subagents[0], sdk.Subagents[1:]
	}
	return ParseSDKSession(sdk)
}

// ParseTask reads a task folder: the model-facing history
// (api_conversation_history.json) gives the steps; ui_messages.json gives
// the times of the requests and the reported cost and tokens;
// task_metadata.json the Cline version and the modes used.
//
// Mapping: the <task> of the first message and each piece of user feedback
// after attempt_completion or plan_mode_respond start a turn, whose mode
// (plan or act) is the "Current Mode" Cline wrote in the environment
// details, else the mode on the first reply (modelInfo.mode), else the
// mode task_metadata.json recorded for that time. Tool calls (native
// tool_use blocks, or the XML tags older Cline wrote in the reply text) are
// matched with the "[tool for '...'] Result:" text that follows in the next
// user message. attempt_completion, plan_mode_respond and
// ask_followup_question are how Cline talks to the user, so they are
// message steps; execute_command is a command, read_file a read,
// write_to_file and replace_in_file edits, every other tool an other step.
// "[TASK RESUMPTION]" starts a resume segment, a condense or summarize_task
// call a compaction segment. Messages carry no time in these files: a reply
// gets the time of the API request that produced it (say api_req_started,
// in order), the user message before it the same time, and without
// ui_messages.json every step gets the task's start (the task id is its
// start in milliseconds). Step ids are the tool_use ids, else the message's
// position in the history ("m3", "m3#1" for its second block).
//
// Metrics are the sums of what Cline reported per API request: cost,
// tokensIn, tokensOut, cacheReads and cacheWrites of each api_req_started
// (Cline reports each request's own cost, so the sum is the task's cost as
// reported, not a calculation). Without ui_messages.json, the per-reply
// metrics in the history are summed instead, and only when some reply
// reports a cost; the history does not report cache writes, so they are 0.
// With no reported cost the session has no metrics.
func ParseTask(t Task) *adapters.Session {
	p := newParser(adapters.Unit{ID: t.ID, ModTime: t.ModTime}, "task_files")
	var msgs []apiMessage
	var paths []string
	if f := t.APIHistory; f != nil {
		paths = append(paths, f.Path)
		var raws []json.RawMessage
		if prob := p.decodeFile(*f, &raws); prob != nil {
			p.problems(*prob)
		}
		msgs = decodeMessages(raws)
	}
	var ui []uiMessage
	if f := t.UIMessages; f != nil {
		paths = append(paths, f.Path)
		var raws []json.RawMessage
		if prob := p.decodeFile(*f, &raws); prob != nil {
			p.problems(*prob)
		}
		for _, r := range raws {
			var m uiMessage
			if decodeItem(r, &m) {
				ui = append(ui, m)
			}
		}
	}
	var meta taskMetadata
	if f := t.Metadata; f != nil {
		paths = append(paths, f.Path)
		if prob := p.decodeFile(*f, &meta); prob != nil {
			p.problems(*prob)
		}
	}
	p.b.Files(paths...)

	// The task's start: its id when that is a time in milliseconds, else
	// the first time any file records.
	var times []adapters.Time
	if ms, ok := idMillis(t.ID); ok {
		p.start = adapters.UnixMilli(ms)
	}
	for _, e := range meta.EnvironmentHistory {
		times = append(times, millis(e.TS))
		if e.ClineVersion != "" {
			p.version = e.ClineVersion
		}
	}
	for _, m := range meta.ModelUsage {
		if at := millis(m.TS); !at.IsZero() && m.Mode != "" {
			p.modes = append(p.modes, modeAt{at: at, mode: m.Mode})
		}
		times = append(times, millis(m.TS))
		p.reported.models = append(p.reported.models, modelUse{at: millis(m.TS), model: m.ModelID})
	}
	var requests []adapters.Time
	for _, m := range ui {
		at := millis(m.TS)
		times = append(times, at)
		if m.Say == "api_req_started" {
			requests = append(requests, at)
			var req apiRequest
			if json.Unmarshal([]byte(m.Text), &req) == nil {
				p.reported.request(req, at)
			}
		}
	}
	for _, m := range msgs {
		times = append(times, millis(m.TS))
	}
	if p.start.IsZero() {
		for _, at := range times {
			if !at.IsZero() && (p.start.IsZero() || at.At.Before(p.start.At)) {
				p.start = at
			}
		}
	}
	if !p.reported.any {
		for _, m := range msgs {
			p.reported.message(m)
		}
	}
	if len(msgs) == 0 {
		return p.finish()
	}
	ats := messageTimes(msgs, requests, newFileDates(meta))
	for _, m := range ui {
		if m.Say == "task" && !millis(m.TS).IsZero() && millis(msgs[0].TS).IsZero() {
			ats[0] = millis(m.TS) // the task was typed before its first request
			break
		}
	}
	if len(requests) == 0 && millis(msgs[0].TS).IsZero() && !p.start.IsZero() && p.start.At.Before(ats[0].At) {
		ats[0] = p.start // no request times: the task was typed when it started
	}
	c := &conv{s: p.b.Stream(""), prefix: "m"}
	p.conversation(c, msgs, ats)
	return p.finish()
}

// ParseSDKSession reads an SDK session: the manifest gives the working
// folder and the start and end; the lead's messages file the steps (with
// their own ids and times); each subagent's messages file the steps of a
// subagent actor, placed in the turn that was current when it ran. The
// mapping of messages is that of ParseTask, except that every user message
// that is not tool results is a prompt, and tool results are tool_result
// blocks. Metrics are the sums of each reply's reported metrics, when some
// reply reports a cost.
func ParseSDKSession(s SDKSession) *adapters.Session {
	p := newParser(adapters.Unit{ID: s.ID, ModTime: s.ModTime}, "session_files")
	p.sdk = true
	h := &p.b.Header
	var man manifest
	if f := s.Manifest; f != nil {
		p.b.Files(f.Path)
		if prob := p.decodeFile(*f, &man); prob != nil {
			p.problems(*prob)
		}
	}
	if h.ID == "" {
		h.ID = man.SessionID
	}
	p.cwd = cmp.Or(man.Cwd, man.WorkspaceRoot)
	if at, ok := adapters.ParseTime(man.StartedAt); ok {
		p.start = at
	}
	if at, ok := adapters.ParseTime(man.EndedAt); ok {
		p.ended = at
	}
	type loaded struct {
		c    *conv
		msgs []apiMessage
	}
	var convs []loaded
	// Each messages file is a stream of its own path, so a segment lists
	// the files its steps came from, not every subagent's of the session.
	read := func(f adapters.File, c *conv) {
		var mf messagesFile
		if prob := p.decodeFile(f, &mf); prob != nil {
			p.problems(*prob)
			return
		}
		if h.ID == "" {
			h.ID = mf.SessionID
		}
		msgs := decodeMessages(mf.Messages)
		for _, m := range msgs {
			p.reported.message(m)
		}
		convs = append(convs, loaded{c, msgs})
	}
	if s.Messages != nil {
		read(*s.Messages, &conv{s: p.b.Stream(s.Messages.Path), prefix: "m"})
	}
	for _, f := range s.Subagents {
		stem := strings.TrimSuffix(filepath.Base(f.Path), messagesSuffix)
		a := p.b.Subagent("agent-" + stem)
		a.Label = "subagent"
		read(f, &conv{s: p.b.Stream(f.Path), actor: a, prefix: stem + ":m"})
	}
	if p.start.IsZero() {
		for _, l := range convs {
			for _, m := range l.msgs {
				if at := millis(m.TS); !at.IsZero() && (p.start.IsZero() || at.At.Before(p.start.At)) {
					p.start = at
				}
			}
		}
	}
	for _, l := range convs {
		p.conversation(l.c, l.msgs, messageTimes(l.msgs, nil, nil))
	}
	return p.finish()
}

func decodeMessages(raws []json.RawMessage) []apiMessage {
	var out []apiMessage
	for _, r := range raws {
		var m apiMessage
		if decodeItem(r, &m) {
			out = append(out, m)
		}
	}
	return out
}

// messageTimes gives each message a time: its own ts; else, for a reply,
// the time of the next API request, else the first time Cline recorded
// reading or editing a file the reply's tool calls name (task_metadata's
// files_in_context, not before the message before), and the tool results
// that follow the last of those times; any other user message the time of
// the reply that follows it (the request went out right after it), else of
// the message before.
func messageTimes(msgs []apiMessage, requests []adapters.Time, files fileDates) []adapters.Time {
	ats := make([]adapters.Time, len(msgs))
	k := 0
	var prev, results adapters.Time
	for i, m := range msgs {
		var next adapters.Time // when the reply's tool results came back
		switch at := millis(m.TS); {
		case !at.IsZero():
			ats[i] = at
			if m.Role == "assistant" {
				k++
			}
		case m.Role == "assistant" && k < len(requests):
			ats[i] = requests[k]
			k++
		case m.Role == "assistant":
			ats[i], next = files.at(m, prev)
		case !results.IsZero():
			ats[i] = results
		}
		results = next
		if !ats[i].IsZero() {
			prev = ats[i]
		}
	}
	for i := len(ats) - 2; i >= 0; i-- {
		if ats[i].IsZero() {
			ats[i] = ats[i+1]
		}
	}
	for i := 1; i < len(ats); i++ {
		if ats[i].IsZero() {
			ats[i] = ats[i-1]
		}
	}
	return ats
}

// fileDates are the times, in milliseconds, at which Cline read or edited
// each file of a task (task_metadata's files_in_context), in order.
type fileDates map[string][]int64

func newFileDates(meta taskMetadata) fileDates {
	out := fileDates{}
	for _, f := range meta.FilesInContext {
		for _, ts := range []*float64{f.ClineReadDate, f.ClineEditDate} {
			if at := millis(ts); !at.IsZero() && f.Path != "" {
				out[f.Path] = append(out[f.Path], int64(*ts))
			}
		}
	}
	for _, d := range out {
		slices.Sort(d)
	}
	return out
}

// at is the first and last of the times the files a reply's tool calls
// name were read or edited, each the first such time not before after.
func (d fileDates) at(m apiMessage, after adapters.Time) (first, last adapters.Time) {
	if len(d) == 0 {
		return
	}
	for _, b := range contentBlocks(m.Content) {
		var in struct {
			Path string `json:"path"`
		}
		if b.Type != "tool_use" || json.Unmarshal(b.Input, &in) != nil {
			continue
		}
		for _, ms := range d[in.Path] {
			at := adapters.UnixMilli(ms)
			if !after.IsZero() && at.At.Before(after.At) {
				continue
			}
			if first.IsZero() || at.At.Before(first.At) {
				first = at
			}
			if last.IsZero() || at.At.After(last.At) {
				last = at
			}
			break
		}
	}
	return first, last
}

func millis(ts *float64) adapters.Time {
	if ts == nil || *ts <= 0 || *ts > 253402300799000 {
		return adapters.Time{}
	}
	return adapters.UnixMilli(int64(*ts))
}

var idMillisRE = regexp.MustCompile(`^(\d{13})(?:_|$)`)

// idMillis reads a task id that is its start in milliseconds (1769053680585,
// or 1769053680585_ab12c for SDK sessions).
func idMillis(id string) (int64, bool) {
	m := idMillisRE.FindStringSubmatch(id)
	if m == nil {
		return 0, false
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	return ms, err == nil
}

type parser struct {
	b        *adapters.Builder
	sdk      bool
	cwd      string
	version  string
	start    adapters.Time
	ended    adapters.Time
	modes    []modeAt
	reported reported
	pending  []*adapters.Step // calls of the last reply still waiting for a result
}

type modeAt struct {
	at   adapters.Time
	mode string
}

// conv is one conversation: the lead's, or a subagent's (actor set).
type conv struct {
	s        *adapters.Stream
	actor    *adapters.Actor
	prefix   string // of positional step ids
	prompted bool
}

func newParser(u adapters.Unit, channel string) *parser {
	return &parser{b: adapters.NewBuilder(u, channel)}
}

func (p *parser) problems(ps ...adapters.Problem) { p.b.Problem(ps...) }

func (p *parser) skip(kind string) { p.b.Skip(kind) }

func (p *parser) conversation(c *conv, msgs []apiMessage, ats []adapters.Time) {
	for i, m := range msgs {
		at := ats[i]
		base := m.ID
		if base == "" {
			base = fmt.Sprintf("%s%d", c.prefix, i)
		}
		switch m.Role {
		case "user":
			p.userMessage(c, base, m, at)
		case "assistant":
			p.assistantMessage(c, base, m, at)
		default:
			p.skip("message role " + m.Role)
		}
	}
}

func blockID(base string, j int) string {
	if j == 0 {
		return base
	}
	return fmt.Sprintf("%s#%d", base, j)
}

var (
	cwdRE  = regexp.MustCompile(`# Current Working Directory \((.+?)\) Files`)
	modeRE = regexp.MustCompile(`# Current Mode\s*\n\s*(ACT|PLAN) MODE`)
	// resultRE is the first line of a tool result Cline writes as text:
	// "[read_file for 'README.md'] Result:".
	resultRE = regexp.MustCompile(`(?s)^\[([A-Za-z_]+)(?: for '.*?')?\] Result:[ \t]*\n?`)
)

func (p *parser) userMessage(c *conv, base string, m apiMessage, at adapters.Time) {
	blocks := contentBlocks(m.Content)
	if len(blocks) == 0 {
		p.skip("empty user message")
		return
	}
	mode := ""
	results := false
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results = true
		}
		if b.Type != "text" {
			continue
		}
		if mm := cwdRE.FindStringSubmatch(b.Text); mm != nil && p.cwd == "" {
			p.cwd = mm[1]
		}
		if mm := modeRE.FindStringSubmatch(b.Text); mm != nil {
			mode = strings.ToLower(mm[1])
		}
	}
	prompted, promptID := false, ""
	var images []json.RawMessage
	for j, b := range blocks {
		id := blockID(base, j)
		switch b.Type {
		case "tool_result":
			if !p.complete(b.ToolUseID, resultText(b.Content), b.IsError) {
				p.skip("tool_result without its call")
			}
		case "text":
			if p.userText(c, id, b.Text, mode, at, results || prompted) && !prompted {
				prompted, promptID = true, id
			}
		case "image":
			images = append(images, imageBlock(b))
		default:
			p.skip(b.Type)
		}
	}
	if prompted {
		c.s.PastedImages(c.actor, promptID, images, at)
	} else if len(images) > 0 {
		p.skip("image of a tool result")
	}
	p.pending = nil
}

// userText maps one text block of a user message; it reports whether the
// block was a prompt.
func (p *parser) userText(c *conv, id, text, mode string, at adapters.Time, notPrompt bool) bool {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return false
	case resultRE.MatchString(t):
		loc := resultRE.FindStringSubmatchIndex(t)
		p.toolResultText(c, id, t[loc[2]:loc[3]], t[loc[1]:], mode, at)
	case strings.HasPrefix(t, "[TASK RESUMPTION]"):
		p.b.NewSegment("resume", at)
		if um := tag(t, "user_message"); um != "" {
			p.prompt(c, id, um, mode, at)
			return true
		}
		p.skip("task resumption")
	case strings.HasPrefix(t, "<environment_details>"):
		p.skip("environment_details")
	case strings.Contains(t, "<task>"):
		p.prompt(c, id, tag(t, "task"), mode, at)
		return true
	case strings.HasPrefix(t, "<feedback>") || strings.HasPrefix(t, "<user_message>") || strings.HasPrefix(t, "<answer>"):
		p.prompt(c, id, cmp.Or(tag(t, "feedback"), tag(t, "user_message"), tag(t, "answer")), mode, at)
		return true
	case p.sdk && !notPrompt:
		p.prompt(c, id, unwrap(t, "user_input"), mode, at)
		return true
	default:
		p.message(c, id, "system", text, at)
	}
	return false
}

// imageBlock is an image block of a user message, as Cline wrote it.
func imageBlock(b block) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"type": "image", "source": b.Source})
	return raw
}

func unwrap(t, name string) string {
	if inner := tag(t, name); inner != "" {
		return inner
	}
	return t
}

// prompt adds what the user typed: in the lead conversation it starts a
// turn; a subagent's first prompt is the task its parent gave it.
func (p *parser) prompt(c *conv, id, text, mode string, at adapters.Time) {
	if c.actor != nil {
		role := "system"
		if !c.prompted {
			role, c.prompted = "task", true
		}
		p.message(c, id, role, text, at)
		return
	}
	p.b.NewTurn(id, mode, at)
	p.message(c, id, "user", text, at)
}

// toolResultText matches a "[tool] Result:" text with the call it answers
// (the first waiting call of that tool, else the first waiting call) and
// adds what the user said in it: feedback after attempt_completion or a
// reply to plan_mode_respond starts a turn; an answer to a question, or
// feedback on a denied or approved call, is a user message in this turn.
func (p *parser) toolResultText(c *conv, id, tool, body string, mode string, at adapters.Time) {
	if s := p.popPending(tool); s == nil || !p.complete(s.St.ID, body, false) {
		p.skip("tool result without its call")
	}
	said := cmp.Or(tag(body, "feedback"), tag(body, "user_message"), tag(body, "answer"))
	if said == "" {
		return
	}
	switch tool {
	case "attempt_completion", "plan_mode_respond":
		p.prompt(c, id, said, mode, at)
	default:
		if c.actor != nil {
			p.message(c, id, "system", said, at)
		} else {
			p.message(c, id, "user", said, at)
		}
	}
}

func (p *parser) popPending(tool string) *adapters.Step {
	idx := -1
	for i, s := range p.pending {
		if s.Call.(*call).name == tool {
			idx = i
			break
		}
	}
	if idx < 0 && len(p.pending) > 0 {
		idx = 0
	}
	if idx < 0 {
		return nil
	}
	s := p.pending[idx]
	p.pending = slices.Delete(p.pending, idx, idx+1)
	return s
}

func (p *parser) assistantMessage(c *conv, base string, m apiMessage, at adapters.Time) {
	p.pending = nil
	if t := p.b.Turn(); m.ModelInfo.Mode != "" && c.actor == nil && t != nil && t.Mode == "" {
		t.Mode = m.ModelInfo.Mode
	}
	blocks := contentBlocks(m.Content)
	if len(blocks) == 0 {
		p.skip("empty reply")
		return
	}
	for j, b := range blocks {
		id := blockID(base, j)
		switch b.Type {
		case "text":
			calls, rest := xmlCalls(b.Text)
			if think := tag(rest, "thinking"); think != "" {
				// Older models wrote their reasoning in <thinking> tags.
				p.message(c, id+".thinking", "thinking", think, at)
				rest = thinkingRE.ReplaceAllString(rest, "")
			}
			if strings.TrimSpace(rest) != "" {
				p.message(c, id, "assistant", strings.TrimSpace(rest), at)
			}
			for k, call := range calls {
				p.toolCall(c, fmt.Sprintf("%s.t%d", id, k), call.name, call.args, nil, at)
			}
		case "thinking", "reasoning":
			if text := cmp.Or(b.Thinking, b.Text); text != "" {
				p.message(c, id, "thinking", text, at)
			}
		case "tool_use":
			p.toolCall(c, cmp.Or(b.ID, id), cmp.Or(b.Name, "unknown"), stringArgs(b.Input), b.Input, at)
		default:
			p.skip(b.Type)
		}
	}
}

func (p *parser) toolCall(c *conv, id, name string, args map[string]string, input json.RawMessage, at adapters.Time) {
	if p.b.Called(id) {
		p.skip("repeated tool call")
		return
	}
	cl := &call{name: name, args: args, input: input}
	st := store.Step{ID: id}
	startTool(p.b, &st, cl, p.cwd)
	s := c.s.Add(c.actor, st, at)
	s.Call = cl
	p.b.Call(id, s)
	p.pending = append(p.pending, s)
	if name == "condense" || name == "summarize_task" {
		p.b.NewSegment("compaction", at)
	}
}

// complete gives call id its result; false when no call has this id.
func (p *parser) complete(id, body string, isError bool) bool {
	steps, known := p.b.Result(id)
	for _, s := range steps {
		finishTool(s.St, s.Call.(*call), body, isError)
	}
	return known
}

func (p *parser) message(c *conv, id, role, text string, at adapters.Time) {
	c.s.Message(c.actor, id, role, text, at)
}

// finish hands the session to the builder: its header, start and modes.
func (p *parser) finish() *adapters.Session {
	p.reported.addUsage(p.b)
	h := &p.b.Header
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(p.version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(p.cwd, "unknown")}
	h.EndedAt = p.ended.Text
	h.Source = "import:" + Kind
	h.Metrics = p.reported.metrics()
	p.b.SetStart(p.start)
	p.b.ModeAt = p.modeAt
	return p.b.Finish()
}

// modeAt is the mode task_metadata.json recorded last before t (its first
// one when none was before).
func (p *parser) modeAt(t adapters.Time) string {
	mode := ""
	for i, m := range p.modes {
		if i == 0 || !m.at.At.After(t.At) {
			mode = m.mode
		}
	}
	return mode
}

// reported sums the usage Cline reported, per API request or per reply.
type reported struct {
	any      bool // some request or reply reported usage
	costSeen bool
	cost     float64
	requests int64
	tokens   store.Tokens
	recs     []adapters.Reported // per request or reply
	models   []modelUse          // task_metadata.json's model_usage
}

func (r *reported) request(q apiRequest, at adapters.Time) {
	r.any = true
	r.requests++
	in := q.TokensIn
	if q.APIProtocol == "openai" {
		in -= q.CacheReads // OpenAI-style input includes the cached tokens
	}
	r.tokens.Input += in
	r.tokens.Output += q.TokensOut
	r.tokens.CacheRead += q.CacheReads
	r.tokens.CacheCreation += q.CacheWrites
	r.recs = append(r.recs, adapters.Reported{
		ID: fmt.Sprintf("request-%d", r.requests), At: at, Model: r.modelAt(at), CostUSD: q.Cost,
		Tokens: pricing.Tokens{Input: in, Output: q.TokensOut, CacheRead: q.CacheReads, CacheCreation: q.CacheWrites},
	})
	if q.Cost != nil {
		r.costSeen = true
		r.cost += *q.Cost
	}
}

func (r *reported) message(m apiMessage) {
	if m.Role != "assistant" {
		return
	}
	mt := m.Metrics
	before := r.tokens
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	switch {
	case mt.Tokens != nil:
		r.tokens.Input += mt.Tokens.Prompt
		r.tokens.Output += mt.Tokens.Completion
		r.tokens.CacheRead += mt.Tokens.Cached
	case mt.InputTokens != nil || mt.OutputTokens != nil || mt.CacheReadTokens != nil || mt.CacheWriteTokens != nil:
		r.tokens.Input += val(mt.InputTokens)
		r.tokens.Output += val(mt.OutputTokens)
		r.tokens.CacheRead += val(mt.CacheReadTokens)
		r.tokens.CacheCreation += val(mt.CacheWriteTokens)
	case mt.Cost == nil:
		return
	}
	r.any = true
	r.requests++
	r.recs = append(r.recs, adapters.Reported{
		ID: fmt.Sprintf("reply-%d", r.requests), At: millis(m.TS), Model: m.ModelInfo.ModelID, CostUSD: mt.Cost,
		Tokens: pricing.Tokens{Input: r.tokens.Input - before.Input, Output: r.tokens.Output - before.Output,
			CacheRead: r.tokens.CacheRead - before.CacheRead, CacheCreation: r.tokens.CacheCreation - before.CacheCreation},
	})
	if mt.Cost != nil {
		r.costSeen = true
		r.cost += *mt.Cost
	}
}

// metrics are the session metrics, only when a cost was reported (the
// store needs every metrics field) and every value is one the store takes.
func (r *reported) metrics() *store.Metrics {
	t := r.tokens
	if !r.costSeen || r.cost < 0 || t.Input < 0 || t.Output < 0 || t.CacheRead < 0 || t.CacheCreation < 0 {
		return nil
	}
	return &store.Metrics{CostUSD: r.cost, APIRequests: r.requests, Tokens: t}
}
