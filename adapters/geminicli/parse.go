package geminicli

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

var channels = []string{"chat"}

// conversation is a legacy session file, or the header line of a JSONL one.
type conversation struct {
	SessionID   string            `json:"sessionId"`
	ProjectHash string            `json:"projectHash"`
	StartTime   string            `json:"startTime"`
	Messages    []json.RawMessage `json:"messages"`
}

// message is a MessageRecord: a user prompt, a gemini reply (with its
// thoughts, tokens and tool calls), or an info, warning or error line.
type message struct {
	ID             string          `json:"id"`
	Timestamp      string          `json:"timestamp"`
	Type           string          `json:"type"`
	Content        json.RawMessage `json:"content"`
	DisplayContent json.RawMessage `json:"displayContent"`
	Thoughts       []struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
		Timestamp   string `json:"timestamp"`
	} `json:"thoughts"`
	Tokens *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
		Tool     int64 `json:"tool"`
	} `json:"tokens"`
	ToolCalls []toolCall `json:"toolCalls"`
	Model     string     `json:"model"`
}

type toolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// record is one line of a JSONL session: the header, a message, or a
// {"$set": {...}} update of the header.
type record struct {
	message
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	StartTime   string          `json:"startTime"`
	Set         json.RawMessage `json:"$set"`
}

// Parse reads one session's files, in order.
//
// Mapping: the last record of each message id wins (Gemini writes a message
// again as it grows), in the place of its first. A user message starts a
// turn; its text is what the user typed (displayContent) when it holds
// text, else what was sent. A gemini message gives a thinking step of its
// thoughts, an assistant step of its text, and a step per tool call, whose
// result is in the call: run_shell_command is a command (exit code from
// "Exit Code: N" in its output), replace and edit are edits and write_file
// a full write (structured patch: resultDisplay.fileDiff), read_file a
// read, any other tool an other step. A call's status success is ok, error
// failed, cancelled rejected (not run); Gemini records no approvals, so the
// decision of a call that ran is unknown. info, warning and error messages
// are system messages, an error failed (api_error when the CLI formatted a
// failed request to the model, "[API Error: …]"). The workspace is the
// folder whose SHA-256 is the project hash, found among the absolute paths
// the calls name, unless the project folder has a .project_root file
// (newer versions) naming it. Gemini
// reports tokens per reply but no cost, and metrics need a cost: the
// tokens go to Session.Usage (input less cached, output without thoughts).
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channels...)
	p := &parser{b: b, byID: map[string]int{}, used: map[string]bool{}, repeats: map[string]int{}, streams: map[string]*adapters.Stream{}}
	for _, f := range files {
		b.Files(f.Path)
		if filepath.Base(f.Path) == ProjectRootFile {
			p.readProjectRoot(f)
		} else if strings.HasSuffix(f.Path, ".jsonl") {
			p.readLines(f)
		} else {
			p.readDocument(f)
		}
	}
	for _, m := range p.msgs {
		p.message(m)
	}
	return p.finish()
}

type parser struct {
	replies int // replies with tokens so far, to name those without an id
	b       *adapters.Builder
	s       *adapters.Stream
	streams map[string]*adapters.Stream

	id, hash string
	start    adapters.Time
	msgs     []*entry
	byID     map[string]int // message id to its place in msgs
	used     map[string]bool
	repeats  map[string]int
	paths    []string // absolute paths the calls name, for the workspace
	root     string   // the folder a ProjectRootFile names
}

// entry is a message and the file it was last read from.
type entry struct {
	path string
	m    message
}

func (p *parser) header(id, hash, start string) {
	if p.id == "" {
		p.id = id
	}
	if p.hash == "" {
		p.hash = hash
	}
	if t, ok := adapters.ParseTime(start); ok && (p.start.IsZero() || t.At.Before(p.start.At)) {
		p.start = t
	}
}

// add keeps a message, replacing an earlier record of the same id in its
// place; a message without an id is named for its file and place.
func (p *parser) add(path, where string, m message) {
	if m.ID == "" {
		m.ID = filepath.Base(path) + ":" + where
	}
	if i, ok := p.byID[m.ID]; ok {
		p.msgs[i] = &entry{path, m}
		return
	}
	p.byID[m.ID] = len(p.msgs)
	p.msgs = append(p.msgs, &entry{path, m})
}

// readLines reads a JSONL session: a broken line is reported, and a broken
// last line without its newline marks the file as still being written.
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
		switch {
		case adapters.Present(r.Set):
			p.b.Skip("$set")
		case r.Type != "":
			p.add(f.Path, fmt.Sprint(n), r.message)
		case r.SessionID != "" || r.ProjectHash != "":
			p.header(r.SessionID, r.ProjectHash, r.StartTime)
		default:
			p.b.Skip("untyped line")
		}
	})
	p.b.Problem(problems...)
}

// readDocument reads a legacy session: one JSON object with every message.
func (p *parser) readDocument(f adapters.File) {
	body, err := adapters.ReadDocument(f.Body)
	if err != nil {
		p.b.Problem(adapters.Problem{Path: f.Path, Message: err.Error()})
		return
	}
	p.b.Read(len(body))
	var c conversation
	if err := adapters.DecodeObject(body, &c); err != nil {
		line := 0
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line = bytes.Count(body[:min(int(syn.Offset), len(body))], []byte("\n")) + 1
		}
		p.b.Problem(adapters.Problem{Path: f.Path, Line: line, Message: err.Error()})
		return
	}
	p.header(c.SessionID, c.ProjectHash, c.StartTime)
	for i, raw := range c.Messages {
		var m message
		if err := adapters.DecodeObject(raw, &m); err != nil {
			p.b.Problem(adapters.Problem{Path: f.Path, Message: fmt.Sprintf("message %d: %v", i+1, err)})
			continue
		}
		p.add(f.Path, fmt.Sprintf("m%d", i+1), m)
	}
}

// readProjectRoot reads the folder a ProjectRootFile names: one absolute
// path, within a line's length.
func (p *parser) readProjectRoot(f adapters.File) {
	b, err := io.ReadAll(io.LimitReader(f.Body, 64<<10))
	root := strings.TrimSpace(string(b))
	switch {
	case err != nil:
		p.b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
	case !filepath.IsAbs(root) || strings.ContainsAny(root, "\n\x00"):
		p.b.Problem(adapters.Problem{Path: f.Path, Message: "not a folder's absolute path"})
	default:
		p.root = root
	}
}

// stepID is id, or when a step has it already, id with the next free
// "#n" after it; the count of each id is kept, so many repeats of one id
// cost no more than as many different ids.
func (p *parser) stepID(id string) string {
	out := id
	for p.used[out] {
		p.repeats[id]++
		out = fmt.Sprintf("%s#%d", id, p.repeats[id]+1)
	}
	p.used[out] = true
	return out
}

func (p *parser) message(e *entry) {
	m := &e.m
	p.s = p.stream(e.path)
	at, _ := adapters.ParseTime(m.Timestamp)
	p.b.Observe(at)
	switch m.Type {
	case "user":
		text := partsText(m.DisplayContent)
		if strings.TrimSpace(text) == "" {
			text = partsText(m.Content)
		}
		id := p.stepID(m.ID)
		p.b.NewTurn(id, "", at)
		p.s.Message(nil, id, "user", text, at)
	case "gemini":
		p.reply(m, at)
	case "info", "warning":
		p.s.Message(nil, p.stepID(m.ID), "system", partsText(m.Content), at)
	case "error":
		// What the CLI showed as an error: mostly a request to the model
		// that failed ("[API Error: …]", formatted by the CLI), else a
		// stream it broke off or a mode change it could not send. A failed
		// step, as a Claude Code reply that was an API error.
		text := partsText(m.Content)
		st := p.s.Message(nil, p.stepID(m.ID), "system", text, at)
		typ := "error"
		if strings.HasPrefix(strings.TrimSpace(text), "[API Error") {
			typ = "api_error"
		}
		adapters.Fail(st.St, typ, cmp.Or(strings.TrimSpace(text), "error"))
	default:
		p.b.Skip("message:" + m.Type)
	}
}

// stream is the builder's stream of a file, one per file.
func (p *parser) stream(path string) *adapters.Stream {
	s := p.streams[path]
	if s == nil {
		s = p.b.Stream(path)
		p.streams[path] = s
	}
	return s
}

// thoughtText is a thought as the model wrote it: Gemini CLI cuts its
// bold subject (**Subject**) from the rest of the text, the description;
// joined by a line break alone, the two ran together as one sentence.
func thoughtText(subject, description string) string {
	subject, description = strings.TrimSpace(subject), strings.TrimSpace(description)
	if subject == "" {
		return description
	}
	return strings.TrimSpace("**" + subject + "**\n\n" + description)
}

func (p *parser) reply(m *message, at adapters.Time) {
	if len(m.Thoughts) > 0 {
		var parts []string
		thoughtAt := at
		for i, t := range m.Thoughts {
			parts = append(parts, thoughtText(t.Subject, t.Description))
			if ta, ok := adapters.ParseTime(t.Timestamp); ok && i == 0 {
				thoughtAt = ta
			}
		}
		p.s.Message(nil, p.stepID(m.ID+"#thinking"), "thinking", strings.Join(parts, "\n\n"), thoughtAt)
	}
	if text := partsText(m.Content); strings.TrimSpace(text) != "" {
		p.s.Message(nil, p.stepID(m.ID), "assistant", text, at)
	}
	for i, tc := range m.ToolCalls {
		tat := at
		if t, ok := adapters.ParseTime(tc.Timestamp); ok {
			tat = t
		}
		id := cmp.Or(tc.ID, fmt.Sprintf("%s#tool%d", m.ID, i+1))
		p.s.Add(nil, p.toolStep(p.stepID(id), tc), tat)
	}
	p.addUsage(m, at)
}

// partsText is a message's text: a string, or the text of its parts.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, part := range parts {
		b.WriteString(part.Text)
	}
	return b.String()
}

// finish names the session and hands it to the builder.
func (p *parser) finish() *adapters.Session {
	h := &p.b.Header
	if p.id != "" {
		h.ID = p.id
	}
	h.Agent = store.Agent{Kind: Kind, Version: "unknown"}
	h.Workspace = store.Workspace{Root: cmp.Or(p.root, p.workspace(), "unknown")}
	h.Source = "import:" + Kind
	p.b.SetStart(p.start)
	return p.b.Finish()
}

// workspace is the folder, among those holding the absolute paths the
// calls named, whose SHA-256 is the project hash Gemini names the
// session's folder with; "" when none is.
func (p *parser) workspace() string {
	hash := strings.ToLower(p.hash)
	if len(hash) != sha256.Size*2 {
		return ""
	}
	tried := map[string]bool{}
	for _, f := range p.paths {
		for dir := path.Dir(f); !tried[dir]; dir = path.Dir(dir) {
			tried[dir] = true
			sum := sha256.Sum256([]byte(dir))
			if hex.EncodeToString(sum[:]) == hash {
				return dir
			}
		}
	}
	return ""
}
