package crush

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// channel is the channel of every step: Crush's own database.
const channel = "storage"

// Parse reads one session, with its subagents, from Crush's database.
//
// Mapping: messages are read in the order Crush wrote them. A user
// message of the session starts a turn; its text parts are the prompt, its
// attached images a pasted-images step, and a command the user ran in
// Crush's shell mode a command step. In an assistant message, reasoning is
// a thinking message, text an assistant message, and each tool call a step
// by tool (tools.go), completed by the tool_result part of the tool
// message that follows. A reply that finished with an error (a provider's)
// or was cancelled adds a system message saying so. Crush's summary of the
// session (its is_summary_message, or the session's summary_message_id)
// starts a segment, compaction, and a turn holding it. A session under this
// one is a subagent: Crush's agent tool runs one, its id the spawning
// call's (or message id and call id joined by $$), and its steps go under
// that call. A title session (title-<id>, Crush naming the session) is
// Crush's housekeeping, not the user's work: its messages make no step.
// Step ids are the tool call ids, else the message id and the part's
// index.
//
// Metrics: Crush records one cost per session, the sum of its requests'
// (its subagents' added in), which is the session's cost_usd. Its token
// columns hold the last request's prompt and completion, not totals, and
// it counts no requests, so tokens and api_requests are 0 (the review app
// shows them as not recorded) and no usage record is made.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channel)
	if len(files) == 0 {
		return b.Finish()
	}
	path := files[0].Path
	b.Files(path)
	b.EnableSpill(adapters.SpillAfter) // a long session's finished steps
	p := &parser{b: b, streams: map[string]*adapters.Stream{}}
	rec, problem := readDB(b, path, u.ID, func(rec *record, m *messageRow) {
		p.rec = rec
		p.message(m)
	})
	if problem != nil {
		// Nothing of a session whose read failed is written: what was
		// built of it is let go, and a builder with the problem alone
		// makes no batch.
		b.Finish().Close()
		failed := adapters.NewBuilder(u, channel)
		failed.Problem(*problem)
		return failed.Finish()
	}
	p.rec = rec
	p.finish(path)
	return b.Finish()
}

type parser struct {
	b       *adapters.Builder
	rec     *record
	streams map[string]*adapters.Stream // by session id
}

// stream is the stream of a session's messages with its actor (nil for
// the session itself); ok is false for a title session.
func (p *parser) stream(sid string) (s *adapters.Stream, a *adapters.Actor, ok bool) {
	if sid != p.rec.Session.ID {
		if strings.HasPrefix(sid, "title-") {
			return nil, nil, false
		}
		a = p.b.Subagent(sid)
		a.Label = "agent"
	}
	s = p.streams[sid]
	if s == nil {
		s = p.b.Stream(sid)
		p.streams[sid] = s
	}
	return s, a, true
}

func (p *parser) message(m *messageRow) {
	s, a, ok := p.stream(m.SessionID)
	if !ok {
		p.b.Skip("title session message")
		return
	}
	at := p.time(m.Created)
	switch m.Role {
	case "user":
		p.prompt(s, a, m, at)
	case "assistant":
		if a == nil && (m.Summary || m.ID == p.rec.Session.SummaryID) {
			p.compaction(m, at)
		}
		p.reply(s, a, m, at)
	case "tool":
		p.results(s, m, at)
	default:
		p.b.Skip("message:" + cmp.Or(m.Role, "?"))
	}
}

// prompt adds a user message: a turn of the session (a subagent's prompt
// is its caller's, in that call's turn), its text, images and shell
// commands.
func (p *parser) prompt(s *adapters.Stream, a *adapters.Actor, m *messageRow, at adapters.Time) {
	var text []string
	var images []json.RawMessage
	var commands []int
	for i, pt := range m.Parts {
		switch d := &pt.Data; pt.Type {
		case "text":
			if strings.TrimSpace(d.Text) != "" {
				text = append(text, d.Text)
			}
		case "binary":
			if strings.HasPrefix(d.MIMEType, "image/") && len(d.Data) > 0 {
				images = append(images, dataURI(d.MIMEType, d.Data))
			} else {
				p.b.Skip("attached file")
			}
		case "image_url":
			if d.URL != "" {
				images = append(images, jsonString(d.URL))
			}
		case "shell_command":
			commands = append(commands, i)
		case "finish":
			// A user message's finish says nothing.
		default:
			p.b.Skip("user part:" + cmp.Or(pt.Type, "?"))
		}
	}
	if len(text) == 0 && len(images) == 0 && len(commands) == 0 {
		return
	}
	if a == nil {
		p.b.NewTurn(m.ID, "", at)
	}
	if len(text) > 0 {
		role := "user"
		if a != nil {
			role = "task" // what the calling agent asked, as Claude Code's subagents
		}
		s.Message(a, m.ID, role, strings.Join(text, "\n\n"), at)
	}
	s.PastedImages(a, m.ID, images, at)
	for _, i := range commands {
		d := &m.Parts[i].Data
		st := store.Step{ID: partID(m, i), Type: store.TypeCommand, Decision: adapters.DecisionNone, Outcome: adapters.OutcomeOK,
			Payload: store.Payload{Command: adapters.Text(d.Command), Stdout: adapters.Text(d.Output), ExitCode: d.ExitCode}}
		s.Add(a, st, at)
	}
}

// compaction starts a segment at Crush's summary of the session so far,
// and a turn that holds it: Crush sends the model the summary and what
// follows it only.
func (p *parser) compaction(m *messageRow, at adapters.Time) {
	if p.b.SegmentSteps() > 0 {
		p.b.NewSegment("compaction", at)
	}
	p.b.NewTurn(m.ID, "", at)
}

// reply adds the steps of an assistant message's parts.
func (p *parser) reply(s *adapters.Stream, a *adapters.Actor, m *messageRow, at adapters.Time) {
	for i := range m.Parts {
		pt := &m.Parts[i]
		switch d := &pt.Data; pt.Type {
		case "text":
			if strings.TrimSpace(d.Text) != "" {
				s.Message(a, partID(m, i), "assistant", d.Text, at)
			} else {
				p.b.Skip("empty text")
			}
		case "reasoning":
			if strings.TrimSpace(d.Thinking) != "" {
				s.Message(a, partID(m, i), "thinking", d.Thinking, at)
			} else {
				p.b.Skip("empty reasoning")
			}
		case "tool_call":
			p.call(s, a, m, i, at)
		case "finish":
			p.finished(s, a, m, i)
		default:
			p.b.Skip("assistant part:" + cmp.Or(pt.Type, "?"))
		}
	}
}

// finished adds a system message for a reply that ended in an error or was
// cancelled: the reason and what Crush said of it, failed when the
// provider answered with an error or refused. A reply stopped by a denied
// permission says nothing more than its call's result does.
func (p *parser) finished(s *adapters.Stream, a *adapters.Actor, m *messageRow, i int) {
	d := &m.Parts[i].Data
	var text string
	var failed *store.StepError // the provider's answer was an error, not a reply
	switch d.Reason {
	case "error":
		why := strings.TrimSpace(cmp.Or(d.Message, "the request failed") + "\n" + d.Details)
		text, failed = "error: "+why, &store.StepError{Type: "api_error", Message: why}
	case "canceled":
		text = "cancelled: " + cmp.Or(d.Message, "the request was cancelled")
	case "content_filter":
		why := cmp.Or(d.Message, d.Details, "content filter")
		text, failed = "refused by the provider: "+why, &store.StepError{Type: "content_filter", Message: why}
	default:
		return
	}
	st := s.Message(a, partID(m, i), "system", text, p.time(cmp.Or(d.Time, m.Finished, m.Created)))
	if failed != nil {
		// As a Claude Code reply that was an API error: a failed step.
		adapters.Fail(st.St, failed.Type, failed.Message)
	}
}

// results completes the calls a tool message answers.
func (p *parser) results(s *adapters.Stream, m *messageRow, at adapters.Time) {
	for _, pt := range m.Parts {
		if pt.Type != "tool_result" {
			p.b.Skip("tool part:" + cmp.Or(pt.Type, "?"))
			continue
		}
		steps, known := p.b.Result(pt.Data.ToolCallID)
		if !known {
			p.b.Skip("result without its call")
			continue
		}
		for _, st := range steps {
			result(st, &pt.Data)
		}
	}
}

// partID is the id of the step a message's part i makes.
func partID(m *messageRow, i int) string { return m.ID + "#" + strconv.Itoa(i) }

// time is a time of Crush's: Unix seconds (its schema's comments say
// milliseconds, and a value that large is read as such); 0 is no time.
func (p *parser) time(v int64) adapters.Time {
	if v <= 0 {
		return adapters.Time{}
	}
	if v < 1e11 {
		v *= 1000
	}
	t := adapters.UnixMilli(v)
	p.b.Observe(t)
	return t
}

// finish names the session, places its subagents under the calls that
// ran them, and sets its cost.
func (p *parser) finish(path string) {
	in := &p.rec.Session
	h := &p.b.Header
	h.Agent = store.Agent{Kind: Kind, Version: "unknown", FormatVersion: p.rec.Schema}
	h.Workspace = store.Workspace{Root: cmp.Or(workspace(path), "unknown")}
	h.Source = "import:" + Kind
	if in.Created > 0 {
		p.b.SetStart(p.time(in.Created))
	}
	for id := range p.rec.Children {
		if _, read := p.streams[id]; !read {
			continue // a title session, or one without messages
		}
		call := id
		if _, after, ok := strings.Cut(id, "$$"); ok {
			call = after
		}
		if steps := p.b.CallSteps(call); len(steps) > 0 {
			p.b.Subagent(id).SpawnedBy(steps[0])
		}
	}
	if in.Cost >= 0 && in.Cost < 1e9 { // not NaN, nor what no session costs
		h.Metrics = &store.Metrics{CostUSD: in.Cost}
	}
}

// dataURI is an attached image as a data: URI in JSON, for PastedImages.
func dataURI(mime string, data []byte) json.RawMessage {
	return jsonString("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data))
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
