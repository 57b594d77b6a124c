package opencode

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// channel is the channel of every step: opencode's own storage.
const channel = "storage"

// Parse reads one session: from opencode's database when the unit's first
// file is one, else from its storage files or an export file.
//
// Mapping: each user message starts a turn, its mode the agent opencode
// ran it with (build, plan); its text parts are the prompt (synthetic text
// opencode adds, such as a file's content, is skipped). In an assistant
// message, parts are read in id order (opencode's ids grow with time):
// text is an assistant message, reasoning a thinking message (encrypted
// reasoning has no text and is skipped), and a tool part is a step by tool
// (tools.go). step-start, step-finish, snapshot and patch parts make no
// step; a compaction part starts a segment and a turn, which holds the summary.
// An assistant message that ended in an error (aborted, a provider error)
// adds a system message naming it. Step ids are opencode's part
// ids. A child session (a task's subagent) is imported as a session of its
// own, as opencode keeps it.
//
// Metrics: opencode reports cost and tokens per assistant message; the
// session's metrics are their sums, or the session row's cost and token
// columns where the database has them (1.16 and later). Its input tokens
// already leave out cache reads and writes. Reasoning tokens have no field
// in v1.2 and are not added to output.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channel)
	var rec *record
	var totals *store.Metrics
	if len(files) > 0 && adapters.IsSQLite(files[0].Path) {
		rec, totals = readDB(b, files[0].Path, u.ID)
		b.Files(files[0].Path)
	} else {
		rec = readFiles(b, files)
		for _, f := range files {
			// Part files are many and their messages name them; a message
			// file is a source of the segment its steps went to
			// (parser.message), not of every segment.
			if k := storageKind(f.Path); k != "part" && k != "message" {
				b.Files(f.Path)
			}
		}
	}
	if rec == nil {
		return b.Finish()
	}
	p := &parser{b: b, s: b.Stream("")}
	for i := range rec.Messages {
		p.message(&rec.Messages[i])
	}
	p.finish(rec, totals)
	return b.Finish()
}

type parser struct {
	b *adapters.Builder
	s *adapters.Stream

	cwd, root string
	metrics   store.Metrics
	reported  bool // a message reported its cost
}

func (p *parser) message(m *message) {
	in := &m.Info
	at := p.time(in.Time.Created)
	if in.Path.Cwd != "" {
		p.cwd = in.Path.Cwd
	}
	if p.root == "" {
		p.root = in.Path.Root
	}
	switch in.Role {
	case "user":
		p.prompt(m, at)
	case "assistant":
		p.reply(m, at)
		p.usage(in, at)
		p.failure(in, at)
	default:
		p.b.Skip("message:" + cmp.Or(in.Role, "?"))
	}
	p.b.SegmentFile(m.file)
}

// prompt starts a turn with the user's text parts and the images attached.
func (p *parser) prompt(m *message, at adapters.Time) {
	var text []string
	var images []json.RawMessage
	id, opened := m.Info.ID, false
	for _, pt := range m.Parts {
		switch {
		case pt.Type == "text" && !pt.Synthetic && strings.TrimSpace(pt.Text) != "":
			if len(text) == 0 {
				id = cmp.Or(pt.ID, id)
			}
			text = append(text, pt.Text)
		case pt.Type == "compaction":
			// The summary opencode writes next is the new segment's first
			// turn, so no turn spans two segments.
			if p.b.SegmentSteps() > 0 {
				p.b.NewSegment("compaction", at)
			}
			p.b.NewTurn(m.Info.ID, cmp.Or(m.Info.Agent, m.Info.Mode), at)
			opened = true
		case pt.Type == "file" && strings.HasPrefix(pt.URL, "data:image/"):
			images = append(images, imageURI(pt.URL))
		default:
			p.b.Skip("user part:" + cmp.Or(pt.Type, "?"))
		}
	}
	if len(text) == 0 && len(images) == 0 {
		return
	}
	if !opened {
		p.b.NewTurn(m.Info.ID, cmp.Or(m.Info.Agent, m.Info.Mode), at)
	}
	p.s.Message(nil, id, "user", strings.Join(text, "\n\n"), at)
	p.s.PastedImages(nil, id, images, at)
}

// imageURI is an attached image's data: URI as JSON, for PastedImages.
func imageURI(uri string) json.RawMessage {
	b, _ := json.Marshal(uri)
	return b
}

// reply adds the steps of an assistant message's parts.
func (p *parser) reply(m *message, at adapters.Time) {
	for i := range m.Parts {
		pt := &m.Parts[i]
		ptAt := at
		if pt.Time.Start > 0 {
			ptAt = p.time(pt.Time.Start)
		}
		switch pt.Type {
		case "text":
			if strings.TrimSpace(pt.Text) != "" && !pt.Synthetic {
				p.s.Message(nil, pt.ID, "assistant", pt.Text, ptAt)
			} else {
				p.b.Skip("empty text")
			}
		case "reasoning":
			if strings.TrimSpace(pt.Text) != "" {
				p.s.Message(nil, pt.ID, "thinking", pt.Text, ptAt)
			} else {
				p.b.Skip("encrypted reasoning")
			}
		case "tool":
			if pt.State.Time.Start > 0 {
				ptAt = p.time(pt.State.Time.Start)
			}
			p.tool(pt, ptAt)
		default:
			p.b.Skip(cmp.Or(pt.Type, "untyped part"))
		}
	}
}

// failure adds a system message for an assistant message that ended in an
// error (the user aborted it, the provider failed): its name and message,
// failed unless the user aborted it.
func (p *parser) failure(in *messageInfo, at adapters.Time) {
	if !adapters.Present(in.Error) {
		return
	}
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	json.Unmarshal(in.Error, &e)
	text := strings.TrimSuffix(strings.TrimSpace(cmp.Or(e.Name, "error")+": "+e.Data.Message), ":")
	st := p.s.Message(nil, in.ID+"-error", "system", text, p.time(cmp.Or(in.Time.Completed, in.Time.Created)))
	if e.Name != "MessageAbortedError" {
		// The provider's error (APIError, ProviderAuthError,
		// MessageOutputLengthError, UnknownError): a failed step, as a
		// Claude Code reply that was an API error; an abort is the user's.
		adapters.Fail(st.St, "api_error", text)
	}
}

// usage adds what an assistant message reported.
func (p *parser) usage(in *messageInfo, at adapters.Time) {
	if in.Cost == nil && in.Tokens == nil {
		return
	}
	p.addUsage(in, at)
	p.metrics.APIRequests++
	if in.Cost != nil {
		p.reported = true
		p.metrics.CostUSD += *in.Cost
	}
	if t := in.Tokens; t != nil {
		p.metrics.Tokens.Input += t.Input
		p.metrics.Tokens.Output += t.Output
		p.metrics.Tokens.CacheRead += t.Cache.Read
		p.metrics.Tokens.CacheCreation += t.Cache.Write
	}
}

// time is opencode's time in milliseconds; 0 is no time.
func (p *parser) time(ms int64) adapters.Time {
	if ms <= 0 {
		return adapters.Time{}
	}
	t := adapters.UnixMilli(ms)
	p.b.Observe(t)
	return t
}

// finish names the session and hands it to the builder.
func (p *parser) finish(rec *record, totals *store.Metrics) {
	in := &rec.Info
	h := &p.b.Header
	if h.ID == "" {
		h.ID = in.ID
	}
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(in.Version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(in.Directory, p.root, p.cwd, "unknown")}
	h.Source = "import:" + Kind
	if in.Time.Created > 0 {
		p.b.SetStart(adapters.UnixMilli(in.Time.Created))
	}
	switch {
	case totals != nil:
		totals.APIRequests = p.metrics.APIRequests
		h.Metrics = totals
	case p.reported:
		m := p.metrics
		h.Metrics = &m
	}
}
