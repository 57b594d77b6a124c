// Package store holds the v1.2 record model, its validation, the SQLite
// schema, and every query and write of the service.
package store

import "encoding/json"

// SchemaVersion is the only batch schema version the store accepts.
const SchemaVersion = "1.2"

// MaxItems is the most records of one kind a batch may carry.
const MaxItems = 5000

// Step types (a closed enumeration).
const (
	TypeCommand = "command"
	TypeEdit    = "edit"
	TypeRead    = "read"
	TypeMessage = "message"
	TypeOther   = "other"
)

// Content statuses (a closed enumeration).
const (
	ContentInline        = "inline"
	ContentReferenceOnly = "reference_only"
)

// StepTypes lists the step types in display order.
var StepTypes = []string{TypeCommand, TypeEdit, TypeRead, TypeMessage, TypeOther}

var (
	contentStatuses = []string{ContentInline, ContentReferenceOnly}
	severities      = []string{"info", "warn", "danger"}
)

// Batch is one push: a session header and any of its records.
type Batch struct {
	SchemaVersion string        `json:"schema_version"`
	Session       SessionHeader `json:"session"`
	Segments      []Segment     `json:"segments,omitempty"`
	Actors        []Actor       `json:"actors,omitempty"`
	Turns         []Turn        `json:"turns,omitempty"`
	Steps         []Step        `json:"steps,omitempty"`
	// Usage is what adapters and capture read of the agent's token usage;
	// not part of the v1.2 JSON (ParseBatch never fills it).
	Usage []UsageRecord `json:"-"`
	// Owner is the user a team server took the push from (by the token),
	// never a field of the body; empty means OwnerLocal.
	Owner string `json:"-"`
}

// SessionHeader is the session as a writer pushes it.
type SessionHeader struct {
	ID        string    `json:"id"`
	Agent     Agent     `json:"agent"`
	Workspace Workspace `json:"workspace"`
	StartedAt string    `json:"started_at"`
	EndedAt   string    `json:"ended_at,omitempty"`
	Source    string    `json:"source,omitempty"`
	Metrics   *Metrics  `json:"metrics,omitempty"`
}

// Agent names the agent that ran the session.
type Agent struct {
	Kind          string `json:"kind"`
	Version       string `json:"version"`
	FormatVersion string `json:"format_version,omitempty"`
}

// Workspace is where the session ran.
type Workspace struct {
	Root string `json:"root"`
	Repo string `json:"repo,omitempty"`
}

// Metrics are the session's cumulative usage exactly as the agent reported
// it; the store never calculates them.
type Metrics struct {
	CostUSD     float64 `json:"cost_usd"`
	APIRequests int64   `json:"api_requests"`
	Tokens      Tokens  `json:"tokens"`
}

// Tokens counts model tokens by kind.
type Tokens struct {
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	CacheRead     int64 `json:"cache_read"`
	CacheCreation int64 `json:"cache_creation"`
}

// Segment is a stretch of the session between start, resume, clear or
// compaction boundaries. Its upsert key is Index.
type Segment struct {
	Index       int64    `json:"index"`
	StartReason string   `json:"start_reason"`
	StartedAt   string   `json:"started_at"`
	EndedAt     string   `json:"ended_at,omitempty"`
	SourceFiles []string `json:"source_files"`
}

// Actor is the root agent or one of its subagents.
type Actor struct {
	ID       string `json:"id"`
	ParentID string `json:"parent_id,omitempty"`
	Type     string `json:"type"`
	Label    string `json:"label,omitempty"`
}

// Turn is the work that follows one prompt. StepIDs is ignored when pushed
// and rebuilt from the steps in seq order when read.
type Turn struct {
	ID           string   `json:"id"`
	SessionID    string   `json:"session_id"`
	SegmentIndex int64    `json:"segment_index"`
	ActorID      string   `json:"actor_id"`
	Index        int64    `json:"index"`
	PromptID     string   `json:"prompt_id,omitempty"`
	Mode         string   `json:"mode,omitempty"`
	StartedAt    string   `json:"started_at"`
	StepIDs      []string `json:"step_ids"`
}

// Step is one thing the agent did: a message, command, edit, read or other
// tool call.
type Step struct {
	ID            string     `json:"id"`
	SessionID     string     `json:"session_id"`
	SegmentIndex  int64      `json:"segment_index"`
	TurnID        string     `json:"turn_id"`
	ActorID       string     `json:"actor_id"`
	Seq           int64      `json:"seq"`
	At            string     `json:"at"`
	Type          string     `json:"type"`
	Decision      string     `json:"decision"`
	Outcome       string     `json:"outcome"`
	ContentStatus string     `json:"content_status"`
	Error         *StepError `json:"error,omitempty"`
	Channels      []string   `json:"channels"`
	Flags         []Flag     `json:"flags"`
	Payload       Payload    `json:"payload"`
	// Cut is set on reads that cut text fields (DetailQuery.Head): the
	// whole length in characters of each field that was cut. Never pushed.
	Cut map[string]int `json:"cut,omitempty"`
}

// StepError is the reason the agent reported for a failure.
type StepError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Flag marks a step worth a reviewer's attention.
type Flag struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Reason   string `json:"reason"`
}

// Payload holds the fields of every step type; the step's type says which
// are in use. Pointers tell an empty value from a missing one, so a payload
// reads back exactly as it was pushed.
type Payload struct {
	// command
	Command   *string `json:"command,omitempty"`
	Stdout    *string `json:"stdout,omitempty"`
	Stderr    *string `json:"stderr,omitempty"`
	ExitCode  *int64  `json:"exit_code,omitempty"`
	Cwd       *string `json:"cwd,omitempty"`
	OutputRef *string `json:"output_ref,omitempty"`
	// edit and read
	Path               string          `json:"path,omitempty"`
	OldString          *string         `json:"old_string,omitempty"`
	NewString          *string         `json:"new_string,omitempty"`
	StructuredPatch    json.RawMessage `json:"structured_patch,omitempty"`
	IsFullWrite        *bool           `json:"is_full_write,omitempty"`
	LandedInFinalState *bool           `json:"landed_in_final_state,omitempty"`
	Range              *[2]int64       `json:"range,omitempty"`
	// message
	Role    string  `json:"role,omitempty"`
	Text    *string `json:"text,omitempty"`
	TextRef *string `json:"text_ref,omitempty"`
	// other
	ToolName string          `json:"tool_name,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
}
