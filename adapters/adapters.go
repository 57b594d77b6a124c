// Package adapters turns coding agents' own files into v1.2 batches and
// writes them through the store's apply path. Each agent has a folder of
// its own (claudecode, cline, codex) with a pure parser over the agent's
// files; this package holds what they share and the import runner.
package adapters

import (
	"fmt"
	"io"
	"time"

	"github.com/agentreview/service/store"
)

// File is one of an agent's files: where it was read from and its bytes.
type File struct {
	Path string
	Body io.Reader
}

// Unit is one agent session as found on disk: the files it is made of.
// ModTime is the newest modification time of those files; a parser uses it
// only when the files themselves carry no time at all.
type Unit struct {
	ID      string
	Paths   []string
	ModTime time.Time
	// Stored, when set (the Importer sets it), looks up what the store
	// already holds of a session, for the builder to join with what the
	// files say before the session is split into batches.
	Stored func(sid string) (Stored, error)
	// Offset, when set, is where the session's records start in its first
	// file, for a file that holds many sessions one after another (an
	// Aider history): Parse may read from there rather than from the
	// start, so reading every session of the file costs one pass, not one
	// per session. Parse checks what it finds there.
	Offset int64
	// Stamps, when set, say whether the session changed instead of its
	// files' size and time: a file that holds many sessions (a database)
	// changes with any of them. Each stamp is a key of the adapter's own
	// (the file and the session id) with a size and time that change
	// whenever the session does.
	Stamps []store.ImportedFile
}

// Stored is what the store holds of a session beside what its files say:
// the seq of each stored step, by id, and the telemetry kept for it.
type Stored struct {
	Seqs      map[string]int64
	Telemetry []store.TelemetryRecord
}

// Problem is a line or file that could not be read. It is skipped and the
// rest of the session is still imported. Line is 0 for a whole file.
type Problem struct {
	Path    string
	Line    int
	Message string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// Session is one parsed agent session, ready to write.
type Session struct {
	ID string
	// Batches hold the whole session, parents first, each within the
	// store's per-batch limit; every one carries the same header. Write
	// them with Each, which adds the batches of Spilled.
	Batches []*store.Batch
	// Spilled, for a session too large to keep in memory, holds its steps
	// (Batches then hold its parents); Close removes its spill.
	Spilled *Spilled
	// Steps is the number of steps over all batches.
	Steps int
	// Problems are the lines and files that were skipped.
	Problems []Problem
	// Incomplete names files whose last line was still being written; they
	// are read again next time even if nothing else changed.
	Incomplete []string
	// Skipped counts the records that were read but make no step, by kind.
	Skipped map[string]int
	// Usage is the reported token usage added up (Builder.AddUsage), nil
	// when none was reported.
	Usage *Usage
}

// Agent is what the import runner needs from one agent's adapter.
type Agent struct {
	// Kind is the agent.kind of its sessions, e.g. claude-code.
	Kind string
	// Layout names the files Discover looks for and where, for a user
	// whose folder holds none.
	Layout string
	// Discover finds the sessions under the given files and folders.
	// Folders that do not exist are reported as problems.
	Discover func(roots []string) ([]Unit, []Problem)
	// Parse reads one unit's files (in the order of Unit.Paths). It returns
	// nil when the files hold no session.
	Parse func(u Unit, files []File) *Session
	// Resume is the command (its words) that reopens session id in the
	// agent, run in the session's workspace; nil for an agent that cannot
	// reopen a session by its id.
	Resume func(id string) []string
}

// Decision and outcome values the adapters write.
const (
	DecisionAccepted = "accepted"
	DecisionRejected = "rejected"
	DecisionAuto     = "auto"
	DecisionNone     = "n/a"
	DecisionUnknown  = "unknown"

	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeNotRun  = "not_run" // refused before it ran (AGENT-FORMATS: a rejection)
	OutcomeUnknown = "unknown"
)
