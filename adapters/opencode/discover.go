// Package opencode reads opencode's own storage into v1.2 batches: the
// SQLite file opencode keeps since 1.2 (~/.local/share/opencode/opencode.db,
// tables session, message and part whose data column holds JSON), the JSON
// files of each session, message and part it kept up to 1.1.x
// (~/.local/share/opencode/storage/{session,message,part}/), and the
// output of `opencode export`. All three hold the same records.
package opencode

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of opencode sessions.
const Kind = "opencode"

// Agent is the opencode adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "an opencode*.db SQLite file, or storage/session/<project>/<session id>.json with storage/message and storage/part, as in ~/.local/share/opencode/"}

// Resume is `opencode --session <id>`: opencode's TUI continues the session
// of that id.
func Resume(id string) []string { return []string{"opencode", "--session", id} }

// Discover finds sessions under roots: in each SQLite file named
// opencode*.db, in each storage/session/<project>/<id>.json with its
// message and part files, and in export files named on the command line.
// A unit of the SQLite file lists the file alone; its stamp says whether
// the session changed (a write may still be in the write-ahead log only).
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	var units []adapters.Unit
	seen := map[string]bool{}
	add := func(u adapters.Unit) {
		key := u.ID + "\x00" + u.Paths[0]
		if !seen[key] {
			seen[key] = true
			units = append(units, u)
		}
	}
	var problems []adapters.Problem
	skip := func(name string) bool {
		// message/ and part/ are read through their session; snapshot/
		// holds git repositories of the workspaces.
		return name == "message" || name == "part" || name == "snapshot" || name == "node_modules" || name == ".git"
	}
	walked := adapters.Walk(roots, skip, func(p string, d fs.DirEntry, named bool) {
		if d.IsDir() || !d.Type().IsRegular() {
			return
		}
		switch {
		case isDBName(d.Name()) || (named && adapters.IsSQLite(p)):
			us, err := dbUnits(p)
			if err != nil {
				problems = append(problems, adapters.Problem{Path: p, Message: err.Error()})
			}
			for _, u := range us {
				add(u)
			}
		case sessionFile(p):
			if u, ok := storageUnit(p); ok {
				add(u)
			}
		case named && strings.HasSuffix(p, ".json"):
			if id := exportID(p); id != "" {
				add(adapters.Unit{ID: id, Paths: []string{p}})
			}
		}
	})
	problems = append(walked, problems...)
	slices.SortFunc(units, func(a, b adapters.Unit) int {
		return strings.Compare(a.Paths[0]+"\x00"+a.ID, b.Paths[0]+"\x00"+b.ID)
	})
	return units, problems
}

// isDBName reports whether a file name is one of opencode's databases:
// opencode.db, or opencode-<channel>.db for a build of another channel.
func isDBName(name string) bool {
	return name == "opencode.db" || (strings.HasPrefix(name, "opencode-") && strings.HasSuffix(name, ".db"))
}

// sessionFile reports whether path is storage/session/<project>/<id>.json.
func sessionFile(path string) bool {
	dir := filepath.Dir(path)
	return strings.HasSuffix(path, ".json") && filepath.Base(filepath.Dir(dir)) == "session" &&
		filepath.Base(filepath.Dir(filepath.Dir(dir))) == "storage"
}

// storageUnit is the session of storage/session/<project>/<id>.json: that
// file, then storage/message/<id>/*.json, then storage/part/<message>/*.json
// for each message, each folder in name order (opencode's ids grow with
// time).
func storageUnit(path string) (adapters.Unit, bool) {
	id := strings.TrimSuffix(filepath.Base(path), ".json")
	storage := filepath.Dir(filepath.Dir(filepath.Dir(path)))
	u := adapters.Unit{ID: id, Paths: []string{path}}
	msgs := jsonFiles(filepath.Join(storage, "message", id))
	u.Paths = append(u.Paths, msgs...)
	for _, m := range msgs {
		u.Paths = append(u.Paths, jsonFiles(filepath.Join(storage, "part", strings.TrimSuffix(filepath.Base(m), ".json")))...)
	}
	return u, true
}

// jsonFiles lists the regular .json files directly in dir, sorted.
func jsonFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// exportID is the session id of an `opencode export` file, "" when the
// file is not one.
func exportID(path string) string {
	f, err := adapters.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := adapters.ReadDocument(f)
	if err != nil {
		return ""
	}
	var ex struct {
		Info struct {
			ID string `json:"id"`
		} `json:"info"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(b, &ex) != nil || !adapters.Present(ex.Messages) {
		return ""
	}
	return ex.Info.ID
}
