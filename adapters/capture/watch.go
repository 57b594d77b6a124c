package capture

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// rootPoll is how often roots that do not exist yet are looked for.
const rootPoll = 2 * time.Second

// root is a folder the watcher follows and the agent whose files it holds.
type root struct {
	path  string
	agent jobKind // jobClaudeFile, jobClineFile or jobAgentFile
	kind  string  // for jobAgentFile, the agent's kind in watchers
}

// fileRoots are the roots of the agents in watchers: Roots, and what
// Follow gives now.
func (c *Capture) fileRoots() []root {
	var roots []root
	add := func(kind string, paths []string) {
		if _, ok := watchers[kind]; ok {
			for _, p := range paths {
				if r := (root{filepath.Clean(p), jobAgentFile, kind}); !slices.Contains(roots, r) {
					roots = append(roots, r)
				}
			}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(c.Roots)) {
		add(kind, c.Roots[kind])
	}
	for _, kind := range slices.Sorted(maps.Keys(c.Follow)) {
		add(kind, c.Follow[kind]())
	}
	return roots
}

// watch follows the roots with fsnotify until ctx ends. Every folder under
// a root is watched, new ones from when they appear (their files are read
// at once, as they may be written before the watch was added). A changed
// file's session is read again once the file has been quiet for Debounce:
// Claude Code appends a line per content block and Cline rewrites its files
// on each message, so a burst of writes gives one read. Roots that do not
// exist yet, and new folders of Follow, are looked for every rootPoll.
func (c *Capture) watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	var roots []root
	for _, p := range c.ClaudeRoots {
		roots = append(roots, root{path: filepath.Clean(p), agent: jobClaudeFile})
	}
	for _, p := range c.ClineRoots {
		roots = append(roots, root{path: filepath.Clean(p), agent: jobClineFile})
	}
	roots = append(roots, c.fileRoots()...)
	missing := map[root]bool{}
	for _, r := range roots {
		if !c.addRoot(w, r) {
			missing[r] = true
		}
	}
	tick := time.NewTicker(rootPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			r, ok := rootOf(roots, ev.Name)
			if !ok {
				continue
			}
			if ev.Name == r.path && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				missing[r] = true
				continue
			}
			c.event(w, r, ev)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Changes were lost: read every root again (unchanged
				// sessions are skipped by the import runner).
				c.log().Warn("capture: file events overflowed; reading every folder again")
				for _, r := range roots {
					if !missing[r] {
						c.q.push(scanJob(r), false)
					}
				}
				continue
			}
			c.log().Warn("capture: watch", "err", err)
		case <-tick.C:
			for r := range missing {
				if c.addRoot(w, r) {
					delete(missing, r)
				}
			}
			if len(c.Follow) == 0 {
				continue
			}
			for _, r := range c.fileRoots() {
				if !slices.Contains(roots, r) {
					c.log().Info("capture: following a new folder", "agent", r.kind, "path", r.path)
					roots = append(roots, r)
					if !c.addRoot(w, r) {
						missing[r] = true
					}
				}
			}
		}
	}
}

func scanJob(r root) job {
	switch r.agent {
	case jobClaudeFile:
		return job{jobScanClaude, r.path}
	case jobAgentFile:
		return job{jobScanAgent, r.path}
	}
	return job{jobScanCline, r.path}
}

// addRoot watches a root that exists and queues a read of its sessions.
func (c *Capture) addRoot(w *fsnotify.Watcher, r root) bool {
	if fi, err := os.Stat(r.path); err != nil || !fi.IsDir() {
		return false
	}
	c.addTree(w, r, r.path, false)
	c.q.push(scanJob(r), false)
	return true
}

// rootOf is the root a path is under.
func rootOf(roots []root, path string) (root, bool) {
	best, found := root{}, false
	for _, r := range roots {
		if (path == r.path || strings.HasPrefix(path, r.path+string(filepath.Separator))) && len(r.path) >= len(best.path) {
			best, found = r, true
		}
	}
	return best, found
}

// skipDir names folders that hold no session files: Claude Code's spilled
// tool outputs, Cline's checkpoint repositories and opencode's snapshots.
func skipDir(name string) bool {
	switch name {
	case "tool-results", "checkpoints", ".git", "node_modules", "snapshot":
		return true
	}
	return false
}

// addTree watches dir and every folder under it; with readFiles, the
// session files already there are treated as changed.
func (c *Capture) addTree(w *fsnotify.Watcher, r root, dir string, readFiles bool) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or not readable: nothing to watch
		}
		if d.IsDir() {
			if p != r.path && (skipDir(d.Name()) || watchesTop(r)) {
				return filepath.SkipDir
			}
			if err := w.Add(p); err != nil {
				c.log().Warn("capture: watch folder", "path", p, "err", err)
			}
			return nil
		}
		if readFiles && sessionFile(r, p) {
			c.changed(r, p)
		}
		return nil
	})
}

// watchesTop reports whether only the top folder of root r is watched.
func watchesTop(r root) bool { return r.agent == jobAgentFile && watchers[r.kind].top }

// sessionFile reports whether a file may be part of a session: a Claude
// Code transcript, one of the JSON files of a Cline task or session, or a
// session file of an agent in watchers.
func sessionFile(r root, path string) bool {
	switch r.agent {
	case jobClaudeFile:
		return strings.HasSuffix(path, ".jsonl")
	case jobAgentFile:
		return watchers[r.kind].file(path)
	}
	return strings.HasSuffix(path, ".json")
}

func (c *Capture) event(w *fsnotify.Watcher, r root, ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) {
		return // a removal, rename away or mode change: nothing to read
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if !skipDir(fi.Name()) && !watchesTop(r) {
				c.addTree(w, r, ev.Name, true)
			}
			return
		}
	}
	if sessionFile(r, ev.Name) {
		c.changed(r, ev.Name)
	}
}

// changed reads the session of a file once it has been quiet for Debounce.
func (c *Capture) changed(r root, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timers[path]; t != nil && t.Stop() {
		t.Reset(c.Debounce)
		return
	}
	var t *time.Timer
	t = time.AfterFunc(c.Debounce, func() {
		c.mu.Lock()
		if c.timers[path] == t {
			delete(c.timers, path)
		}
		c.mu.Unlock()
		c.q.push(job{r.agent, path}, true)
	})
	c.timers[path] = t
}
