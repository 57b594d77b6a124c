// Package cline reads Cline's task and session files into v1.2 batches:
// the task folders (tasks/<id>/api_conversation_history.json with
// ui_messages.json and task_metadata.json) that the VS Code extension and
// the CLI wrote, and the SDK session folders (sessions/<id>/<id>.json and
// <id>.messages.json, with a subagent's <agent>.messages.json beside them)
// that Cline writes since 4.0.
package cline

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Cline sessions.
const Kind = "cline"

// Agent is the Cline adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse,
	Layout: "task folders <task id>/ holding api_conversation_history.json (with ui_messages.json and task_metadata.json), as in ~/.cline/data/tasks/, and SDK sessions <id>.messages.json"}

// The files of a task folder, in the order a unit lists them.
const (
	apiHistoryFile = "api_conversation_history.json"
	uiMessagesFile = "ui_messages.json"
	metadataFile   = "task_metadata.json"
	messagesSuffix = ".messages.json"
)

var taskFiles = []string{apiHistoryFile, uiMessagesFile, metadataFile}

// Discover finds task folders and SDK sessions under roots (folders, or
// files of a task or session).
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	units := map[string]adapters.Unit{} // by first path, so a folder found twice counts once
	addDir := func(dir string) {
		for _, u := range unitsIn(dir) {
			units[u.Paths[0]] = u
		}
	}
	skip := func(name string) bool { return name == "checkpoints" || name == ".git" || name == "node_modules" }
	problems := adapters.Walk(roots, skip, func(p string, d fs.DirEntry, named bool) {
		switch {
		case named: // a file of a task or session: its folder
			addDir(filepath.Dir(p))
		case d.IsDir():
			addDir(p)
		}
	})
	out := make([]adapters.Unit, 0, len(units))
	for _, u := range units {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b adapters.Unit) int { return strings.Compare(a.Paths[0], b.Paths[0]) })
	return out, problems
}

// unitsIn returns the sessions whose files sit directly in dir.
func unitsIn(dir string) []adapters.Unit {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	var messages []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names[e.Name()] = true
			if strings.HasSuffix(e.Name(), messagesSuffix) {
				messages = append(messages, e.Name())
			}
		}
	}
	if names[apiHistoryFile] || names[uiMessagesFile] {
		u := adapters.Unit{ID: filepath.Base(dir)}
		for _, n := range taskFiles {
			if names[n] {
				u.Paths = append(u.Paths, filepath.Join(dir, n))
			}
		}
		return []adapters.Unit{u}
	}
	slices.Sort(messages)
	base := filepath.Base(dir)
	if names[base+messagesSuffix] {
		// sessions/<id>/: the manifest, the lead's messages, then each
		// subagent's messages.
		u := adapters.Unit{ID: base}
		if names[base+".json"] {
			u.Paths = append(u.Paths, filepath.Join(dir, base+".json"))
		}
		u.Paths = append(u.Paths, filepath.Join(dir, base+messagesSuffix))
		for _, m := range messages {
			if m != base+messagesSuffix {
				u.Paths = append(u.Paths, filepath.Join(dir, m))
			}
		}
		return []adapters.Unit{u}
	}
	// sessions/<id>.messages.json, each with its <id>.json manifest.
	var out []adapters.Unit
	for _, m := range messages {
		id := strings.TrimSuffix(m, messagesSuffix)
		u := adapters.Unit{ID: id}
		if names[id+".json"] {
			u.Paths = append(u.Paths, filepath.Join(dir, id+".json"))
		}
		u.Paths = append(u.Paths, filepath.Join(dir, m))
		out = append(out, u)
	}
	return out
}
