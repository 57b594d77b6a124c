// Package crush reads the sessions of Crush (charmbracelet/crush) into
// v1.2 batches. Crush keeps a SQLite file per project, <data dir>/crush.db,
// the data dir being .crush in the project's folder unless its options
// say otherwise; tables sessions, messages (each message's parts as JSON)
// and files. Its global data folder ($CRUSH_GLOBAL_DATA, else
// $XDG_DATA_HOME/crush, else ~/.local/share/crush) holds projects.json, the
// list of every project Crush ran in and its data dir, which is how the
// import finds them all.
package crush

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// Kind is the agent.kind of Crush sessions.
const Kind = "crush"

// Agent is the Crush adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse, Resume: Resume,
	Layout: "a crush.db SQLite file (in a project's .crush folder), or Crush's projects.json (in ~/.local/share/crush/) listing them"}

// Resume is `crush --session <id>`: Crush's TUI (since March 2026) opens the
// session of that id, from the project's .crush folder, so in the
// workspace.
func Resume(id string) []string { return []string{"crush", "--session", id} }

// dbName is the name of Crush's database in a data dir.
const dbName = "crush.db"

// DataHome is Crush's global data folder, where projects.json is:
// $CRUSH_GLOBAL_DATA, else $XDG_DATA_HOME/crush, else ~/.local/share/crush
// (on Windows %LOCALAPPDATA%\crush).
func DataHome() (string, error) {
	if dir := os.Getenv("CRUSH_GLOBAL_DATA"); dir != "" {
		return dir, nil
	}
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" {
		return filepath.Join(dir, "crush"), nil
	}
	if dir := os.Getenv("LOCALAPPDATA"); dir != "" && filepath.Separator == '\\' {
		return filepath.Join(dir, "crush"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share", "crush"), nil
}

// Discover finds sessions under roots: in each crush.db, in each database
// a projects.json lists (each project's data dir), and in any SQLite file
// named on the command line. Only sessions without a parent are units: a
// subagent's session (Crush's agent tool) and a title's are read with
// the session that made them. A unit lists the database alone; its stamp
// says whether the session or one of its children changed.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	var units []adapters.Unit
	var problems []adapters.Problem
	seen := map[string]bool{}
	addDB := func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		us, err := dbUnits(path)
		if err != nil {
			problems = append(problems, adapters.Problem{Path: path, Message: err.Error()})
		}
		units = append(units, us...)
	}
	skip := func(name string) bool { return name == "node_modules" || name == ".git" }
	walked := adapters.Walk(roots, skip, func(p string, d fs.DirEntry, named bool) {
		if d.IsDir() || !d.Type().IsRegular() {
			return
		}
		switch {
		case d.Name() == dbName || (named && adapters.IsSQLite(p)):
			addDB(p)
		case d.Name() == "projects.json":
			for _, pr := range readProjects(p) {
				db := filepath.Join(pr.DataDir, dbName)
				if fi, err := os.Stat(db); err == nil && fi.Mode().IsRegular() {
					addDB(db)
				}
			}
		}
	})
	problems = append(walked, problems...)
	slices.SortFunc(units, func(a, b adapters.Unit) int {
		return strings.Compare(a.Paths[0]+"\x00"+a.ID, b.Paths[0]+"\x00"+b.ID)
	})
	return units, problems
}

// project is one entry of projects.json.
type project struct {
	Path    string `json:"path"`
	DataDir string `json:"data_dir"`
}

// readProjects reads a projects.json; nil when it is not one.
func readProjects(path string) []project {
	f, err := adapters.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := adapters.ReadDocument(f)
	if err != nil {
		return nil
	}
	var list struct {
		Projects []project `json:"projects"`
	}
	if json.Unmarshal(b, &list) != nil {
		return nil
	}
	out := list.Projects[:0]
	for _, p := range list.Projects {
		if filepath.IsAbs(p.DataDir) {
			out = append(out, p)
		}
	}
	return out
}

// ProjectDataDirs are the data dirs of the projects Crush's projects.json
// lists (in DataHome), for capture to follow.
func ProjectDataDirs() []string {
	home, err := DataHome()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, p := range readProjects(filepath.Join(home, "projects.json")) {
		dirs = append(dirs, filepath.Clean(p.DataDir))
	}
	return dirs
}

// workspace is the project folder a database belongs to: the folder its
// .crush data dir is in, else the project projects.json names for its
// data dir, else "".
func workspace(db string) string {
	dir := filepath.Dir(db)
	if filepath.Base(dir) == ".crush" {
		return filepath.Dir(dir)
	}
	home, err := DataHome()
	if err != nil {
		return ""
	}
	for _, p := range readProjects(filepath.Join(home, "projects.json")) {
		if filepath.Clean(p.DataDir) == dir {
			return p.Path
		}
	}
	return ""
}

// IsDatabase reports whether a file name is Crush's database or its
// write-ahead log, and names the database. The -shm file is not one:
// every reader writes to it.
func IsDatabase(path string) (db string, ok bool) {
	db = strings.TrimSuffix(path, "-wal")
	return db, filepath.Base(db) == dbName
}
