package qwencode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

var channels = []string{"chat"}

// record is one line of a chat recording (Qwen Code's ChatRecord).
type record struct {
	UUID           string          `json:"uuid"`
	SessionID      string          `json:"sessionId"`
	Timestamp      string          `json:"timestamp"`
	Type           string          `json:"type"`
	Subtype        string          `json:"subtype"`
	Cwd            string          `json:"cwd"`
	Version        string          `json:"version"`
	Model          string          `json:"model"`
	Message        *content        `json:"message"`
	Usage          *usageMetadata  `json:"usageMetadata"`
	ToolCallResult *toolCallResult `json:"toolCallResult"`
	SystemPayload  json.RawMessage `json:"systemPayload"`
	AgentID        string          `json:"agentId"`
	AgentName      string          `json:"agentName"`
}

// content is a Gemini API Content: a role and its parts.
type content struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// part is one part of a Content; the raw part is kept beside it for images.
type part struct {
	Text             *string           `json:"text"`
	Thought          bool              `json:"thought"`
	FunctionCall     *functionCall     `json:"functionCall"`
	FunctionResponse *functionResponse `json:"functionResponse"`
}

type functionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Parse reads one session's chat recordings, each in file order.
//
// Mapping: every record is read in the order written, whatever its
// parentUuid: Qwen Code appends and never rewrites, and a rewind only
// re-roots the chain so that a resume skips the rewound records, which
// still ran; so they stay steps (a re-read keeps them), and the rewind
// starts a segment "rewind". A record whose uuid was read already is
// skipped. A user record without subtype opens a turn with a user message:
// what was typed (systemPayload.displayText) when given, else its text
// parts; its images are a pasted-images step. A mid-turn user message is a
// user message in the current turn; notifications, cron and goal prompts
// are system messages. A slash command's invocation opens a turn with the
// command as its user message (the prompt it sends, if any, joins that
// turn). An assistant record gives a thinking message of its thought
// parts, an assistant message of its text, then a step per functionCall
// (see toolStep), completed by the tool_result whose callId names it. A
// chat_compression record starts a segment "compaction" and its summary
// is a summary message; a change of CLI version mid-file starts a segment
// "resume". ui_telemetry tool_call events give the decision of the next
// result of the same tool and arguments; an api_error event (a request to
// the model that failed) is a failed system message of its error;
// api_response events repeat the assistant records' usageMetadata and are
// skipped, as are the other system records. Records with an agentId are a subagent's, under the
// actor agent-<agentId>. The session's version is the first record's,
// its workspace the first cwd. Qwen Code reports tokens but no cost: each
// assistant record's usageMetadata is one response in Session.Usage (input
// less cached, output without thoughts, as for Gemini CLI), and the session
// has no metrics.
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channels...)
	b.EnableSpill(adapters.SpillAfter)
	p := &parser{b: b, seen: map[adapters.Key]struct{}{}, used: map[string]bool{}, repeats: map[string]int{},
		waiting: map[string][]string{}, decisions: map[string][]string{}}
	for _, f := range files {
		b.Files(f.Path)
		p.s = b.Stream(f.Path)
		p.readLines(f)
	}
	return p.finish()
}

type parser struct {
	b *adapters.Builder
	s *adapters.Stream

	sid, cwd, version, lastVersion string
	mode                           string // the last approval mode recorded
	slashTurn                      bool   // a slash command sent to the model opened the turn its prompt joins

	seen      map[adapters.Key]struct{} // record uuids read
	used      map[string]bool           // step ids given
	repeats   map[string]int
	waiting   map[string][]string // call id -> ids of its steps awaiting a result, oldest first
	decisions map[string][]string // tool and arguments -> decisions telemetry recorded, oldest first
}

// readLines reads one recording: a broken line is reported and skipped, a
// broken last line without its newline marks the file as still being
// written.
func (p *parser) readLines(f adapters.File) {
	problems := adapters.ReadLines(f, func(n int, line []byte, terminated bool) {
		p.b.Read(len(line) + 1)
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		var r record
		if err := adapters.DecodeObject(line, &r); err != nil {
			p.b.BadLine(f.Path, n, terminated, err.Error())
			return
		}
		if r.UUID == "" {
			r.UUID = fmt.Sprintf("%s:%d", filepath.Base(f.Path), n)
		}
		p.record(&r)
	})
	p.b.Problem(problems...)
}

func (p *parser) record(r *record) {
	k := adapters.KeyOf(r.UUID)
	if _, dup := p.seen[k]; dup {
		p.b.Skip("repeated record")
		return
	}
	p.seen[k] = struct{}{}
	at, _ := adapters.ParseTime(r.Timestamp)
	p.b.Observe(at)
	p.header(r, at)
	switch r.Type {
	case "user":
		p.user(r, at)
	case "assistant":
		p.assistant(r, at)
	case "tool_result":
		p.toolResult(r, at)
	case "system":
		p.system(r, at)
	default:
		p.b.Skip("record:" + r.Type)
	}
}

// header keeps the session's id, workspace and version from the first
// records that name them; a later record of another CLI version was
// written after the session was resumed by that version.
func (p *parser) header(r *record, at adapters.Time) {
	p.sid = cmp.Or(p.sid, r.SessionID)
	p.cwd = cmp.Or(p.cwd, r.Cwd)
	p.version = cmp.Or(p.version, r.Version)
	if r.Version == "" {
		return
	}
	if p.lastVersion != "" && r.Version != p.lastVersion && p.b.SegmentSteps() > 0 {
		p.b.NewSegment("resume", at)
	}
	p.lastVersion = r.Version
}

// actor is the subagent whose record this is, nil for the main agent.
func (p *parser) actor(r *record) *adapters.Actor {
	if r.AgentID == "" {
		return nil
	}
	a := p.b.Subagent("agent-" + r.AgentID)
	if a.Label == "" {
		a.Label = cmp.Or(r.AgentName, r.AgentID)
	}
	return a
}

// stepID is id, or when a step has it already, id with the next free "#n".
func (p *parser) stepID(id string) string {
	out := id
	for p.used[out] {
		p.repeats[id]++
		out = fmt.Sprintf("%s#%d", id, p.repeats[id]+1)
	}
	p.used[out] = true
	return out
}

// user maps a user record: a prompt, or text Qwen Code sent in its name.
func (p *parser) user(r *record, at adapters.Time) {
	text, images := p.userText(r)
	id := p.stepID(r.UUID)
	a := p.actor(r)
	switch {
	case a != nil:
		p.s.Message(a, id, "task", text, at) // a subagent's task, as Claude Code's: no turn of its own
	case r.Subtype == "" || r.Subtype == "realtime_message":
		if !p.slashTurn {
			p.b.NewTurn(id, p.mode, at)
		}
		p.slashTurn = false
		p.s.Message(nil, id, "user", text, at)
		p.s.PastedImages(nil, id, images, at)
	case r.Subtype == "mid_turn_user_message":
		p.s.Message(nil, id, "user", text, at)
		p.s.PastedImages(nil, id, images, at)
	default: // notification, cron, goal_runtime
		p.s.Message(nil, id, "system", text, at)
	}
}

// userText is what the user typed (the payload's displayText) when given,
// else the record's text parts; and the image parts.
func (p *parser) userText(r *record) (string, []json.RawMessage) {
	var payload struct {
		DisplayText string `json:"displayText"`
	}
	json.Unmarshal(r.SystemPayload, &payload)
	var texts []string
	var images []json.RawMessage
	for _, raw := range parts(r) {
		var pt part
		json.Unmarshal(raw, &pt)
		if pt.Text != nil && !pt.Thought {
			texts = append(texts, *pt.Text)
		} else if store.FindImages(raw) != nil {
			images = append(images, raw)
		}
	}
	if strings.TrimSpace(payload.DisplayText) != "" {
		return payload.DisplayText, images
	}
	return strings.Join(texts, ""), images
}

func parts(r *record) []json.RawMessage {
	if r.Message == nil {
		return nil
	}
	return r.Message.Parts
}

// assistant maps a model reply: its thoughts, its text, then its calls.
func (p *parser) assistant(r *record, at adapters.Time) {
	a := p.actor(r)
	var thoughts, texts []string
	var calls []*functionCall
	for _, raw := range parts(r) {
		var pt part
		adapters.DecodeObject(raw, &pt)
		switch {
		case pt.FunctionCall != nil:
			calls = append(calls, pt.FunctionCall)
		case pt.Text != nil && pt.Thought:
			thoughts = append(thoughts, *pt.Text)
		case pt.Text != nil:
			texts = append(texts, *pt.Text)
		}
	}
	if th := strings.Join(thoughts, ""); strings.TrimSpace(th) != "" {
		p.s.Message(a, p.stepID(r.UUID+"#thinking"), "thinking", th, at)
	}
	if text := strings.Join(texts, ""); strings.TrimSpace(text) != "" {
		p.s.Message(a, p.stepID(r.UUID), "assistant", text, at)
	}
	for i, fc := range calls {
		callID := cmp.Or(fc.ID, fmt.Sprintf("%s#call%d", r.UUID, i+1))
		c := &call{name: fc.Name, args: fc.Args, cwd: r.Cwd}
		step := p.s.Add(a, p.toolStep(p.stepID(callID), c, nil), at)
		step.Call = c
		p.b.Call(step.St.ID, step)
		p.waiting[callID] = append(p.waiting[callID], step.St.ID)
	}
	p.addUsage(r, a, at)
}

// system maps a system record: most only help Qwen Code resume a session.
func (p *parser) system(r *record, at adapters.Time) {
	var payload struct {
		UIEvent struct {
			Name         string          `json:"event.name"`
			FunctionName string          `json:"function_name"`
			FunctionArgs json.RawMessage `json:"function_args"`
			Decision     string          `json:"decision"`
			Error        string          `json:"error"`         // api_error
			ErrorMessage string          `json:"error_message"` // api_error, in some versions
		} `json:"uiEvent"`
		Phase             string     `json:"phase"`
		RawCommand        string     `json:"rawCommand"`
		SentToModel       bool       `json:"sentToModel"`
		DisplayText       string     `json:"displayText"`
		Mode              string     `json:"mode"`
		CompressedHistory []*content `json:"compressedHistory"`
	}
	adapters.DecodeObject(r.SystemPayload, &payload)
	switch r.Subtype {
	case "ui_telemetry":
		ev := payload.UIEvent
		name := ev.Name[strings.LastIndex(ev.Name, ".")+1:]
		if name == "tool_call" && ev.Decision != "" {
			k := callKey(ev.FunctionName, ev.FunctionArgs)
			p.decisions[k] = append(p.decisions[k], ev.Decision)
		}
		if name == "api_error" {
			// A request to the model that failed (each retry its own):
			// a failed step, as a Claude Code reply that was an API error.
			text := strings.TrimSpace(cmp.Or(ev.Error, ev.ErrorMessage, "the request to the model failed"))
			st := p.s.Message(p.actor(r), p.stepID(r.UUID), "system", text, at)
			adapters.Fail(st.St, "api_error", text)
			return
		}
		p.b.Skip("ui_telemetry:" + name)
	case "slash_command":
		if payload.Phase != "invocation" || payload.RawCommand == "" {
			p.b.Skip("slash_command:" + payload.Phase)
			return
		}
		id := p.stepID(r.UUID)
		p.b.NewTurn(id, p.mode, at)
		p.s.Message(nil, id, "user", payload.RawCommand, at)
		p.slashTurn = payload.SentToModel
	case "chat_compression":
		p.b.NewSegment("compaction", at)
		if len(payload.CompressedHistory) > 0 && payload.CompressedHistory[0] != nil {
			if text := partsText(payload.CompressedHistory[0].Parts); strings.TrimSpace(text) != "" {
				p.s.Message(nil, p.stepID(r.UUID), "summary", text, at)
			}
		}
	case "rewind":
		p.b.NewSegment("rewind", at)
	case "notification", "background_task_completed":
		p.s.Message(p.actor(r), p.stepID(r.UUID), "system", payload.DisplayText, at)
	case "session_approval_mode":
		p.mode = cmp.Or(payload.Mode, p.mode)
		p.b.Skip("system:" + r.Subtype)
	default: // attribution_snapshot, custom_title, file_history_snapshot, ...
		p.b.Skip("system:" + r.Subtype)
	}
}

// partsText is the text of a Content's parts, thoughts left out.
func partsText(raws []json.RawMessage) string {
	var b strings.Builder
	for _, raw := range raws {
		var pt part
		json.Unmarshal(raw, &pt)
		if pt.Text != nil && !pt.Thought {
			b.WriteString(*pt.Text)
		}
	}
	return b.String()
}

// finish names the session and hands it to the builder.
func (p *parser) finish() *adapters.Session {
	h := &p.b.Header
	if h.ID == "" {
		h.ID = p.sid
	}
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(p.version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(p.cwd, "unknown")}
	h.Source = "import:" + Kind
	return p.b.Finish()
}
