package store

import (
	"context"
	"encoding/json"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// TelemetryRecord is one piece of an agent's telemetry kept for a session,
// such as one model request with its reported cost. The store keeps the
// body as given and never reads it.
type TelemetryRecord struct {
	Kind string
	Key  string // unique within Kind for the session
	Body json.RawMessage
	// Ord numbers the session's records in the order they first arrived,
	// from 1, and never reuses a number; a record written again keeps its
	// number. Set by the store.
	Ord int64
}

// AddTelemetry keeps records for a stored session in one transaction. A
// record with the kind and key of a kept one replaces its body. It reports
// whether any row changed; it returns ErrNotFound when the session is not
// stored and a *DeletedError when it was deleted. The session itself is not
// written, so no change event is sent: the writer applies what the
// telemetry changes in the session's records.
func (s *Store) AddTelemetry(ctx context.Context, sessionID string, recs []TelemetryRecord) (changed bool, err error) {
	err = s.write(ctx, func(conn *sqlite.Conn) error {
		if deleted, err := isDeleted(conn, sessionID); err != nil || deleted {
			if deleted {
				return &DeletedError{SessionID: sessionID}
			}
			return err
		}
		pk, err := sessionPK(conn, sessionID)
		if err != nil {
			return err
		}
		if pk == 0 {
			return ErrNotFound
		}
		for _, r := range recs {
			err := sqlitex.Execute(conn, `INSERT INTO telemetry (session_pk, kind, key, ord, body)
				VALUES (?1, ?2, ?3, (SELECT coalesce(max(ord), 0) + 1 FROM telemetry WHERE session_pk = ?1), ?4)
				ON CONFLICT (session_pk, kind, key) DO UPDATE SET body = excluded.body
				WHERE body IS NOT excluded.body`,
				&sqlitex.ExecOptions{Args: []any{pk, r.Kind, r.Key, string(r.Body)}})
			if err != nil {
				return err
			}
			changed = changed || conn.Changes() > 0
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: add telemetry of %s: %w", sessionID, err)
	}
	return changed, nil
}

// Telemetry returns the records kept for a session in arrival order; none
// for an unknown or deleted session.
func (s *Store) Telemetry(ctx context.Context, sessionID string) ([]TelemetryRecord, error) {
	var out []TelemetryRecord
	err := s.conn(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT t.kind, t.key, t.body, t.ord FROM telemetry t
			JOIN sessions s ON s.pk = t.session_pk WHERE s.id = ? ORDER BY t.ord`, &sqlitex.ExecOptions{
			Args: []any{sessionID},
			ResultFunc: func(st *sqlite.Stmt) error {
				out = append(out, TelemetryRecord{
					Kind: st.ColumnText(0), Key: st.ColumnText(1),
					Body: json.RawMessage(st.ColumnText(2)), Ord: st.ColumnInt64(3),
				})
				return nil
			},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: telemetry of %s: %w", sessionID, err)
	}
	return out, nil
}
