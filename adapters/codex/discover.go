// Package codex reads OpenAI Codex CLI rollout files
// (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl) into v1.2
// batches.
package codex

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

// Kind is the agent.kind of Codex sessions.
const Kind = "codex"

// Agent is the Codex adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "rollout-*.jsonl files (or .jsonl files whose first line is a session_meta), as in ~/.codex/sessions/YYYY/MM/DD/"}

// Resume is `codex resume <id>`: Codex reopens the session of that id.
func Resume(id string) []string { return []string{"codex", "resume", id} }

var fileIDRE = regexp.MustCompile(`([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// Discover finds rollout files under roots and groups them by session id
// (the session_meta on their first line; a resumed session may have
// several files).
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	groups := map[string][]string{}
	seen := map[string]bool{}
	add := func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		id, meta := sessionID(path)
		if !meta && !strings.HasPrefix(filepath.Base(path), "rollout-") {
			return // not a rollout (history.jsonl, say)
		}
		groups[id] = append(groups[id], path)
	}
	problems := adapters.Walk(roots, nil, func(p string, d fs.DirEntry, named bool) {
		if named || (!d.IsDir() && d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl")) {
			add(p)
		}
	})
	var units []adapters.Unit
	for id, paths := range groups {
		slices.Sort(paths) // rollout names start with their time
		units = append(units, adapters.Unit{ID: id, Paths: paths})
	}
	slices.SortFunc(units, func(a, b adapters.Unit) int { return strings.Compare(a.ID, b.ID) })
	return units, problems
}

// SessionFile reports whether path is named as a rollout
// (rollout-<time>-<id>.jsonl), the file Codex appends a session to, also
// when it resumes it.
func SessionFile(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, "rollout-") && strings.HasSuffix(base, ".jsonl")
}

// sessionID is the id in a rollout's session_meta (meta true), else the
// uuid at the end of its name, else its name.
func sessionID(path string) (id string, meta bool) {
	if f, err := adapters.Open(path); err == nil {
		defer f.Close()
		lines := adapters.NewLines(io.LimitReader(f, adapters.MaxLine))
		for range 20 {
			_, line, _, err := lines.Next()
			var r struct {
				Type    string `json:"type"`
				Payload struct {
					ID string `json:"id"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &r) == nil && r.Type == "session_meta" && r.Payload.ID != "" {
				return r.Payload.ID, true
			}
			if err != nil && err != adapters.ErrLineTooLong {
				break
			}
		}
	}
	if m := fileIDRE.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1], false
	}
	return strings.TrimSuffix(filepath.Base(path), ".jsonl"), false
}
