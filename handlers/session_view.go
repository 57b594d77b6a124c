package handlers

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// sessionView turns a stored session into what the session page and the
// export show. limit cuts each recorded value of the steps (0: none); the
// session's own values are always cut to a readable length. before is the
// segment the timeline is in before each turn that does not follow the
// one before it in d (segmentsBefore); nil: the first segment.
func sessionView(d store.SessionDetail, limit int, before map[string]int64) views.SessionView {
	short := func(s string) string { return shorten(s, headChars) }
	v := views.SessionView{
		ID: d.ID, Title: oneLine(d.Summary.Title), AgentKind: short(d.Agent.Kind), AgentVersion: short(d.Agent.Version),
		Cost: cost(d.Metrics), APIRequests: "not recorded", Tokens: "not recorded",
		Steps: d.Summary.Steps, TurnCount: d.Summary.Turns, Failed: d.Summary.Failed, FailedHref: sessionSearchHref(d.ID, failedFilter),
		RefOnly: d.Summary.ReferenceOnly, Flags: d.Summary.Flags, FlagsHref: sessionSearchHref(d.ID, flaggedFilter), NotesHref: "/search?q=" + url.QueryEscape("note:*"),
		Workspace: short(d.Workspace.Root), Repo: short(d.Workspace.Repo),
		Started: d.StartedAt, Ended: d.EndedAt, Segments: d.Summary.Segments,
		Owner: short(d.OwnerID), CapturedOn: short(d.CapturedOn),
	}
	if root := d.Workspace.Root; root != "" && len(root) <= maxUsageProject {
		v.UsageHref = "/usage?" + url.Values{"project": {root}}.Encode()
	}
	if d.OwnerID != store.OwnerLocal {
		// A team server's session: captured_on is the server that stored
		// it, not the developer's machine it was captured on.
		v.CapturedOn = ""
	}
	last, _ := store.ParseTimestamp(d.Summary.LastStepAt)
	if v.Ended == "" && !last.IsZero() {
		v.LastActivity = d.Summary.LastStepAt
	}
	end := last
	if t, ok := store.ParseTimestamp(d.EndedAt); ok {
		end = t
	}
	v.Duration = between(d.StartedAt, end)
	v.Usage = sessionUsage(d.Usage)
	switch m, u := d.Metrics, d.Usage; {
	case m != nil && (m.APIRequests > 0 || m.Tokens != store.Tokens{}):
		// Metrics of no request and no token are a cost reported alone
		// (Crush records nothing else): its tokens were not recorded.
		v.APIRequests = views.Number(m.APIRequests)
		v.Tokens = views.Number(m.Tokens.Input) + " / " + views.Number(m.Tokens.Output)
		v.Cache, v.CacheTitle = cacheTokens(m.Tokens.CacheRead, m.Tokens.CacheCreation)
	case u != nil:
		// No totals reported, but the responses' usage was: their sum,
		// said to be one, as the Token usage table below adds it up.
		v.APIRequests = views.Number(u.APIRequests)
		v.Tokens = views.Number(u.Tokens.Input) + " / " + views.Number(u.Tokens.Output)
		v.Cache, v.CacheTitle = cacheTokens(u.Tokens.CacheRead, u.Tokens.CacheCreation)
		v.AddedUp = "from the agent's files"
		if u.Source == store.UsageFromOTel {
			v.AddedUp = "from its telemetry"
		}
	}
	v.StepCounts = typeCounts(d.Summary.StepsByType, "#tools")
	v.Files = fileRows(d.ID, d.Workspace.Root, d.Report.Files)
	if n := len(v.Files); n > maxReportRows {
		v.Files, v.FilesMore = v.Files[:maxReportRows], n-maxReportRows
	}
	commands := d.Report.Commands
	if n := len(commands); n > maxReportRows {
		commands, v.CommandsMore = commands[:maxReportRows], n-maxReportRows
	}
	for _, c := range commands {
		codes := make([]string, len(c.ExitCodes))
		for i, code := range c.ExitCodes {
			codes[i] = strconv.FormatInt(code, 10)
		}
		row := views.CommandRow{
			Command: short(c.Command), Href: "#" + stepDOMID(c.FirstSeq), Runs: c.Runs, Failed: c.Failed, ExitCodes: strings.Join(codes, ", "), NotInline: c.OutputNotInline,
		}
		if c.FirstFailedSeq != nil {
			row.FailedHref = "#" + stepDOMID(*c.FirstFailedSeq)
		}
		if c.Runs > 1 {
			row.RunsSearch = filterHref(d.ID, "command", c.Command)
		}
		if c.Failed > 1 {
			row.FailedSearch = filterHref(d.ID, "command", c.Command, failedFilter)
		}
		v.Commands = append(v.Commands, row)
	}
	tools := d.Report.Tools
	if n := len(tools); n > maxReportRows {
		tools, v.ToolsMore = tools[:maxReportRows], n-maxReportRows
	}
	for _, t := range tools {
		row := views.ToolRow{Tool: short(t.Tool), Calls: t.Calls, Failed: t.Failed, Href: filterHref(d.ID, "tool", t.Tool)}
		if t.Failed > 0 {
			row.FailedHref = filterHref(d.ID, "tool", t.Tool, failedFilter)
		}
		v.Tools = append(v.Tools, row)
	}
	v.Turns = turnViews(d, limit, before)
	for _, a := range d.Actors {
		if a.Type != "root" {
			v.Actors = append(v.Actors, views.ActorOption{ID: a.ID, Label: actorLabel(a)})
		}
	}
	v.Verdict, v.Notes = verdictView(d.Verdict), noteViews(d.Notes)
	attachNotes(&v, false, "")
	return v
}

// turnViews groups the steps by turn, in turn order, with the segment
// dividers (segmentMarks).
func turnViews(d store.SessionDetail, limit int, before map[string]int64) []views.TurnView {
	byID := map[string]int{}
	out := make([]views.TurnView, len(d.Turns))
	for i, t := range d.Turns {
		byID[t.ID] = i
		out[i] = views.TurnView{ID: t.ID, DOMID: "turn-" + hex.EncodeToString([]byte(t.ID)), Number: t.Index,
			Mode: shorten(t.Mode, lineChars), Actor: shorten(t.ActorID, lineChars), At: t.StartedAt}
	}
	actors := actorsByID(d.Actors)
	for id, tok := range turnTokens(d.Usage) {
		if i, ok := byID[id]; ok {
			out[i].Tokens = tok
		}
	}
	for _, t := range d.Report.Turns {
		if i, ok := byID[t.TurnID]; ok {
			out[i].Problems = turnProblems(t)
		}
	}
	// A turn the read left steps out of: its steps before each gap are a
	// run of Earlier, and a step before a gap takes until the first step
	// the gap leaves out.
	type place struct {
		turn int
		seq  int64
	}
	gapAt := map[place]store.StepGap{}
	for _, g := range d.Gaps {
		if i, ok := byID[g.TurnID]; ok {
			gapAt[place{i, g.Before}] = g
		}
	}
	lastAt := make([]time.Time, len(out))
	// took gives turn i's last step shown its time: until next, the time
	// of the step after it.
	took := func(i int, next time.Time) {
		if n := len(out[i].Steps); n > 0 && !lastAt[i].IsZero() && next.After(lastAt[i]) {
			out[i].Steps[n-1].Duration = views.Duration(next.Sub(lastAt[i]))
		}
	}
	for _, s := range d.Steps {
		i, ok := byID[s.TurnID]
		if !ok {
			continue
		}
		if out[i].Prompt == "" && s.Type == store.TypeMessage && s.Payload.Role == "user" {
			out[i].Prompt = shorten(deref(s.Payload.Text), promptChars)
		}
		at, _ := store.ParseTimestamp(s.At)
		if g, ok := gapAt[place{i, s.Seq}]; ok {
			next, _ := store.ParseTimestamp(g.FirstAt)
			took(i, next)
			out[i].Earlier = append(out[i].Earlier, views.StepRun{Steps: out[i].Steps,
				Gap: views.StepGap{Steps: g.Steps, After: g.After, Before: g.Before}})
			out[i].Steps, lastAt[i] = nil, time.Time{}
		}
		took(i, at)
		if !at.IsZero() {
			lastAt[i] = at
		}
		sv := stepView(s, limit, d.Workspace.Root)
		setActor(&sv, actors[s.ActorID], s.ActorID)
		out[i].Steps = append(out[i].Steps, sv)
	}
	marks := newSegmentMarks(d.Segments)
	for i, t := range d.Turns {
		out[i].Duration = between(out[i].At, lastAt[i])
		if i == 0 || d.Turns[i-1].Index != t.Index-1 {
			marks.cur = before[t.ID]
		}
		out[i].Divider = marks.turn(t)
		for _, steps := range out[i].Runs() {
			for j := range steps {
				steps[j].Divider = marks.step(steps[j])
			}
		}
	}
	return out
}

// turnTokens is each turn's tokens, requests and cost as its header shows
// them, by turn id; none without usage.
func turnTokens(u *store.Usage) map[string]*views.TurnTokens {
	if u == nil {
		return nil
	}
	note := pricingNote(u.Pricing.Source, u.Pricing.AsOf)
	out := make(map[string]*views.TurnTokens, len(u.Turns))
	for _, t := range u.Turns {
		out[t.TurnID] = &views.TurnTokens{Total: t.Tokens.Total(), Requests: t.APIRequests, Input: t.Tokens.Input,
			Output: t.Tokens.Output, CacheRead: t.Tokens.CacheRead, CacheCreate: t.Tokens.CacheCreation,
			Cost:    usageBar(store.UsageRow{ReportedCostUSD: t.ReportedCostUSD, EstimatedCostUSD: t.EstimatedCostUSD}, 0),
			Pricing: note}
	}
	return out
}

// turnProblems is a turn's count of failed steps and of flags as its
// header shows them, each linking to the first such step.
func turnProblems(t store.TurnProblems) views.TurnProblems {
	p := views.TurnProblems{Failed: t.Failed, Flags: t.Flags}
	if t.FirstFailedSeq != nil {
		p.FailedHref = "#" + stepDOMID(*t.FirstFailedSeq)
	}
	if t.FirstFlaggedSeq != nil {
		p.FlagsHref = "#" + stepDOMID(*t.FirstFlaggedSeq)
	}
	return p
}

// spawnOf is the subagent kind and task description a Task or Agent call
// gave, from its recorded input; "" for other steps.
func spawnOf(s store.Step) (kind, desc string) {
	if s.Payload.ToolName != "Task" && s.Payload.ToolName != "Agent" || len(s.Payload.Raw) == 0 {
		return "", ""
	}
	type args struct {
		Kind string `json:"subagent_type"`
		Desc string `json:"description"`
	}
	var raw struct {
		Input args `json:"input"`
		args
	}
	if json.Unmarshal(s.Payload.Raw, &raw) != nil {
		return "", ""
	}
	return shorten(cmp.Or(raw.Input.Kind, raw.Kind), lineChars), shorten(cmp.Or(raw.Input.Desc, raw.Desc), lineChars)
}

func actorsByID(actors []store.Actor) map[string]store.Actor {
	m := make(map[string]store.Actor, len(actors))
	for _, a := range actors {
		m[a.ID] = a
	}
	return m
}

// setActor marks a step as the main agent's (root) or a subagent's.
func setActor(v *views.StepView, a store.Actor, id string) {
	v.ActorID, v.ActorType, v.ActorLabel = shorten(id, lineChars), "root", ""
	if a.Type != "" && a.Type != "root" {
		v.ActorType, v.ActorLabel = "subagent", actorLabel(a)
	}
}

// actorLabel names a subagent for the timeline: its kind or description,
// and the compaction summariser as such.
func actorLabel(a store.Actor) string {
	switch {
	case a.Label == "compact":
		return "compaction summariser"
	case a.Label != "":
		return shorten(a.Label, lineChars)
	}
	return "subagent " + shorten(a.ID, lineChars)
}

// cacheTokens is the summary's line of the input tokens that went through
// the prompt cache, beside the input it shows, which leaves them out (every
// agent's counts are stored so, as Anthropic's API counts them: a long
// session would read "36 in" without it), and its title; both "" when
// there were none.
func cacheTokens(read, written int64) (line, title string) {
	if read+written == 0 {
		return "", ""
	}
	return "+ " + views.Number(read+written) + " cached",
		views.Number(read) + " read from the cache, " + views.Number(written) + " written to it"
}

// between is the time from start to end, or "" when either is unknown or
// they are the same time: a span of none says no time passed, which is
// what an agent that stamps every step of a run with the run's start
// (Aider) records, not how long the run took.
func between(start string, end time.Time) string {
	t, ok := store.ParseTimestamp(start)
	if !ok || end.IsZero() || !end.After(t) {
		return ""
	}
	return views.Duration(end.Sub(t))
}

// commandFileFields are the fields of the files a command's line writes,
// reads and removes (store.CommandFiles), named as Files touched names
// them.
func commandFileFields(line, cwd, root string) []views.Field {
	var writes, reads, removes []views.FileLink
	for _, f := range store.CommandFiles(line, cwd) {
		l := fileLink(root, f.Path)
		switch {
		case f.Removed:
			removes = append(removes, l)
		case f.Write:
			writes = append(writes, l)
		default:
			reads = append(reads, l)
		}
	}
	var out []views.Field
	for _, l := range []struct {
		label string
		files []views.FileLink
	}{{"Writes", writes}, {"Reads", reads}, {"Removes", removes}} {
		if len(l.files) > 0 {
			names := make([]string, len(l.files))
			for i, f := range l.files {
				names[i] = f.Name
			}
			out = append(out, views.Field{Label: l.label, Value: views.Text{Shown: strings.Join(names, ", ")}, Files: l.files})
		}
	}
	return out
}

// fileLink is a file a step's field names, as Files touched names it;
// linkStep links it.
func fileLink(root, p string) views.FileLink {
	return views.FileLink{Name: shorten(inWorkspace(root, p), headChars), Path: p}
}

// fileField adds an edit's or a read's File: the path as recorded, and
// the file to link.
func fileField(v *views.StepView, p string, cut func(string) views.Text) {
	if p != "" {
		v.Fields = append(v.Fields, views.Field{Label: "File", Value: cut(p), Files: []views.FileLink{{Name: shorten(p, headChars), Path: p}}})
	}
}

// stepView is a step as the review app shows it, each recorded value cut
// to limit characters (0: whole), its line naming a file in the session's
// workspace root by its path in it. Texts the store already cut
// (Step.Cut) count the characters it left out.
func stepView(s store.Step, limit int, root string) views.StepView {
	summary := stepSummary(s, root) // names the images, where the raw shown cannot
	var images []views.ImageView
	if s.Type == store.TypeOther {
		images, s.Payload.Raw = stepImages(s.Payload.Raw, "shown above") // no view shows an image's text
	}
	v := views.StepView{Images: images, Seq: s.Seq, Type: s.Type, At: s.At, Decision: s.Decision, Summary: summary,
		ToolName: s.Payload.ToolName, Segment: s.SegmentIndex}
	if s.Type == store.TypeMessage && s.Payload.Text != nil {
		v.LineRole = oneLine(s.Payload.Role) // then its first line (stepSummary)
	}
	v.SpawnKind, v.SpawnDesc = spawnOf(s)
	switch {
	case s.Outcome == "failed":
		v.Status, v.StatusClass = "failed", "failed"
		if s.Error != nil {
			v.Status += ": " + shorten(s.Error.Type, lineChars)
		}
	case s.ContentStatus == store.ContentReferenceOnly:
		v.Status, v.StatusClass = "reference-only", "ref"
	case s.Outcome == "ok":
		v.Status, v.StatusClass = "ok", "ok"
	default:
		v.Status, v.StatusClass = shorten(s.Outcome, lineChars), "other"
	}
	cut := func(text string) views.Text {
		shown, more := clip(text, limit)
		return views.Text{Shown: shown, More: more}
	}
	if s.Error != nil {
		e := s.Error.Type
		if s.Error.Message != "" {
			e += ": " + s.Error.Message
		}
		v.Error = cut(e)
	}
	for _, f := range s.Flags {
		v.Flags = append(v.Flags, views.FlagView{Kind: shorten(f.Kind, lineChars), Severity: shorten(f.Severity, lineChars), Reason: cut(f.Reason)})
	}
	p := s.Payload
	field := func(label string, value *string) {
		if value != nil && *value != "" {
			v.Fields = append(v.Fields, views.Field{Label: label, Value: cut(*value)})
		}
	}
	block := func(label, name string, text *string) {
		if text == nil || *text == "" {
			return
		}
		t := cut(*text)
		if n, ok := s.Cut[name]; ok {
			t.More = n - utf8.RuneCountInString(t.Shown)
		}
		v.Blocks = append(v.Blocks, views.Block{Label: label, Text: t})
	}
	switch s.Type {
	case store.TypeCommand:
		field("Command", p.Command)
		field("Working directory", p.Cwd)
		if _, cut := s.Cut["command"]; !cut && p.Command != nil {
			v.Fields = append(v.Fields, commandFileFields(*p.Command, deref(p.Cwd), root)...)
		}
		if p.ExitCode != nil {
			code := strconv.FormatInt(*p.ExitCode, 10)
			field("Exit code", &code)
		}
		field("Output kept at", p.OutputRef)
		block("stdout", "stdout", p.Stdout)
		block("stderr", "stderr", p.Stderr)
	case store.TypeEdit:
		fileField(&v, p.Path, cut)
		_, oldCut := s.Cut["old_string"]
		_, newCut := s.Cut["new_string"]
		v.Diff, v.DiffCut = editDiff(p, limit)
		v.DiffFile = p.Path
		v.DiffCut = v.DiffCut || oldCut || newCut
	case store.TypeRead:
		fileField(&v, p.Path, cut)
		if p.Range != nil {
			r := fmt.Sprintf("lines %d–%d", p.Range[0], p.Range[1])
			field("Range", &r)
		}
	case store.TypeMessage:
		field("Role", &p.Role)
		field("Text kept at", p.TextRef)
		block("Text", "text", p.Text)
		for i := range v.Blocks {
			v.Blocks[i].Markdown = true
		}
	case store.TypeOther:
		field("Tool", &p.ToolName)
		v.Tool = toolView(p.ToolName, p.Raw, limit)
		if len(p.Raw) > 0 {
			shown, more := prettyJSON(p.Raw, limit)
			v.Blocks = append(v.Blocks, views.Block{Label: "Recorded", Text: views.Text{Shown: shown, More: more}})
		}
	}
	return v
}

// maxReportRows bounds the rows of Files touched, of Commands run (the
// first commands run) and of Other tools (the most called); the JSON
// report lists every file, command and tool.
const maxReportRows = 500

// fileRows are the files of session id's report as Files touched shows
// them, each named by its path in the workspace (inWorkspace) and linked
// to a search of its steps with its path (filterHref: the edits, reads
// and commands that name it): a file an agent recorded both by its whole
// path and by its path in the workspace (Gemini CLI reads README.md,
// writes /home/wei/repo/bot/README.md) is one row, where it was first
// touched, with the counts of both, the whole path as its title, and a
// search of the path in the workspace, which both hold.
func fileRows(id, root string, files []store.FileTouched) []views.FileRow {
	var rows []views.FileRow
	var searched []string // the path each row's links search for
	at := map[string]int{}
	for _, f := range files {
		name := inWorkspace(root, f.Path)
		i, ok := at[name]
		if !ok {
			i, at[name] = len(rows), len(rows)
			rows = append(rows, views.FileRow{Name: shorten(name, headChars), Path: shorten(f.Path, headChars)})
			searched = append(searched, f.Path)
		} else {
			searched[i] = name
			if name != f.Path {
				rows[i].Path = shorten(f.Path, headChars)
			}
		}
		r := &rows[i]
		r.Created += f.Created
		r.Edited += f.Edited
		r.Read += f.Read
		r.Failed += f.Failed
		r.ByCommand += f.ByCommand
	}
	for i := range rows {
		rows[i].Href = filterHref(id, "path", searched[i])
		if rows[i].Failed > 0 {
			rows[i].FailedHref = filterHref(id, "path", searched[i], failedFilter)
		}
	}
	return rows
}

// failedFilter and flaggedFilter keep the failed and the flagged steps,
// for the links of a count of them.
const (
	failedFilter  = "status:failed"
	flaggedFilter = "flag:*"
)

// filterHref is a search of session id's steps by one filter of the
// query language, its value quoted (path:"src/a b.go", tool:"Web Fetch"),
// and the filters also; "" when the query language cannot say the value
// (a " in it, or longer than a query may be).
func filterHref(id, key, value string, also ...string) string {
	q := strings.Join(append([]string{key + `:"` + value + `"`}, also...), " ")
	if strings.Contains(value, `"`) || len(q) > store.MaxQueryBytes {
		return ""
	}
	return sessionSearchHref(id, q)
}

// inWorkspace is a path as the review app shows it: relative to the
// session's workspace root when it lies under it (src/auth.go for
// /home/dev/api/src/auth.go in /home/dev/api), as Claude Code and git show
// a path; as written otherwise, so that a file outside the workspace
// stands out. Either separator ends the root: an agent on Windows writes
// C:\dev\api\src\auth.go.
func inWorkspace(root, path string) string {
	root = strings.TrimRight(root, `/\`)
	if root == "" || len(path) <= len(root)+1 || !strings.HasPrefix(path, root) {
		return path
	}
	if c := path[len(root)]; c != '/' && c != '\\' {
		return path
	}
	return path[len(root)+1:]
}

// stepSummary is a step's one line in the timeline; root is the
// session's workspace root (inWorkspace).
func stepSummary(s store.Step, root string) string {
	p := s.Payload
	path := inWorkspace(root, p.Path)
	switch s.Type {
	case store.TypeCommand:
		if p.Command != nil && *p.Command != "" {
			return oneLine(*p.Command)
		}
		return "command not recorded"
	case store.TypeEdit:
		if p.IsFullWrite != nil && *p.IsFullWrite {
			return oneLine("write " + path)
		}
		return oneLine("edit " + path)
	case store.TypeRead:
		if p.Range != nil {
			return oneLine(fmt.Sprintf("read %s:%d-%d", path, p.Range[0], p.Range[1]))
		}
		return oneLine("read " + path)
	case store.TypeMessage:
		if p.Text == nil {
			return oneLine(p.Role + ": (not recorded)")
		}
		return oneLine(*p.Text) // after the role (StepView.LineRole), as its Markdown reads
	default:
		if line := toolLine(p.ToolName, p.Raw); line != "" {
			return oneLine(p.ToolName + " " + line)
		}
		if images := store.FindImages(p.Raw); len(images) > 0 {
			return oneLine(p.ToolName + " " + imagesLine(images))
		}
		if line := toolInputLine(p.Raw); line != "" {
			return oneLine(p.ToolName + " " + line)
		}
		return oneLine(p.ToolName + " " + oneLine(string(p.Raw)))
	}
}
