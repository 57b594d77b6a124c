// Package copilotcli reads GitHub Copilot CLI sessions into v1.2 batches:
// the event logs ~/.copilot/session-state/<id>/events.jsonl, and the older
// single-JSON sessions ~/.copilot/history-session-state/<id>.json.
package copilotcli

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Copilot CLI sessions.
const Kind = "copilot-cli"

// Agent is the Copilot CLI adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "session-state/<session id>/events.jsonl logs and history-session-state/*.json files, as in ~/.copilot/"}

// Resume is `copilot --resume <id>`: Copilot CLI reopens the session of
// that id.
func Resume(id string) []string { return []string{"copilot", "--resume", id} }

// Discover finds Copilot CLI sessions under roots: each events.jsonl (or
// other .jsonl) in a folder under session-state, each .jsonl directly in
// session-state (the flat layout of early versions), each .json directly
// in history-session-state, and every .jsonl or .json file named as a
// root. A session's id is its folder's name, else its file's; of the files
// with the same id, events.jsonl is read, else the first other log, else
// the legacy file.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	byID := map[string]adapters.Unit{}
	problems := adapters.Walk(roots, nil, func(p string, d fs.DirEntry, named bool) {
		if d.IsDir() || !d.Type().IsRegular() && !named {
			return
		}
		id, ok := sessionOf(p, named)
		if !ok {
			return
		}
		if old, seen := byID[id]; seen && rank(old.Paths[0]) >= rank(p) {
			return
		}
		byID[id] = adapters.Unit{ID: id, Paths: []string{p}}
	})
	var units []adapters.Unit
	for _, u := range byID {
		units = append(units, u)
	}
	slices.SortFunc(units, func(a, b adapters.Unit) int { return strings.Compare(a.ID, b.ID) })
	return units, problems
}

func isLog(path string) bool { return strings.HasSuffix(path, ".jsonl") }

// rank orders the files that name the same session: events.jsonl, then
// another log, then a legacy file.
func rank(path string) int {
	switch {
	case filepath.Base(path) == "events.jsonl":
		return 2
	case isLog(path):
		return 1
	}
	return 0
}

// sessionOf is the session id of a file, and whether it is a session file.
func sessionOf(path string, named bool) (string, bool) {
	dir, base := filepath.Base(filepath.Dir(path)), filepath.Base(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
	grand := filepath.Base(filepath.Dir(filepath.Dir(path)))
	switch {
	case isLog(path) && (grand == "session-state" || base == "events.jsonl"):
		return dir, true
	case isLog(path) && (dir == "session-state" || named):
		return stem, true
	case strings.HasSuffix(base, ".json") && (dir == "history-session-state" || named):
		return stem, true
	}
	return "", false
}

// IsSessionFile reports whether a changed file may be part of a session, for
// capture: a file Discover finds in a folder walk (not, say, another JSON
// file Copilot keeps beside events.jsonl).
func IsSessionFile(path string) bool {
	_, ok := sessionOf(path, false)
	return ok
}
