package codex

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

var channels = []string{"rollout"}

// record is one line of a rollout: {timestamp, type, payload}.
type record struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// payload holds the fields of every payload kind the adapter reads.
type payload struct {
	Type string `json:"type"`
	// session_meta
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version"`
	Git        struct {
		RepositoryURL string `json:"repository_url"`
	} `json:"git"`
	// turn_context
	ApprovalPolicy    string `json:"approval_policy"`
	Model             string `json:"model"`
	CollaborationMode struct {
		Mode string `json:"mode"`
	} `json:"collaboration_mode"`
	// response_item
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    struct {
		Command          []string `json:"command"`
		WorkingDirectory string   `json:"working_directory"`
	} `json:"action"`
	// event_msg
	Message string          `json:"message"`
	Text    string          `json:"text"`
	Reason  string          `json:"reason"`
	Info    json.RawMessage `json:"info"`

	Images []json.RawMessage `json:"images"` // user_message: the images given, as data: URIs
}

type line struct {
	n    int
	path string
	rec  record
	p    payload
	at   adapters.Time
}

// Parse reads one session's rollout files, in order.
//
// Mapping: each user_message event starts a turn (its mode is the
// collaboration mode of the turn_context that follows, when Codex writes
// one); the reply is the assistant response_item message, thinking the
// reasoning summary (encrypted reasoning has no text and is skipped).
// exec_command, shell, shell_command and local_shell_call are commands:
// Codex merges stdout and stderr, so the output is stdout, and the exit code
// comes from "Process exited with code N" or the output's metadata. An
// apply_patch call is one edit step per file of the patch (an added file is
// a full write), with that file's part of the patch as its structured
// patch; Codex writes no old and new strings. view_image is a read; every
// other tool an other step. Codex does not persist approvals: with
// approval_policy "never" a call is auto, otherwise accepted, and a command
// whose output says it was rejected by the user is rejected. Segments start
// at the first line, at each compaction, and at a later session_meta (a
// resumed session). Step ids are the call_id of tool calls and the file and
// line of everything else (rollouts only grow, so lines keep their numbers).
//
// Codex reports tokens (token_count events, repeated after each request, so
// the last total counts each response once) but no cost, and metrics need a
// cost: the session has no metrics and the tokens go to Session.Usage.
//
// The files are read twice, each line handled as it is decoded: first until
// the parser knows what the session has (survey), then for its steps,
// which go to a spill past adapters.SpillAfter bytes or many steps, as
// Claude Code's do. A rollout's decoded lines were all held at once: a
// 100 MB rollout peaked at 222 MB (docs/performance.md, "Codex rollouts
// read twice").
func Parse(u adapters.Unit, files []adapters.File) *adapters.Session {
	b := adapters.NewBuilder(u, channels...)
	p := &parser{b: b, s: b.Stream("")}
	files = p.rereadable(files)
	ends := p.survey(files)
	b.EnableSpill(adapters.SpillAfter)
	last := p.start
	for i, f := range files {
		b.Files(f.Path)
		if _, err := f.Body.(io.Seeker).Seek(0, io.SeekStart); err != nil {
			b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
			continue
		}
		if ends[i] >= 0 { // read no further than the survey did: the file may be growing
			f.Body = io.LimitReader(f.Body, ends[i])
		}
		p.read(f, true, func(ln *line) {
			if ln.at.IsZero() {
				ln.at = last
			}
			last = ln.at
			p.line(ln)
		}, nil)
	}
	return p.finish()
}

// rereadable gives each file a body that can be read again from its
// start: its own when it can seek (a file), its bytes held otherwise.
func (p *parser) rereadable(files []adapters.File) []adapters.File {
	out := make([]adapters.File, len(files))
	for i, f := range files {
		if _, ok := f.Body.(io.ReadSeeker); !ok {
			b, err := io.ReadAll(f.Body)
			if err != nil {
				p.b.Problem(adapters.Problem{Path: f.Path, Message: "read: " + err.Error()})
			}
			f.Body = bytes.NewReader(b)
		}
		out[i] = f
	}
	return out
}

// survey reads the files until it knows whether the session has user
// events, replies and reasoning, and its first time. It returns how far
// it read each file: the length of one it read to its end, -1 for one
// whose end it did not reach.
func (p *parser) survey(files []adapters.File) []int64 {
	known := func() bool { return p.hasUserEvents && p.hasReplies && p.hasReasoning && !p.start.IsZero() }
	ends := make([]int64, len(files))
	for i, f := range files {
		ends[i] = -1
		if known() {
			continue
		}
		counted := &countingReader{r: f.Body}
		f.Body = counted
		if p.read(f, false, func(ln *line) {
			switch {
			case ln.rec.Type == "event_msg" && ln.p.Type == "user_message":
				p.hasUserEvents = true
			case ln.rec.Type == "response_item" && ln.p.Type == "message" && ln.p.Role == "assistant":
				p.hasReplies = true
			case ln.rec.Type == "response_item" && ln.p.Type == "reasoning":
				p.hasReasoning = true
			}
			if p.start.IsZero() && !ln.at.IsZero() {
				p.start = ln.at
			}
		}, known) {
			ends[i] = counted.n
		}
	}
	return ends
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

type parser struct {
	b *adapters.Builder
	s *adapters.Stream

	id, root, cwd, version, repo string
	start                        adapters.Time
	metaSeen                     bool
	policy                       string
	hasUserEvents                bool
	hasReplies                   bool
	hasReasoning                 bool

	lastInfo string
	pending  []string // ids of the calls still waiting for their output

	model string // of the latest turn_context
	total counts // the latest token_count total

	compacted bool          // a compacted line started the current segment
	abortedAt adapters.Time // when the last turn was aborted, until the next turn starts a segment
}

// newSegment starts a segment at a compaction, resume or aborted turn,
// unless the current one has no step yet.
func (p *parser) newSegment(reason string, at adapters.Time) {
	p.compacted, p.abortedAt = false, adapters.Time{}
	if p.b.SegmentSteps() > 0 {
		p.b.NewSegment(reason, at)
	}
}

func (p *parser) skip(kind string) { p.b.Skip(kind) }

// read decodes a rollout's lines and calls fn with each, until done (when
// given) is true; it reports whether it read to the end. With report,
// broken lines are reported, and a broken last line without its newline
// marks the file as still being written.
func (p *parser) read(f adapters.File, report bool, fn func(*line), done func() bool) (end bool) {
	problems, end := adapters.ReadLinesWhile(f, func(n int, b []byte, terminated bool) bool {
		if report {
			p.b.Read(len(b) + 1) // the steps so far may go to a spill
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if ln := p.decode(f.Path, n, b, terminated, report); ln != nil {
				fn(ln)
			}
		}
		return done == nil || !done()
	})
	if report {
		p.b.Problem(problems...)
	}
	return end
}

// decode reads line n of a rollout; nil for a line that is not a record
// (reported with report).
func (p *parser) decode(path string, n int, b []byte, terminated, report bool) *line {
	ln := &line{n: n, path: path}
	err := json.Unmarshal(b, &ln.rec)
	if err == nil && adapters.Present(ln.rec.Payload) {
		err = json.Unmarshal(ln.rec.Payload, &ln.p)
	}
	var typ *json.UnmarshalTypeError
	if err != nil && !(errors.As(err, &typ) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))) {
		if report {
			msg := "invalid JSON"
			if json.Valid(b) {
				msg = "not a JSON object"
			}
			p.b.BadLine(path, n, terminated, msg)
		}
		return nil
	}
	if t, ok := adapters.ParseTime(ln.rec.Timestamp); ok {
		ln.at = t
	}
	return ln
}

func (p *parser) lineID(ln *line) string {
	return fmt.Sprintf("%s:%d", filepath.Base(ln.path), ln.n)
}

func (p *parser) line(ln *line) {
	pl := &ln.p
	switch ln.rec.Type {
	case "session_meta":
		if p.metaSeen {
			p.newSegment("resume", ln.at)
			if pl.CLIVersion != "" {
				p.version = pl.CLIVersion // the CLI that wrote the latest lines
			}
			return
		}
		p.metaSeen = true
		p.id, p.root, p.cwd, p.version, p.repo = pl.ID, pl.Cwd, pl.Cwd, pl.CLIVersion, pl.Git.RepositoryURL
		if t, ok := adapters.ParseTime(pl.Timestamp); ok && t.At.Before(p.start.At) {
			p.start = t
		}
	case "turn_context":
		if pl.Cwd != "" {
			p.cwd = pl.Cwd
		}
		if pl.ApprovalPolicy != "" {
			p.policy = pl.ApprovalPolicy
		}
		if pl.Model != "" {
			p.model = pl.Model
		}
		if t := p.b.Turn(); t != nil && t.Mode == "" {
			t.Mode = pl.CollaborationMode.Mode
		}
	case "response_item":
		p.responseItem(ln)
	case "event_msg":
		p.event(ln)
	case "compacted":
		p.newSegment("compaction", ln.at)
		if strings.TrimSpace(ln.p.Message) != "" {
			p.message(p.lineID(ln), "summary", ln.p.Message, ln.at)
		}
		p.compacted = true // its context_compacted event is the same boundary
	default:
		p.skip(cmp.Or(ln.rec.Type, "untyped line"))
	}
}

func (p *parser) responseItem(ln *line) {
	pl := &ln.p
	id := p.lineID(ln)
	switch pl.Type {
	case "message":
		text := contentText(pl.Content)
		switch {
		case pl.Role == "assistant":
			if strings.TrimSpace(text) != "" {
				p.message(id, "assistant", text, ln.at)
			}
		case pl.Role == "user" && !p.hasUserEvents && !injected(text):
			p.prompt(id, text, ln.at)
		default:
			p.skip("message:" + pl.Role)
		}
	case "reasoning":
		if text := contentText(pl.Summary); text != "" {
			p.message(id, "thinking", text, ln.at)
		} else {
			p.skip("encrypted reasoning")
		}
	case "function_call":
		var args string
		if json.Unmarshal(pl.Arguments, &args) != nil {
			args = string(pl.Arguments)
		}
		p.toolCall(cmp.Or(pl.CallID, id), cmp.Or(pl.Name, "unknown"), args, false, ln.at)
	case "custom_tool_call":
		var input string
		if json.Unmarshal(pl.Input, &input) != nil {
			input = string(pl.Input)
		}
		p.toolCall(cmp.Or(pl.CallID, id), cmp.Or(pl.Name, "unknown"), input, true, ln.at)
	case "local_shell_call":
		callID := cmp.Or(pl.CallID, id)
		p.command(callID, shellCommand(pl.Action.Command), cmp.Or(pl.Action.WorkingDirectory, p.cwd), ln.at)
	case "function_call_output", "custom_tool_call_output":
		p.result(pl.CallID, pl.Output)
	case "web_search_call":
		st := store.Step{ID: cmp.Or(pl.CallID, id), Type: store.TypeOther, Decision: p.decision(), Outcome: adapters.OutcomeOK,
			Payload: store.Payload{ToolName: "web_search", Raw: adapters.Raw(map[string]any{"item": json.RawMessage(ln.rec.Payload)})}}
		p.s.Add(nil, st, ln.at)
	default:
		p.skip("response_item:" + cmp.Or(pl.Type, "?"))
	}
}

func (p *parser) event(ln *line) {
	pl := &ln.p
	id := p.lineID(ln)
	switch pl.Type {
	case "user_message":
		p.prompt(id, pl.Message, ln.at)
		p.s.PastedImages(nil, id, pl.Images, ln.at)
	case "agent_message":
		if !p.hasReplies && strings.TrimSpace(pl.Message) != "" {
			p.message(id, "assistant", pl.Message, ln.at)
		} else {
			p.skip("agent_message")
		}
	case "agent_reasoning":
		if !p.hasReasoning && pl.Text != "" {
			p.message(id, "thinking", pl.Text, ln.at)
		} else {
			p.skip("agent_reasoning")
		}
	case "token_count":
		p.tokens(ln, pl.Info)
	case "context_compacted":
		if !p.compacted {
			p.newSegment("compaction", ln.at)
		}
	case "turn_aborted":
		p.abort(cmp.Or(pl.Reason, "unknown reason"))
		p.message(id, "system", "turn aborted: "+cmp.Or(pl.Reason, "unknown reason"), ln.at)
		p.abortedAt = ln.at
	default:
		p.skip("event_msg:" + cmp.Or(pl.Type, "?"))
	}
}

// injectedPrefixes start the user messages Codex writes itself (context,
// instructions) rather than what the user typed.
var injectedPrefixes = []string{"<environment_context>", "# AGENTS.md", "<permissions", "<user_instructions>", "<INSTRUCTIONS>"}

func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, prefix := range injectedPrefixes {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return t == ""
}

func contentText(raw json.RawMessage) string {
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) != nil {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	var parts []string
	for _, it := range items {
		if it.Text != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (p *parser) prompt(id, text string, at adapters.Time) {
	p.pending = p.pending[:0] // a turn aborts only its own calls
	if !p.abortedAt.IsZero() {
		p.newSegment("turn_aborted", p.abortedAt) // after an aborted turn (AGENT-FORMATS 7.1)
	}
	p.compacted = false
	p.b.NewTurn(id, "", at)
	p.message(id, "user", text, at)
}

func (p *parser) message(id, role, text string, at adapters.Time) {
	p.s.Message(nil, id, role, text, at)
}

// decision is how a call Codex ran was allowed: by nobody when the policy
// never asks, else it was allowed and the rollout does not say by whom.
func (p *parser) decision() string {
	if p.policy == "never" {
		return adapters.DecisionAuto
	}
	return adapters.DecisionAccepted
}

// toolCall maps a function_call or custom_tool_call by tool name.
func (p *parser) toolCall(callID, name, args string, custom bool, at adapters.Time) {
	if p.b.Called(callID) {
		p.skip("repeated call")
		return
	}
	var obj map[string]json.RawMessage
	if !custom {
		json.Unmarshal([]byte(args), &obj)
	}
	switch name {
	case "exec_command", "shell", "shell_command", "container.exec":
		cmd := argString(obj, "cmd")
		if cmd == "" {
			cmd = argString(obj, "command")
		}
		if argv := argStrings(obj, "command"); len(argv) > 0 {
			if argv[0] == "apply_patch" && len(argv) > 1 {
				p.patch(callID, argv[1], p.cwd, at)
				return
			}
			cmd = shellCommand(argv)
		}
		cwd := cmp.Or(argString(obj, "workdir"), p.cwd)
		if patch, dir, ok := heredocPatch(cmd); ok {
			if path.IsAbs(dir) || (dir != "" && cwd == "") {
				cwd = dir
			} else if dir != "" {
				cwd = path.Join(cwd, dir)
			}
			p.patch(callID, patch, cwd, at)
			return
		}
		if cmd != "" || obj != nil {
			p.command(callID, cmd, cwd, at)
			return
		}
	case "apply_patch":
		patch := args
		if !custom {
			patch = argString(obj, "input")
		}
		if len(adapters.PatchFiles(patch)) > 0 {
			p.patch(callID, patch, p.cwd, at)
			return
		}
	case "view_image":
		if path := argString(obj, "path"); path != "" {
			p.call(callID, p.s.Add(nil, store.Step{ID: callID, Type: store.TypeRead, Decision: adapters.DecisionUnknown,
				Outcome: adapters.OutcomeUnknown, Payload: store.Payload{Path: path}}, at))
			return
		}
	}
	var input any = args
	if obj != nil {
		input = json.RawMessage(args)
	}
	p.call(callID, p.s.Add(nil, store.Step{ID: callID, Type: store.TypeOther, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown,
		Payload: store.Payload{ToolName: name, Raw: adapters.Raw(map[string]any{"input": input})}}, at))
}

func (p *parser) command(callID, cmd, cwd string, at adapters.Time) {
	st := store.Step{ID: callID, Type: store.TypeCommand, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown,
		Payload: store.Payload{Command: adapters.Text(cmd)}}
	if cwd != "" {
		st.Payload.Cwd = adapters.Text(cwd)
	}
	p.call(callID, p.s.Add(nil, st, at))
}

// heredocPatch reads a shell line that is apply_patch (or applypatch)
// given its patch as a here-document, after a cd or not, as Codex itself
// reads it: `apply_patch <<'EOF' ... EOF`, `cd sub && apply_patch <<EOF
// ...`. It returns the patch and the folder of the cd ("" for none); ok
// is false for any other line, or a patch with no file.
func heredocPatch(line string) (patch, dir string, ok bool) {
	if !strings.Contains(line, "patch") || !strings.Contains(line, "<<") {
		return "", "", false
	}
	pipelines, _ := store.ShellCommands(line)
	if n := len(pipelines); n == 2 {
		cd := pipelines[0]
		if len(cd) != 1 || len(cd[0].Words) != 2 || cd[0].Words[0] != "cd" || !cd[0].Sure || len(cd[0].Redirects) > 0 {
			return "", "", false
		}
		dir, pipelines = cd[0].Words[1], pipelines[1:]
	}
	if len(pipelines) != 1 || len(pipelines[0]) != 1 {
		return "", "", false
	}
	c := pipelines[0][0]
	if len(c.Words) != 1 || (c.Words[0] != "apply_patch" && c.Words[0] != "applypatch") || len(c.Redirects) != 1 {
		return "", "", false
	}
	r := c.Redirects[0]
	if (r.Op != "<<" && r.Op != "<<-") || !r.Sure || len(adapters.PatchFiles(r.Word)) == 0 {
		return "", "", false
	}
	return r.Word, dir, true
}

// patch adds one edit step per file of an apply_patch patch, its path
// resolved against cwd, the folder it ran in (PatchFile.Edit). Each is
// the call's as soon as it is added: the builder may spill a step once
// the next one comes, unless it waits for a result.
func (p *parser) patch(callID, patch, cwd string, at adapters.Time) {
	for i, e := range p.b.PatchEdits(patch, cwd) {
		id := callID
		if i > 0 {
			id = fmt.Sprintf("%s#%d", callID, i)
		}
		st := store.Step{ID: id, Type: store.TypeEdit, Decision: adapters.DecisionUnknown, Outcome: adapters.OutcomeUnknown,
			Payload: e}
		p.b.Call(callID, p.s.Add(nil, st, at))
	}
	p.pending = append(p.pending, callID)
}

// call registers a call's step with the builder, as waiting for output.
func (p *parser) call(callID string, step *adapters.Step) {
	p.b.Call(callID, step)
	p.pending = append(p.pending, callID)
}

// abort fails the calls of an aborted turn that got no output: Codex
// stopped them, and writes no output for them.
func (p *parser) abort(reason string) {
	for _, id := range p.pending {
		steps, _ := p.b.Result(id)
		for _, s := range steps {
			s.St.Decision, s.St.Outcome = p.decision(), adapters.OutcomeFailed
			s.St.Error = &store.StepError{Type: "aborted", Message: "turn aborted: " + reason}
		}
	}
	p.pending = p.pending[:0]
}

// shellCommand joins an argv, unwrapping `bash -lc "..."`.
func shellCommand(argv []string) string {
	if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || argv[0] == "zsh" || strings.HasSuffix(argv[0], "/bash")) &&
		(argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func argString(obj map[string]json.RawMessage, key string) string {
	var s string
	if v, ok := obj[key]; ok {
		json.Unmarshal(v, &s)
	}
	return s
}

func argStrings(obj map[string]json.RawMessage, key string) []string {
	var a []string
	if v, ok := obj[key]; ok {
		json.Unmarshal(v, &a)
	}
	return a
}

var (
	exitedRE   = regexp.MustCompile(`Process exited with code (-?\d{1,9})`)
	exitCodeRE = regexp.MustCompile(`(?i)^exit code:?\s*(-?\d{1,9})`)
)

// output is a call's output: plain text, or the JSON {output, metadata}
// that shell and apply_patch write, or an object {content, success}.
type output struct {
	text     string
	exitCode *int64
	success  *bool
	raw      json.RawMessage
}

func readOutput(raw json.RawMessage) output {
	var o output
	o.raw = raw
	var s string
	if json.Unmarshal(raw, &s) == nil {
		o.text = s
		var inner struct {
			Output   *string `json:"output"`
			Metadata struct {
				ExitCode *int64 `json:"exit_code"`
			} `json:"metadata"`
		}
		if strings.HasPrefix(strings.TrimSpace(s), "{") && json.Unmarshal([]byte(s), &inner) == nil && inner.Output != nil {
			o.text, o.exitCode = *inner.Output, inner.Metadata.ExitCode
		}
	} else {
		var obj struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		json.Unmarshal(raw, &obj)
		o.text, o.success = obj.Content, obj.Success
	}
	if o.exitCode == nil {
		if m := exitedRE.FindStringSubmatch(o.text); m != nil {
			if code, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				o.exitCode = &code
			}
		} else if m := exitCodeRE.FindStringSubmatch(o.text); m != nil {
			if code, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				o.exitCode = &code
			}
		}
	}
	return o
}

// result completes the steps of a call with its output.
func (p *parser) result(callID string, raw json.RawMessage) {
	steps, known := p.b.Result(callID)
	if !known {
		p.skip("output without its call")
		return
	}
	o := readOutput(raw)
	for _, s := range steps {
		st := s.St
		st.Decision, st.Outcome = p.decision(), adapters.OutcomeOK
		rejected := strings.Contains(o.text, "rejected by user")
		switch {
		case rejected:
			adapters.Reject(st, strings.TrimSpace(o.text))
		case o.exitCode != nil && *o.exitCode != 0:
			st.Outcome = adapters.OutcomeFailed
			st.Error = &store.StepError{Type: "exit_code", Message: fmt.Sprintf("Exit code %d", *o.exitCode)}
		case o.success != nil && !*o.success:
			st.Outcome = adapters.OutcomeFailed
			st.Error = &store.StepError{Type: "tool_error", Message: o.text}
		case st.Type == store.TypeEdit && o.exitCode == nil && !strings.HasPrefix(o.text, "Success"):
			st.Outcome = adapters.OutcomeFailed
			st.Error = &store.StepError{Type: "patch_error", Message: strings.TrimSpace(o.text)}
		}
		switch st.Type {
		case store.TypeCommand:
			if rejected {
				continue // it never ran
			}
			out := o.text
			if _, after, ok := strings.Cut(out, "\nOutput:\n"); ok {
				out = after
			}
			st.Payload.Stdout = adapters.Text(out)
			st.Payload.ExitCode = o.exitCode
		case store.TypeOther:
			var rawMap map[string]any
			json.Unmarshal(st.Payload.Raw, &rawMap)
			if rawMap == nil {
				rawMap = map[string]any{}
			}
			rawMap["output"] = o.raw
			st.Payload.Raw = adapters.Raw(rawMap)
		}
	}
}

// finish names the session and hands it to the builder.
func (p *parser) finish() *adapters.Session {
	h := &p.b.Header
	if h.ID == "" {
		h.ID = p.id
	}
	h.Agent = store.Agent{Kind: Kind, Version: cmp.Or(p.version, "unknown")}
	h.Workspace = store.Workspace{Root: cmp.Or(p.root, cmp.Or(p.cwd, "unknown")), Repo: p.repo}
	h.Source = "import:" + Kind
	p.b.SetStart(p.start)
	return p.b.Finish()
}
