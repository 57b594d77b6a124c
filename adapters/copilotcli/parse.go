package copilotcli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

var channels = []string{"transcript"}

// event is one line of events.jsonl: {type, data, id, timestamp, parentId}.
type event struct {
	Type      string          `json:"type"`
	AgentID   string          `json:"agentId"` // a subagent's events only
	Data      json.RawMessage `json:"data"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
}

// data holds the fields of every event kind the adapter reads.
type data struct {
	// session.start
	SessionID      string `json:"sessionId"`
	CopilotVersion string `json:"copilotVersion"`
	StartTime      string `json:"startTime"`
	Context        struct {
		Cwd        string `json:"cwd"`
		GitRoot    string `json:"gitRoot"`
		Repository string `json:"repository"`
	} `json:"context"`
	// session.mode_changed
	NewMode string `json:"newMode"`
	// user.message, assistant.message
	Content            string `json:"content"`
	TransformedContent string `json:"transformedContent"`
	AgentMode          string `json:"agentMode"`
	AutopilotNudge     bool   `json:"isAutopilotContinuation"`
	ReasoningText      string `json:"reasoningText"`
	ToolRequests       []struct {
		ToolCallID string          `json:"toolCallId"`
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
	} `json:"toolRequests"`
	// tool.execution_start, tool.execution_complete
	ToolCallID       string          `json:"toolCallId"`
	ParentToolCallID string          `json:"parentToolCallId"` // older than agentId
	AgentDisplayName string          `json:"agentDisplayName"`
	ToolName         string          `json:"toolName"`
	Arguments        json.RawMessage `json:"arguments"`
	Success          *bool           `json:"success"`
	Result           json.RawMessage `json:"result"` // a permission.completed's too
	Error            json.RawMessage `json:"error"`
	// session.error
	ErrorType string `json:"errorType"`
	Message   string `json:"message"`
	// session.shutdown
	ModelMetrics map[string]struct {
		Requests struct {
			Count int64 `json:"count"`
		} `json:"requests"`
		Usage struct {
			Input      int64 `json:"inputTokens"`
			Output     int64 `json:"outputTokens"`
			CacheRead  int64 `json:"cacheReadTokens"`
			CacheWrite int64 `json:"cacheWriteTokens"`
		} `json:"usage"`
	} `json:"modelMetrics"`
}

// Parse reads one session: an events.jsonl log, or a legacy
// history-session-state JSON file (history.go).
//
// Mapping of events.jsonl: session.start gives the session's id, start,
// Copilot version and workspace (the git root, else the cwd; the GitHub
// repository). Each user.message starts a turn whose mode is its agentMode
// (else the last session.mode_changed); its content is the user's prompt,
// and a message with no content or isAutopilotContinuation (Copilot's own
// autopilot nudge) is a system message. An assistant.message gives a
// thinking message (reasoningText; reasoningOpaque is encrypted and
// skipped), a reply (content) and a step per toolRequest; a
// tool.execution_start for a call not requested before adds its step;
// tool.execution_complete completes it (tools.go). A permission.completed
// gives the call's decision (approved: accepted, denied: rejected and not
// run); without one a call is auto in autopilot mode, otherwise unknown.
// Events with an agentId (older: a parentToolCallId) are a subagent's,
// spawned by the call subagent.started names; its task prompt opens no
// turn. session.resume, session.compaction_complete and
// session.context_cleared start segments. A session.error (a failed
// model request, mostly) is a failed system message, its errorType the
// error's type. Step ids are the toolCallId of
// tool calls and the event id of everything else.
//
// Copilot reports tokens and requests (session.shutdown's modelMetrics,
// accumulated over the session, so the last shutdown's count) but no cost
// in dollars, and metrics need one: the session has no metrics and the
// tokens go to Session.Usage. A resume reopens the session (no ended_at
// until the next shutdown).
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channels...)
	b.Header.Source = "import:" + Kind
	b.EnableSpill(adapters.SpillAfter) // an events log's finished steps, past 32 MB or many steps
	for _, f := range files {
		b.Files(f.Path)
		if strings.HasSuffix(f.Path, ".json") {
			parseHistory(b, f)
			continue
		}
		p := &parser{b: b, s: b.Stream(f.Path), asked: map[string]string{}}
		p.read(f)
	}
	h := &b.Header
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(h.Agent.Version, "unknown")}
	h.Workspace.Root = cmp.Or(h.Workspace.Root, "unknown")
	return b.Finish()
}

type parser struct {
	b    *adapters.Builder
	s    *adapters.Stream
	mode string
	cwd  string
	// asked is the user's answer to a call's permission request, by call.
	asked map[string]string
}

// read decodes the log's lines in order; a broken line is reported with
// its path and number, a broken last line without its newline marks the
// file as still being written.
func (p *parser) read(f adapters.File) {
	problems := adapters.ReadLines(f, func(n int, line []byte, terminated bool) {
		p.b.Read(len(line) + 1)
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		var ev event
		var d data
		err := json.Unmarshal(line, &ev)
		if err == nil && adapters.Present(ev.Data) {
			err = json.Unmarshal(ev.Data, &d)
		}
		if err != nil {
			msg := "invalid JSON"
			if json.Valid(line) {
				msg = "not a Copilot event: " + err.Error()
			}
			p.b.BadLine(f.Path, n, terminated, msg)
			return
		}
		ev.ID = cmp.Or(ev.ID, fmt.Sprintf("%s:%d", filepath.Base(f.Path), n))
		at, _ := adapters.ParseTime(ev.Timestamp)
		p.b.Observe(at)
		p.event(&ev, &d, at)
	})
	p.b.Problem(problems...)
}

// event maps one event (see Parse).
func (p *parser) event(ev *event, d *data, at adapters.Time) {
	b := p.b
	switch ev.Type {
	case "session.start":
		h := &b.Header
		if d.SessionID != "" && store.PlainID(d.SessionID) {
			h.ID = d.SessionID
		}
		h.Agent.Version = cmp.Or(d.CopilotVersion, h.Agent.Version)
		h.Workspace.Root = cmp.Or(d.Context.GitRoot, d.Context.Cwd, h.Workspace.Root)
		if d.Context.Repository != "" {
			h.Workspace.Repo = d.Context.Repository
		}
		p.cwd = cmp.Or(d.Context.Cwd, p.cwd)
		if t, ok := adapters.ParseTime(d.StartTime); ok {
			b.SetStart(t)
		}
	case "session.resume", "session.compaction_complete", "session.context_cleared":
		if ev.Type == "session.resume" {
			b.Header.EndedAt = ""
		}
		if b.SegmentSteps() > 0 {
			b.NewSegment(segmentReasons[ev.Type], at)
		}
	case "session.mode_changed":
		p.mode = cmp.Or(d.NewMode, p.mode)
	case "subagent.started":
		if a := p.actor(ev.AgentID, d.ToolCallID); a != nil {
			a.Label = cmp.Or(d.AgentDisplayName, a.Label)
		}
	case "user.message":
		role := "user"
		if d.Content == "" || d.AutopilotNudge {
			role = "system"
		}
		text := cmp.Or(d.Content, stripDatetime(d.TransformedContent))
		if a := p.actor(ev.AgentID, d.ParentToolCallID); a != nil {
			p.s.Message(a, ev.ID, role, text, at) // the subagent's task
			return
		}
		p.mode = cmp.Or(d.AgentMode, p.mode)
		b.NewTurn(ev.ID, p.mode, at)
		p.s.Message(nil, ev.ID, role, text, at)
	case "assistant.message":
		a := p.actor(ev.AgentID, d.ParentToolCallID)
		if strings.TrimSpace(d.ReasoningText) != "" {
			p.s.Message(a, ev.ID+":thinking", "thinking", d.ReasoningText, at)
		}
		if strings.TrimSpace(d.Content) != "" {
			p.s.Message(a, ev.ID, "assistant", d.Content, at)
		}
		for i, r := range d.ToolRequests {
			p.call(a, cmp.Or(r.ToolCallID, fmt.Sprintf("%s#%d", ev.ID, i)), r.Name, r.Arguments, at)
		}
	case "tool.execution_start":
		p.call(p.actor(ev.AgentID, d.ParentToolCallID), cmp.Or(d.ToolCallID, ev.ID), d.ToolName, d.Arguments, at)
	case "permission.completed":
		p.permission(d)
	case "tool.execution_complete":
		p.result(d)
	case "session.error":
		// An error Copilot showed: mostly a model request that failed or
		// was refused (errorType quota, rate_limit, authentication,
		// context_limit, ...). A failed step, as a Claude Code reply that
		// was an API error.
		text := strings.TrimSpace(cmp.Or(d.Message, d.ErrorType, "error"))
		st := p.s.Message(p.actor(ev.AgentID, d.ParentToolCallID), ev.ID, "system", text, at)
		adapters.Fail(st.St, cmp.Or(d.ErrorType, "error"), text)
	case "session.shutdown":
		p.usage(d, at)
		b.Header.EndedAt = at.Text
	default:
		b.Skip(cmp.Or(ev.Type, "untyped event"))
	}
}

var segmentReasons = map[string]string{
	"session.resume": "resume", "session.compaction_complete": "compaction", "session.context_cleared": "clear",
}

var datetimeRE = regexp.MustCompile(`^\s*<current_datetime>[^<]*</current_datetime>\s*`)

func stripDatetime(s string) string { return datetimeRE.ReplaceAllString(s, "") }

// decision is how a call was allowed: as its permission.completed says
// when Copilot wrote one, else auto in autopilot mode (Copilot runs every
// tool without asking), else unknown.
func (p *parser) decision(callID string) string {
	switch {
	case p.asked[callID] != "":
		return p.asked[callID]
	case p.mode == "autopilot":
		return adapters.DecisionAuto
	}
	return adapters.DecisionUnknown
}

// permission keeps the answer to a call's permission request: any
// "approved…" kind is accepted, any "denied…" kind (by the user, a rule,
// a hook or a policy) rejected.
func (p *parser) permission(d *data) {
	var res struct {
		Kind string `json:"kind"`
	}
	json.Unmarshal(d.Result, &res)
	switch {
	case d.ToolCallID == "":
		p.b.Skip("permission.completed")
	case strings.HasPrefix(res.Kind, "approved"):
		p.asked[d.ToolCallID] = adapters.DecisionAccepted
	case strings.HasPrefix(res.Kind, "denied"):
		p.asked[d.ToolCallID] = adapters.DecisionRejected
	default:
		p.b.Skip("permission.completed")
	}
}

// actor is the subagent an event is from: the one with the event's
// agentId, else (older logs) the one the call spawnerID started; nil for
// the root agent. The subagent joins the turn of the call that spawned it.
func (p *parser) actor(agentID, spawnerID string) *adapters.Actor {
	id := cmp.Or(agentID, spawnerID)
	if id == "" {
		return nil
	}
	a := p.b.Subagent(id)
	if steps := p.b.CallSteps(spawnerID); len(steps) > 0 {
		a.SpawnedBy(steps[0])
	}
	return a
}

func (p *parser) call(a *adapters.Actor, id, name string, raw json.RawMessage, at adapters.Time) {
	if p.b.Called(id) {
		p.b.Skip("repeated call")
		return
	}
	p.b.Call(id, p.s.Add(a, toolStep(id, name, raw, p.cwd), at))
}

// result completes a call with tool.execution_complete's result, whose
// content is what the model saw (detailedContent, a diff for views and
// edits, is left out).
func (p *parser) result(d *data) {
	steps, known := p.b.Result(d.ToolCallID)
	if !known {
		p.b.Skip("result without its call")
		return
	}
	var res struct {
		Content string `json:"content"`
	}
	json.Unmarshal(d.Result, &res)
	errText, code := errorText(d.Error)
	ok := d.Success == nil || *d.Success
	decision := p.decision(d.ToolCallID)
	if !ok && decision != adapters.DecisionRejected && refused(code, errText) {
		decision = adapters.DecisionRejected
	}
	for _, s := range steps {
		complete(s.St, decision, ok, res.Content, errText, d.Result)
	}
}

// errorText is an error given as a string or as {message, code}.
func errorText(raw json.RawMessage) (message, code string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var e struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
	json.Unmarshal(raw, &e)
	return e.Message, e.Code
}
