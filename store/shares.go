package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Share is what the service remembers of sharing one session with one team
// server (`service share`): how far the target is up to date, the share
// under way, and what redaction masked in what was sent. It holds none of
// the session's text.
type Share struct {
	SessionID string
	Target    string // the team server's base URL
	// Stamp: every change of the session up to this change stamp is on the
	// target (0: nothing was shared yet).
	Stamp int64
	// Pending is the session's change stamp when the share under way began
	// (0: none is under way); PendingSeqs are the seqs of its steps the
	// target accepted so far, so a share cut off resumes where it stopped.
	Pending     int64
	PendingSeqs []int64
	Steps       int64     // steps the target accepted, over every share
	SharedAt    time.Time // when the target last accepted a batch; zero if never
	// Gone records that the target answered 410: the session was deleted
	// there, and is never shared with it again.
	Gone     bool
	Manifest []ShareFinding // what was masked in what was sent
}

// ShareFinding is one distinct value redaction masked in what was shared:
// the rule that matched, the placeholder the target shows, and the places
// it was seen ("step 12 payload.stdout", "session.workspace.root"). Never
// the value.
type ShareFinding struct {
	Rule        string   `json:"rule"`
	Confidence  string   `json:"confidence"`
	Placeholder string   `json:"placeholder"`
	Where       []string `json:"where"`
}

// ShareRule is `service share --workspace DIR --to URL --auto`: every
// session of the workspace is shared with the target on each later run.
type ShareRule struct {
	Workspace string
	Target    string
	TokenFile string // where the team token is read from
}

// SessionChanges is what of a session was written after a change stamp.
type SessionChanges struct {
	Stamp int64    // the session's change stamp now
	Seqs  []int64  // the steps written after it, in seq order
	Turns []string // the turns written after it
}

const shareColumns = `session_id, target, stamp, pending, pending_seqs, steps, shared_at, gone, manifest`

// Share returns what was shared of session id with target; a Share with
// only the two keys set when nothing was.
func (s *Store) Share(ctx context.Context, id, target string) (Share, error) {
	sh := Share{SessionID: id, Target: target}
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT `+shareColumns+` FROM shares WHERE session_id = ? AND target = ?`, &sqlitex.ExecOptions{
			Args:       []any{id, target},
			ResultFunc: func(st *sqlite.Stmt) (err error) { sh, err = scanShare(st); return err },
		})
	})
	if err != nil {
		return Share{}, fmt.Errorf("store: share of %s with %s: %w", id, target, err)
	}
	return sh, nil
}

// Shares returns every team server session id was shared with.
func (s *Store) Shares(ctx context.Context, id string) ([]Share, error) {
	var out []Share
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT `+shareColumns+` FROM shares WHERE session_id = ? ORDER BY target`, &sqlitex.ExecOptions{
			Args: []any{id},
			ResultFunc: func(st *sqlite.Stmt) error {
				sh, err := scanShare(st)
				out = append(out, sh)
				return err
			},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: shares of %s: %w", id, err)
	}
	return out, nil
}

func scanShare(st *sqlite.Stmt) (Share, error) {
	sh := Share{
		SessionID: st.ColumnText(0), Target: st.ColumnText(1), Stamp: st.ColumnInt64(2),
		Pending: st.ColumnInt64(3), Steps: st.ColumnInt64(5), Gone: st.ColumnBool(7),
	}
	if !st.ColumnIsNull(6) {
		sh.SharedAt = time.UnixMicro(st.ColumnInt64(6)).UTC()
	}
	if err := json.Unmarshal([]byte(st.ColumnText(4)), &sh.PendingSeqs); err != nil {
		return sh, fmt.Errorf("pending_seqs: %w", err)
	}
	if err := json.Unmarshal([]byte(st.ColumnText(8)), &sh.Manifest); err != nil {
		return sh, fmt.Errorf("manifest: %w", err)
	}
	return sh, nil
}

// SaveShare records sh in one transaction. It never touches the session,
// so it moves no change stamp and sends no change event.
func (s *Store) SaveShare(ctx context.Context, sh Share) error {
	seqs, err := json.Marshal(nonNil(sh.PendingSeqs))
	if err != nil {
		return fmt.Errorf("store: save share: %w", err)
	}
	manifest, err := json.Marshal(nonNil(sh.Manifest))
	if err != nil {
		return fmt.Errorf("store: save share: %w", err)
	}
	var at any
	if !sh.SharedAt.IsZero() {
		at = sh.SharedAt.UnixMicro()
	}
	err = s.write(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `INSERT INTO shares (`+shareColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id, target) DO UPDATE SET stamp = excluded.stamp, pending = excluded.pending,
			  pending_seqs = excluded.pending_seqs, steps = excluded.steps, shared_at = excluded.shared_at,
			  gone = excluded.gone, manifest = excluded.manifest`, &sqlitex.ExecOptions{
			Args: []any{sh.SessionID, sh.Target, sh.Stamp, sh.Pending, string(seqs), sh.Steps, at, sh.Gone, string(manifest)},
		})
	})
	if err != nil {
		return fmt.Errorf("store: save share of %s with %s: %w", sh.SessionID, sh.Target, err)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// AddShareRule records a sharing rule, or updates the token file of the
// rule of the same workspace and target.
func (s *Store) AddShareRule(ctx context.Context, r ShareRule) error {
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `INSERT INTO share_rules (workspace, target, token_file) VALUES (?, ?, ?)
			ON CONFLICT (workspace, target) DO UPDATE SET token_file = excluded.token_file`, &sqlitex.ExecOptions{
			Args: []any{r.Workspace, r.Target, r.TokenFile},
		})
	})
	if err != nil {
		return fmt.Errorf("store: add share rule %s -> %s: %w", r.Workspace, r.Target, err)
	}
	return nil
}

// ShareRules returns every sharing rule, by workspace then target.
func (s *Store) ShareRules(ctx context.Context) ([]ShareRule, error) {
	var out []ShareRule
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT workspace, target, token_file FROM share_rules ORDER BY workspace, target`, &sqlitex.ExecOptions{
			ResultFunc: func(st *sqlite.Stmt) error {
				out = append(out, ShareRule{Workspace: st.ColumnText(0), Target: st.ColumnText(1), TokenFile: st.ColumnText(2)})
				return nil
			},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: share rules: %w", err)
	}
	return out, nil
}

// WorkspaceSessions returns the ids of the sessions whose workspace root
// is exactly root, oldest first.
func (s *Store) WorkspaceSessions(ctx context.Context, root string) ([]string, error) {
	var out []string
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT id FROM sessions WHERE workspace_root = ? ORDER BY started_ns, id`, &sqlitex.ExecOptions{
			Args:       []any{root},
			ResultFunc: func(st *sqlite.Stmt) error { out = append(out, st.ColumnText(0)); return nil },
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: sessions of workspace %s: %w", root, err)
	}
	return out, nil
}

// ChangesOf returns what of session id was written after change stamp
// since, read in one transaction; ErrNotFound for an unknown or deleted id.
func (s *Store) ChangesOf(ctx context.Context, id string, since int64) (SessionChanges, error) {
	c := SessionChanges{Seqs: []int64{}, Turns: []string{}}
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		var pk int64
		err := sqlitex.Execute(conn, `SELECT pk, updated_at FROM sessions WHERE id = ?`, &sqlitex.ExecOptions{
			Args:       []any{id},
			ResultFunc: func(st *sqlite.Stmt) error { pk, c.Stamp = st.ColumnInt64(0), st.ColumnInt64(1); return nil },
		})
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		err = sqlitex.Execute(conn, `SELECT seq FROM steps WHERE session_pk = ? AND updated_at > ? ORDER BY seq`, &sqlitex.ExecOptions{
			Args:       []any{pk, since},
			ResultFunc: func(st *sqlite.Stmt) error { c.Seqs = append(c.Seqs, st.ColumnInt64(0)); return nil },
		})
		if err != nil {
			return err
		}
		return sqlitex.Execute(conn, `SELECT id FROM turns WHERE session_pk = ? AND updated_at > ? ORDER BY idx, id`, &sqlitex.ExecOptions{
			Args:       []any{pk, since},
			ResultFunc: func(st *sqlite.Stmt) error { c.Turns = append(c.Turns, st.ColumnText(0)); return nil },
		})
	})
	if err != nil {
		return SessionChanges{}, fmt.Errorf("store: changes of %s: %w", id, err)
	}
	return c, nil
}
