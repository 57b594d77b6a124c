package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentreview/service/adapters/capture"
	"github.com/agentreview/service/store"
)

// HookCmd is `service hook [--db PATH]`, the command Claude Code's hooks
// run with the hook's JSON on stdin. It appends every payload to the
// session's hooks.ndjson capture file (see store.AppendCapture). On
// SessionStart, Stop, SubagentStop and SessionEnd it imports that session's
// transcript files, only if they changed, with the telemetry capture kept
// joined: so a session updates at the end of each assistant turn; on
// SessionEnd it then marks the session ended.
//
// It must never hold up or fail the agent: it always exits 0 and prints
// nothing (for SessionStart and UserPromptSubmit, Claude Code would add
// stdout to the model's context), and it gives up after hookTimeout, for
// instance while the store is locked by another writer. What went wrong is
// appended to hook.log beside the store.
type HookCmd struct {
	DB string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// hookTimeout bounds a hook's run; a variable so that a test can shorten it.
var hookTimeout = 5 * time.Second

const (
	maxHookInput = 16 << 20 // a Stop payload is small; tool payloads may not be
	maxHookLog   = 1 << 20  // hook.log starts again past this size
)

// hookInput is the part of Claude Code's hook payload the hook uses.
type hookInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	HookEventName  string `json:"hook_event_name"`
}

// Run handles one hook call and returns nil whatever happened.
func (c *HookCmd) Run(e *env) error {
	dbPath, err := storePath(c.DB)
	if err != nil {
		return nil // no home folder: nowhere to write, nothing to log to
	}
	ctx, cancel := context.WithTimeout(e.ctx, hookTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- handleHook(ctx, e.stdin, dbPath) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Parsing does not stop at the deadline; the process ends, and
		// SQLite rolls back a write it cut short.
		err = fmt.Errorf("gave up after %s: %w", hookTimeout, ctx.Err())
	}
	if err != nil {
		logHook(dbPath, err)
	}
	return nil
}

func handleHook(ctx context.Context, stdin io.Reader, dbPath string) error {
	received := time.Now()
	body, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err != nil {
		return fmt.Errorf("read hook input: %w", err)
	}
	if len(body) > maxHookInput {
		return fmt.Errorf("hook input larger than %d bytes", maxHookInput)
	}
	var in hookInput
	if err := json.Unmarshal(body, &in); err != nil {
		return fmt.Errorf("hook input is not a JSON object: %w", err)
	}
	imports := false
	switch in.HookEventName {
	case "SessionStart", "Stop", "SubagentStop", "SessionEnd":
		imports = true
	}
	if in.SessionID == "" {
		if imports {
			return fmt.Errorf("%s: no session id or transcript path in the hook input", in.HookEventName)
		}
		return nil
	}
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	kept := keepHookPayload(ctx, st, in, body, received)
	if !imports {
		return kept
	}
	return errors.Join(kept, importHook(ctx, st, in, received))
}

// keepHookPayload appends the payload to the session's capture file;
// nothing for a deleted session.
func keepHookPayload(ctx context.Context, st *store.Store, in hookInput, body []byte, received time.Time) error {
	err := st.AppendCapture(ctx, in.SessionID, store.ChannelHook, body, received)
	var deleted *store.DeletedError
	if err != nil && !errors.As(err, &deleted) {
		// The id is not named: it may not be a plain token.
		return fmt.Errorf("%s: %w", in.HookEventName, err)
	}
	return nil
}

// importHook imports the session's transcript, and ends the session on
// SessionEnd at the time the hook was called.
func importHook(ctx context.Context, st *store.Store, in hookInput, received time.Time) error {
	if !filepath.IsAbs(in.TranscriptPath) || !strings.HasSuffix(in.TranscriptPath, ".jsonl") {
		// The payload itself is not logged: it may hold the agent's text.
		return fmt.Errorf("%s: no session id or transcript path in the hook input", in.HookEventName)
	}
	if _, err := os.Stat(in.TranscriptPath); errors.Is(err, os.ErrNotExist) {
		return nil // a new session: nothing written yet
	}
	sum, err := capture.ImportClaudeSession(ctx, st, in.SessionID, in.TranscriptPath, false)
	if err != nil {
		return fmt.Errorf("%s %s: %w", in.HookEventName, in.SessionID, err)
	}
	var ended error
	if in.HookEventName == "SessionEnd" {
		ended = endSession(ctx, st, in.SessionID, received)
	}
	if len(sum.Problems) > 0 {
		return errors.Join(fmt.Errorf("%s %s: %s", in.HookEventName, in.SessionID, sum), ended)
	}
	return ended
}

// endSession sets the session's ended_at; a session not stored (its
// transcript had no records yet) or deleted is left alone.
func endSession(ctx context.Context, st *store.Store, sid string, at time.Time) error {
	_, err := st.EndSession(ctx, sid, at)
	var deleted *store.DeletedError
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.As(err, &deleted) {
		return nil
	}
	return fmt.Errorf("SessionEnd %s: %w", sid, err)
}

// logHook appends one line to hook.log beside the store, owner-only.
func logHook(dbPath string, problem error) {
	path := filepath.Join(filepath.Dir(dbPath), "hook.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxHookLog {
		os.Remove(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s service hook: %v\n", time.Now().UTC().Format(time.RFC3339), problem)
}
