// Package geminicli reads Gemini CLI session files
// (~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.jsonl, and the
// older single-JSON .json files beside them) into v1.2 batches.
package geminicli

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Gemini CLI sessions.
const Kind = "gemini-cli"

// Agent is the Gemini CLI adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "session files in a chats folder, <project hash>/chats/*.jsonl or *.json, as in ~/.gemini/tmp/"}

// Resume is `gemini --resume <id>`: Gemini CLI reopens a session of the
// project it runs in by its id (its session management guide).
func Resume(id string) []string { return []string{"gemini", "--resume", id} }

// SessionFile reports whether a path is where Gemini CLI keeps a session:
// a .json or .jsonl file in a chats folder.
func SessionFile(path string) bool {
	ext := filepath.Ext(path)
	return (ext == ".json" || ext == ".jsonl") && filepath.Base(filepath.Dir(path)) == "chats"
}

// Discover finds session files under roots (files in a chats folder, or
// any file named as a root) and groups them by the sessionId they hold; a
// file that names none is a session of its own, named for the file.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	groups := map[string][]string{}
	problems := adapters.Walk(roots, nil, func(p string, d fs.DirEntry, named bool) {
		if named || (d.Type().IsRegular() && SessionFile(p)) {
			id := sessionID(p)
			if !slices.Contains(groups[id], p) {
				groups[id] = append(groups[id], p)
			}
		}
	})
	var units []adapters.Unit
	for id, paths := range groups {
		paths = withProjectRoot(paths)
		slices.Sort(paths) // session file names start with their time
		units = append(units, adapters.Unit{ID: id, Paths: paths})
	}
	slices.SortFunc(units, func(a, b adapters.Unit) int { return strings.Compare(a.ID, b.ID) })
	return units, problems
}

// ProjectRootFile is the file newer Gemini CLI versions write beside a
// project's chats folder, holding the project's folder.
const ProjectRootFile = ".project_root"

// withProjectRoot adds to a session's files the ProjectRootFile of the
// project folders they lie in, where there is one.
func withProjectRoot(paths []string) []string {
	for _, p := range paths {
		if filepath.Base(filepath.Dir(p)) != "chats" {
			continue
		}
		root := filepath.Join(filepath.Dir(filepath.Dir(p)), ProjectRootFile)
		if fi, err := os.Stat(root); err == nil && fi.Mode().IsRegular() && !slices.Contains(paths, root) {
			paths = append(paths, root)
		}
	}
	return paths
}

// sessionID is the sessionId at the top of a session file (the JSONL
// header, or the first key of the JSON document), else the file's name.
func sessionID(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	f, err := adapters.Open(path)
	if err != nil {
		return name
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, adapters.MaxLine))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return name
	}
	// Read the top-level keys up to sessionId; Gemini writes it first, so
	// the messages after it are not read.
	for range 20 {
		key, err := dec.Token()
		if err != nil {
			return name
		}
		if key == "sessionId" {
			var id string
			if dec.Decode(&id) == nil && id != "" {
				return id
			}
			return name
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return name
		}
	}
	return name
}
