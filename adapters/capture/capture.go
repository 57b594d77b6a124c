// Package capture records coding-agent sessions while they run: an
// OTLP/HTTP receiver for Claude Code's telemetry (otlp.go), watchers on
// Claude Code's transcripts and Cline's task files (watch.go). The join of
// the telemetry it keeps with transcripts is the Claude Code adapter's
// (claudecode/telemetry.go). It writes through the same import runner and
// store Apply as every other writer.
package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
	"github.com/agentreview/service/store"
)

// Capture is the long-running capture process: Run watches the agents'
// folders and brings each changed session up to date, and Receiver takes
// Claude Code's telemetry. All store writes of sessions go through one
// worker, one session at a time, so two writers of the process never race
// on a session's seqs.
type Capture struct {
	Store *store.Store
	// ClaudeRoots are Claude Code's projects folders; ClineRoots are Cline's
	// sessions and task folders. Folders that do not exist yet are watched
	// from when they appear.
	ClaudeRoots []string
	ClineRoots  []string
	// Roots are the folders of the agents in watchers, by kind.
	Roots map[string][]string
	// Follow gives, by kind, the folders of an agent in watchers that
	// change while capture runs (Crush lists each project it runs in):
	// Run reads them at its start and every rootPoll after, and follows
	// each new one as one of Roots.
	Follow map[string]func() []string
	Log    *slog.Logger
	// Debounce is how long a file stays quiet before its session is read
	// again, and the first wait before a half-written file is read again
	// (250 ms when zero).
	Debounce time.Duration

	once   sync.Once
	q      *queue
	mu     sync.Mutex
	timers map[string]*time.Timer // debounce, by file
}

func (c *Capture) init() {
	c.once.Do(func() {
		c.q = newQueue()
		c.timers = map[string]*time.Timer{}
		if c.Debounce <= 0 {
			c.Debounce = 250 * time.Millisecond
		}
	})
}

func (c *Capture) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c.Log
}

// Run reads every session under the roots that changed since the last
// import, then follows the roots until ctx ends.
func (c *Capture) Run(ctx context.Context) error {
	c.init()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.work(ctx) })
	err := c.watch(ctx)
	cancel()
	wg.Wait()
	return err
}

// A job is one thing the worker does.
type job struct {
	kind jobKind
	key  string // a file, a session id or a root, by kind
}

type jobKind int

const (
	jobClaudeFile jobKind = iota // a Claude Code transcript changed
	jobClineFile                 // a file of a Cline task or session changed
	jobTelemetry                 // telemetry of a Claude Code session arrived
	jobScanClaude                // every Claude Code session under a root
	jobScanCline                 // every Cline session under a root
	jobAgentFile                 // a session file of an agent in watchers changed
	jobScanAgent                 // every session of an agent in watchers under a root
)

// A watcher is an agent whose session files capture follows with the
// import runner alone: a changed file's session is read again whole.
type watcher struct {
	agent adapters.Agent
	// file reports whether a path under one of its roots may be a session
	// file.
	file func(path string) bool
	// sync, when set, reads a changed file's sessions again instead of
	// syncFile: for a file that holds many sessions (a database).
	sync func(c *Capture, ctx context.Context, path string, final bool) result
	// top, when set, watches only the top of each root, not the folders
	// under it: Aider's roots are repositories, whose history sits at
	// their root, and a repository's tree is no place for a watch per
	// folder.
	top bool
}

// watchers are the agents followed by their files alone, by kind; their
// folders are Capture.Roots.
var watchers = map[string]watcher{
	codex.Kind:      codexWatcher,
	geminicli.Kind:  geminiWatcher,
	copilotcli.Kind: copilotWatcher,
	opencode.Kind:   opencodeWatcher,
	crush.Kind:      crushWatcher,
	qwencode.Kind:   qwenWatcher,
	aider.Kind:      aiderWatcher,
}

// maxTries is how often a job whose files are half written, or that met a
// problem, is tried again (waits of Debounce, doubling) before what is
// wrong is reported.
const maxTries = 5

// result is what one run of a job found.
type result struct {
	written   int // sessions created or updated
	problems  []adapters.Problem
	err       error
	unsettled bool // a file was still being written
}

// imported is the result of an import run.
func imported(sum adapters.Summary, err error) result {
	return result{written: sum.New + sum.Updated, problems: sum.Problems, err: err}
}

func (c *Capture) work(ctx context.Context) {
	for {
		j, tries, ok := c.q.pop(ctx)
		if !ok {
			return
		}
		res := c.do(ctx, j, tries >= maxTries)
		if ctx.Err() != nil {
			return
		}
		if res.written > 0 {
			c.log().Info("capture: session written", "from", j.key)
		}
		if res.err == nil && len(res.problems) == 0 && !res.unsettled {
			c.q.settle(j)
			continue
		}
		if tries < maxTries {
			wait := c.Debounce << tries
			c.log().Debug("capture: read again later", "job", j.key, "wait", wait, "problems", len(res.problems), "err", res.err)
			c.q.later(j, wait)
			continue
		}
		c.q.settle(j)
		for _, p := range res.problems {
			c.log().Warn("capture: skipped", "problem", p.String())
		}
		if res.err != nil {
			c.log().Warn("capture: not written", "job", j.key, "err", res.err)
		}
	}
}

func (c *Capture) do(ctx context.Context, j job, final bool) result {
	switch j.kind {
	case jobClaudeFile:
		return c.syncClaudeFile(ctx, j.key)
	case jobClineFile:
		return c.syncCline(ctx, j.key, final)
	case jobTelemetry:
		return c.syncTelemetry(ctx, j.key)
	case jobAgentFile:
		if r, ok := rootOf(c.fileRoots(), j.key); ok {
			if w := watchers[r.kind]; w.sync != nil {
				return w.sync(c, ctx, j.key, final)
			}
			return c.syncFile(ctx, watchers[r.kind].agent, j.key, final)
		}
	case jobScanClaude, jobScanCline, jobScanAgent:
		return c.scan(j)
	}
	return result{}
}

// scan queues every session under a root, behind the live changes.
func (c *Capture) scan(j job) result {
	discover, kind := claudecode.Discover, jobClaudeFile
	switch j.kind {
	case jobScanCline:
		discover, kind = cline.Discover, jobClineFile
	case jobScanAgent:
		r, ok := rootOf(c.fileRoots(), j.key)
		if !ok {
			return result{}
		}
		discover, kind = watchers[r.kind].agent.Discover, jobAgentFile
		if watchesTop(r) {
			return c.scanTop(r)
		}
	}
	units, problems := discover([]string{j.key})
	for _, u := range units {
		if len(u.Paths) > 0 {
			c.q.push(job{kind, u.Paths[0]}, false)
		}
	}
	return result{problems: problems}
}

// scanTop queues the session files at the top of a root whose folders
// under it are not watched (watcher.top).
func (c *Capture) scanTop(r root) result {
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return result{err: err}
	}
	for _, e := range entries {
		if p := filepath.Join(r.path, e.Name()); e.Type().IsRegular() && sessionFile(r, p) {
			c.q.push(job{jobAgentFile, p}, false)
		}
	}
	return result{}
}

// syncClaudeFile reads the session a changed transcript belongs to.
func (c *Capture) syncClaudeFile(ctx context.Context, path string) result {
	units, problems := claudecode.Discover([]string{path})
	if len(units) == 0 {
		return result{problems: problems}
	}
	res := imported(ImportClaudeSession(ctx, c.Store, units[0].ID, path, false))
	res.unsettled = !endsWithNewline(path)
	return res
}

// endsWithNewline reports whether a file's last line is whole (an empty or
// missing file counts as whole).
func endsWithNewline(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return true
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, fi.Size()-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// syncCline reads the Cline session a changed file belongs to.
func (c *Capture) syncCline(ctx context.Context, path string, final bool) result {
	return c.syncFile(ctx, cline.Agent, path, final)
}

// syncFile reads the session of agent a changed file belongs to. Agents
// that rewrite a whole JSON file on each save (Cline, Gemini CLI's older
// sessions) leave it invalid for a moment, and agents that append JSON
// Lines may be mid-line: such a session is read again shortly after
// instead, and only the final try reads (and reports) it as it is.
func (c *Capture) syncFile(ctx context.Context, agent adapters.Agent, path string, final bool) result {
	discover := agent.Discover
	agent.Discover = func(roots []string) ([]adapters.Unit, []adapters.Problem) {
		units, problems := discover(roots)
		return slices.DeleteFunc(units, func(u adapters.Unit) bool { return !slices.Contains(u.Paths, path) }), problems
	}
	units, _ := agent.Discover([]string{path})
	if len(units) == 0 {
		return result{}
	}
	if !final {
		for _, p := range units[0].Paths {
			if (strings.HasSuffix(p, ".json") && !wholeJSON(p)) || (strings.HasSuffix(p, ".jsonl") && !endsWithNewline(p)) {
				return result{unsettled: true}
			}
		}
	}
	im := &adapters.Importer{Store: c.Store}
	return imported(im.Run(ctx, agent, []string{path}))
}

func wholeJSON(path string) bool {
	f, err := adapters.Open(path)
	if err != nil {
		return true // a file gone is not half written; the import reports others
	}
	defer f.Close()
	b, err := adapters.ReadDocument(f)
	return err != nil || json.Valid(b)
}

// syncTelemetry brings a session up to date with newly kept telemetry:
// from its transcript when one is found, else from the telemetry alone.
func (c *Capture) syncTelemetry(ctx context.Context, sid string) result {
	if path := c.findTranscript(sid); path != "" {
		return imported(ImportClaudeSession(ctx, c.Store, sid, path, true))
	}
	written, err := applyTelemetry(ctx, c.Store, sid)
	return result{written: written, err: err}
}

// findTranscript returns <root>/<project>/<sid>.jsonl, "" when no root has
// it.
func (c *Capture) findTranscript(sid string) string {
	if !store.PlainID(sid) {
		return ""
	}
	for _, root := range c.ClaudeRoots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(root, e.Name(), sid+".jsonl")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
	}
	return ""
}

// record keeps one session's events of an export and queues the session
// to be brought up to date. The store keeps telemetry only beside a stored
// session (it goes when the session is deleted), so a session first seen
// here is created from what the telemetry says, until its transcript is
// read. Telemetry of a deleted session is dropped.
func (c *Capture) record(ctx context.Context, s sessionEvents) error {
	c.init()
	changed, err := c.Store.AddTelemetry(ctx, s.id, s.records)
	if errors.Is(err, store.ErrNotFound) {
		if err = createSession(ctx, c.Store, s); err == nil {
			changed, err = c.Store.AddTelemetry(ctx, s.id, s.records)
		}
	}
	var deleted *store.DeletedError
	switch {
	case errors.As(err, &deleted):
		return nil
	case err != nil:
		return err
	case changed:
		c.q.push(job{jobTelemetry, s.id}, true)
	}
	return nil
}

// createSession writes the header of a session known so far only from
// these events.
func createSession(ctx context.Context, st *store.Store, s sessionEvents) error {
	recs := slices.Clone(s.records)
	for i := range recs {
		recs[i].Ord = int64(i + 1)
	}
	_, err := st.Apply(ctx, &store.Batch{SchemaVersion: store.SchemaVersion, Session: claudecode.TelemetryHeader(s.id, recs)})
	return err
}

// applyTelemetry writes a session's telemetry when its transcript is not at
// hand. A session whose transcript was read before (from a folder capture
// does not watch) keeps its header and gets new steps in its last turn;
// one never read is made of the telemetry alone.
func applyTelemetry(ctx context.Context, st *store.Store, sid string) (written int, err error) {
	stored, err := st.StepSeqs(ctx, sid)
	if err != nil {
		return 0, err
	}
	var r adapters.Records
	for _, seq := range stored {
		if seq < adapters.ProvisionalSeq {
			d, err := st.Detail(ctx, sid, store.DetailQuery{Turns: 1, Head: 1})
			if err != nil {
				return 0, err
			}
			r.Header = store.SessionHeader{ID: sid, Agent: d.Agent, Workspace: d.Workspace, StartedAt: d.StartedAt}
			r.Turns = d.Turns
			break
		}
	}
	recs, err := st.Telemetry(ctx, sid)
	if err != nil {
		return 0, err
	}
	for _, b := range claudecode.TelemetryBatches(sid, r, recs, stored) {
		res, applyErr := st.Apply(ctx, b)
		if err = applyErr; err != nil {
			break
		}
		if res.Changed {
			written = 1
		}
	}
	var deleted *store.DeletedError
	if errors.As(err, &deleted) {
		return 0, nil
	}
	return written, err
}

// ImportClaudeSession reads one Claude Code session, given one of its
// transcript files, with its kept telemetry joined, through the import
// runner: only that session's files (the transcript, its subagent files)
// are read, and with rescan false only if one changed since the last
// import. Hook and capture use it.
func ImportClaudeSession(ctx context.Context, st *store.Store, sid, transcript string, rescan bool) (adapters.Summary, error) {
	agent := claudecode.Agent
	discover := agent.Discover
	agent.Discover = func(roots []string) ([]adapters.Unit, []adapters.Problem) {
		units, problems := discover(roots)
		return slices.DeleteFunc(units, func(u adapters.Unit) bool { return u.ID != sid }), problems
	}
	im := &adapters.Importer{Store: st, Rescan: rescan}
	sum, err := im.Run(ctx, agent, claudeRoots(sid, transcript))
	if err != nil {
		return sum, fmt.Errorf("import %s: %w", sid, err)
	}
	return sum, nil
}

// claudeRoots are the files and folders that may hold a session's
// transcripts, given one of them: the file itself, <project>/<sid>.jsonl,
// the <project>/<sid>/ folder of subagents, and the agent-*.jsonl files
// beside the transcript (Claude Code 2.0), which Discover keeps only when
// their lines name the session.
func claudeRoots(sid, path string) []string {
	path = filepath.Clean(path)
	if !store.PlainID(sid) {
		return []string{path}
	}
	dir := filepath.Dir(path)
	sep := string(filepath.Separator)
	if i := strings.LastIndex(path, sep+sid+sep+"subagents"+sep); i >= 0 {
		dir = path[:i]
	}
	roots := []string{path}
	for _, p := range []string{filepath.Join(dir, sid+".jsonl"), filepath.Join(dir, sid)} {
		if _, err := os.Stat(p); err == nil && p != path {
			roots = append(roots, p)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if p := filepath.Join(dir, name); e.Type().IsRegular() && strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl") && p != path {
			roots = append(roots, p)
		}
	}
	return roots
}
