package store

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// ImportedFile is an agent file as the import command last read it. Size
// and ModTime (unix nanoseconds) tell whether it changed since.
type ImportedFile struct {
	Path    string
	Size    int64
	ModTime int64
}

// ImportedFiles returns the files recorded for an agent kind, by path.
func (s *Store) ImportedFiles(ctx context.Context, agentKind string) (map[string]ImportedFile, error) {
	out := map[string]ImportedFile{}
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT path, size, mtime_ns FROM import_files WHERE agent_kind = ?`, &sqlitex.ExecOptions{
			Args: []any{agentKind},
			ResultFunc: func(st *sqlite.Stmt) error {
				f := ImportedFile{Path: st.ColumnText(0), Size: st.ColumnInt64(1), ModTime: st.ColumnInt64(2)}
				out[f.Path] = f
				return nil
			},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: imported files: %w", err)
	}
	return out, nil
}

// WorkspaceRoots are the workspace roots of the stored sessions, of any
// agent, each once, the one of the latest started session first, at most
// n: the folders where agents ran.
func (s *Store) WorkspaceRoots(ctx context.Context, n int) ([]string, error) {
	var out []string
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT workspace_root FROM sessions
			GROUP BY workspace_root ORDER BY max(started_ns) DESC, workspace_root LIMIT ?`, &sqlitex.ExecOptions{
			Args:       []any{n},
			ResultFunc: func(st *sqlite.Stmt) error { out = append(out, st.ColumnText(0)); return nil },
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: workspace roots: %w", err)
	}
	return out, nil
}

// RecordImportedFiles remembers files as read for an agent kind, in one
// transaction. It never touches sessions, so it sends no change event.
func (s *Store) RecordImportedFiles(ctx context.Context, agentKind string, files []ImportedFile) error {
	if len(files) == 0 {
		return nil
	}
	err := s.write(ctx, func(conn *sqlite.Conn) error {
		return recordImportedFiles(conn, agentKind, files)
	})
	if err != nil {
		return fmt.Errorf("store: record imported files: %w", err)
	}
	return nil
}

func recordImportedFiles(conn *sqlite.Conn, agentKind string, files []ImportedFile) error {
	for _, f := range files {
		err := sqlitex.Execute(conn, `INSERT INTO import_files (path, agent_kind, size, mtime_ns) VALUES (?, ?, ?, ?)
			ON CONFLICT (path) DO UPDATE SET agent_kind = excluded.agent_kind, size = excluded.size, mtime_ns = excluded.mtime_ns`,
			&sqlitex.ExecOptions{Args: []any{f.Path, agentKind, f.Size, f.ModTime}})
		if err != nil {
			return err
		}
	}
	return nil
}

// StepSeqs returns the seq of every stored step of a session, by step id;
// empty for an unknown session. An importer uses it to keep the seqs it
// wrote before when the agent's files are read again.
func (s *Store) StepSeqs(ctx context.Context, sessionID string) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT st.id, st.seq FROM steps st JOIN sessions s ON s.pk = st.session_pk WHERE s.id = ?`,
			&sqlitex.ExecOptions{
				Args:       []any{sessionID},
				ResultFunc: func(st *sqlite.Stmt) error { out[st.ColumnText(0)] = st.ColumnInt64(1); return nil },
			})
	})
	if err != nil {
		return nil, fmt.Errorf("store: step seqs of %s: %w", sessionID, err)
	}
	return out, nil
}
