// Package claudecode reads Claude Code session transcripts
// (~/.claude/projects/<project>/<session>.jsonl and their subagent files)
// into v1.2 batches.
package claudecode

import (
	"encoding/json"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Claude Code sessions.
const Kind = "claude-code"

// Agent is the Claude Code adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "<session id>.jsonl transcripts (as in ~/.claude/projects/<project>/), with subagents in <session id>/subagents/agent-<id>.jsonl"}

// Resume is `claude --resume <id>`: Claude Code reopens a session of the
// folder it runs in.
func Resume(id string) []string { return []string{"claude", "--resume", id} }

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Discover finds transcripts under roots (folders or files) and groups them
// by session: <session>.jsonl, the subagent files in <session>/subagents/,
// and sibling agent-*.jsonl files whose lines name the session. A main file
// whose name is not a session id belongs to the first sessionId it holds.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	type group struct{ main, sub []string }
	groups := map[string]*group{}
	seen := map[string]bool{}
	add := func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		sid, sub, ok := classify(path)
		if !ok {
			return
		}
		g := groups[sid]
		if g == nil {
			g = &group{}
			groups[sid] = g
		}
		if sub {
			g.sub = append(g.sub, path)
		} else {
			g.main = append(g.main, path)
		}
	}
	// tool-results/ holds the output of large tool calls, never a transcript.
	skip := func(name string) bool { return name == "tool-results" }
	problems := adapters.Walk(roots, skip, func(p string, d fs.DirEntry, named bool) {
		if named || (!d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl") && d.Type().IsRegular()) {
			add(p)
		}
	})
	var units []adapters.Unit
	for sid, g := range groups {
		slices.Sort(g.main)
		slices.Sort(g.sub)
		units = append(units, adapters.Unit{ID: sid, Paths: append(g.main, g.sub...)})
	}
	slices.SortFunc(units, func(a, b adapters.Unit) int { return strings.Compare(a.ID, b.ID) })
	return units, problems
}

// classify says which session a transcript file belongs to and whether it
// is a subagent's file.
func classify(path string) (sid string, sub, ok bool) {
	base := filepath.Base(path)
	stem := strings.TrimSuffix(base, ".jsonl")
	parts := strings.Split(filepath.ToSlash(filepath.Dir(path)), "/")
	for i := len(parts) - 1; i > 0; i-- {
		if parts[i] == "subagents" {
			// <session>/subagents/[workflows/<wf>/]agent-<id>.jsonl
			if !strings.HasPrefix(base, "agent-") {
				return "", false, false
			}
			return parts[i-1], true, true
		}
	}
	if strings.HasPrefix(base, "agent-") {
		if sid := firstSessionID(path); sid != "" {
			return sid, true, true
		}
		return stem, true, true
	}
	if uuidRE.MatchString(stem) {
		return stem, false, true
	}
	if sid := firstSessionID(path); sid != "" {
		return sid, false, true
	}
	return stem, false, true
}

// firstSessionID returns the first sessionId in the first lines of a file.
func firstSessionID(path string) string {
	f, err := adapters.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lines := adapters.NewLines(io.LimitReader(f, adapters.MaxLine))
	for range 200 {
		_, line, _, err := lines.Next()
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &r) == nil && r.SessionID != "" {
			return r.SessionID
		}
		if err != nil && err != adapters.ErrLineTooLong {
			return ""
		}
	}
	return ""
}
