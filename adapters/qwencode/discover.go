// Package qwencode reads Qwen Code chat recordings
// (~/.qwen/projects/<sanitised cwd>/chats/<session id>.jsonl) into v1.2
// batches.
package qwencode

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Qwen Code sessions.
const Kind = "qwen-code"

// Agent is the Qwen Code adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "chat recordings <session id>.jsonl in a chats folder, <sanitised cwd>/chats/, as in ~/.qwen/projects/"}

// Resume is `qwen --resume <id>`: Qwen Code reopens a session of the
// project it runs in by its id.
func Resume(id string) []string { return []string{"qwen", "--resume", id} }

// SessionFile reports whether a path is where Qwen Code keeps a session: a
// .jsonl file in a chats folder.
func SessionFile(path string) bool {
	return filepath.Ext(path) == ".jsonl" && filepath.Base(filepath.Dir(path)) == "chats"
}

// Discover finds chat recordings under roots: the .jsonl files in a chats
// folder, and any file named as a root whose first record is a Qwen Code
// record (a sessionId and a type user, assistant, system or tool_result).
// Each file is one session, named by the sessionId of its first record,
// else by its file name; files that name the same session are read
// together.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	groups := map[string][]string{}
	var notChats []adapters.Problem
	problems := adapters.Walk(roots, nil, func(p string, d fs.DirEntry, named bool) {
		if !d.Type().IsRegular() || !(named || SessionFile(p)) {
			return
		}
		id, ok := firstRecord(p)
		switch {
		case named && !ok && !SessionFile(p):
			notChats = append(notChats, adapters.Problem{Path: p, Message: "not a Qwen Code chat recording: its first record has no sessionId and record type"})
			return
		case id == "":
			id = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		}
		if !slices.Contains(groups[id], p) {
			groups[id] = append(groups[id], p)
		}
	})
	problems = append(problems, notChats...)
	var units []adapters.Unit
	for id, paths := range groups {
		slices.Sort(paths)
		units = append(units, adapters.Unit{ID: id, Paths: paths})
	}
	slices.SortFunc(units, func(a, b adapters.Unit) int { return strings.Compare(a.ID, b.ID) })
	return units, problems
}

// firstRecord reads the first non-empty line of a file: its sessionId, and
// whether it is a Qwen Code record (a sessionId and a known type).
func firstRecord(path string) (id string, ok bool) {
	f, err := adapters.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	lines := adapters.NewLines(io.LimitReader(f, adapters.MaxLine+1))
	for {
		_, line, _, err := lines.Next()
		if err != nil {
			return "", false
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r struct {
			SessionID string `json:"sessionId"`
			Type      string `json:"type"`
		}
		if json.Unmarshal(line, &r) != nil {
			return "", false
		}
		switch r.Type {
		case "user", "assistant", "system", "tool_result":
			return r.SessionID, r.SessionID != ""
		}
		return r.SessionID, false
	}
}
