package crush

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// tree is the ids of a session and of every session under it (its
// subagents' and its title's), as a CTE named tree(id). UNION, not UNION
// ALL: a cycle of parents ends.
const tree = `WITH RECURSIVE tree(id) AS (
	SELECT ?1
	UNION
	SELECT s.id FROM sessions s JOIN tree ON s.parent_session_id = tree.id)`

// dbUnits lists the sessions of a database that have no parent (or a
// parent it no longer holds), one unit each, in one read. Each unit's
// stamp is the newest update time of its session tree and a size that
// grows with its messages, so the import runner reads again only the
// sessions that changed, although they share one file.
func dbUnits(path string) ([]adapters.Unit, error) {
	conn, err := adapters.OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	paths := []string{path}
	var units []adapters.Unit
	err = sqlitex.Execute(conn, `WITH RECURSIVE tree(root, id) AS (
			SELECT id, id FROM sessions
			WHERE coalesce(parent_session_id, '') = '' OR parent_session_id NOT IN (SELECT id FROM sessions)
			UNION
			SELECT tree.root, s.id FROM sessions s JOIN tree ON s.parent_session_id = tree.id)
		SELECT t.root, max(s.updated_at, coalesce(m.t, 0)), count(*) + sum(coalesce(m.n, 0))
		FROM tree t JOIN sessions s ON s.id = t.id
		LEFT JOIN (SELECT session_id, max(updated_at) AS t, count(*) + sum(length(parts)) AS n FROM messages GROUP BY session_id) m ON m.session_id = t.id
		GROUP BY t.root ORDER BY t.root`, &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			id := stmt.ColumnText(0)
			units = append(units, adapters.Unit{ID: id, Paths: paths, Stamps: []store.ImportedFile{
				{Path: path + "#" + id, ModTime: stmt.ColumnInt64(1), Size: stmt.ColumnInt64(2)}}})
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return units, nil
}

// sessionRow is a row of the sessions table.
type sessionRow struct {
	ID, ParentID, Title string
	SummaryID           string // the message that summarises what came before it
	Cost                float64
	Created, Updated    int64
}

// messageRow is a row of the messages table, its parts decoded.
type messageRow struct {
	ID, SessionID, Role, Model, Provider string
	Created, Finished                    int64
	Summary                              bool // Crush's summary of the session so far
	Parts                                []part
}

// part is one element of a message's parts: {type, data}, data holding
// the fields of its type (Crush's internal/message).
type part struct {
	Type string   `json:"type"`
	Data partData `json:"data"`
}

type partData struct {
	Text     string `json:"text"`     // text
	Thinking string `json:"thinking"` // reasoning

	ID       string `json:"id"` // tool_call
	Name     string `json:"name"`
	Input    string `json:"input"` // JSON text
	Finished bool   `json:"finished"`

	ToolCallID string `json:"tool_call_id"` // tool_result
	Content    string `json:"content"`
	Metadata   string `json:"metadata"` // JSON text
	IsError    bool   `json:"is_error"`

	Reason  string `json:"reason"` // finish
	Time    int64  `json:"time"`
	Message string `json:"message"`
	Details string `json:"details"`

	Path     string `json:"path"` // binary: an attached file
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
	URL      string `json:"url"` // image_url

	Command  string `json:"command"` // shell_command: a command the user ran (! mode)
	Output   string `json:"output"`
	ExitCode *int64 `json:"exit_code"`
}

// record is a session as read: its row and its descendants' rows by id
// (their messages go to the parser one by one as they are read, readDB).
type record struct {
	Session  sessionRow
	Children map[string]sessionRow
	Schema   string // the newest migration applied (goose), "" when unknown
}

// maxRow is the largest parts column read: a larger row is reported and
// skipped, as a line longer than MaxLine is in a JSON Lines file.
const maxRow = adapters.MaxLine

// readDB reads one session and its descendants in one read transaction:
// their rows, then each message, in the order Crush wrote them, handed to
// each as it is read, so no more than one message is held. When the read
// fails it returns the problem; each may have seen some messages then.
func readDB(b *adapters.Builder, path, id string, each func(*record, *messageRow)) (*record, *adapters.Problem) {
	conn, err := adapters.OpenSQLite(path)
	if err != nil {
		return nil, &adapters.Problem{Path: path, Message: err.Error()}
	}
	defer conn.Close()
	rec, err := readSession(conn, b, path, id, each)
	if err != nil {
		return nil, &adapters.Problem{Path: path, Message: fmt.Sprintf("session %s: %v", id, err)}
	}
	return rec, nil
}

func readSession(conn *sqlite.Conn, b *adapters.Builder, path, id string, each func(*record, *messageRow)) (rec *record, err error) {
	defer sqlitex.Save(conn)(&err) // one read transaction, ended at once
	// Crush adds columns between versions: a column this one lacks reads
	// as empty.
	cols := map[string]bool{}
	err = sqlitex.Execute(conn, `SELECT 'messages.' || name FROM pragma_table_info('messages') UNION ALL SELECT 'sessions.' || name FROM pragma_table_info('sessions')`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { cols[s.ColumnText(0)] = true; return nil },
	})
	if err != nil {
		return nil, err
	}
	col := func(table, name, otherwise string) string {
		if cols[table+"."+name] {
			return name
		}
		return otherwise
	}
	rec = &record{Children: map[string]sessionRow{}}
	found := false
	err = sqlitex.Execute(conn, tree+` SELECT s.id, coalesce(`+col("sessions", "parent_session_id", "''")+`, ''), `+col("sessions", "title", "''")+`,
		`+col("sessions", "cost", "0")+`, `+col("sessions", "created_at", "0")+`, `+col("sessions", "updated_at", "0")+`,
		coalesce(`+col("sessions", "summary_message_id", "''")+`, '')
		FROM sessions s JOIN tree USING (id)`, &sqlitex.ExecOptions{
		Args: []any{id},
		ResultFunc: func(s *sqlite.Stmt) error {
			row := sessionRow{ID: s.ColumnText(0), ParentID: s.ColumnText(1), Title: s.ColumnText(2),
				Cost: s.ColumnFloat(3), Created: s.ColumnInt64(4), Updated: s.ColumnInt64(5), SummaryID: s.ColumnText(6)}
			if row.ID == id {
				found, rec.Session = true, row
			} else {
				rec.Children[row.ID] = row
			}
			return nil
		},
	})
	if err != nil || !found {
		return nil, cmp.Or(err, errors.New("no such session"))
	}
	// The newest migration goose applied names the layout the file has.
	// A database without goose's table is read as it is.
	_ = sqlitex.Execute(conn, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error {
			if s.ColumnType(0) != sqlite.TypeNull {
				rec.Schema = s.ColumnText(0)
			}
			return nil
		},
	})
	err = sqlitex.Execute(conn, tree+` SELECT m.id, m.session_id, m.role, coalesce(`+col("messages", "model", "''")+`, ''),
		coalesce(`+col("messages", "provider", "''")+`, ''), m.created_at, coalesce(`+col("messages", "finished_at", "0")+`, 0),
		length(m.parts), CASE WHEN length(m.parts) <= ?2 THEN m.parts END, coalesce(`+col("messages", "is_summary_message", "0")+`, 0)
		FROM messages m JOIN tree ON m.session_id = tree.id ORDER BY m.created_at, m.rowid`, &sqlitex.ExecOptions{
		Args: []any{id, maxRow},
		ResultFunc: func(s *sqlite.Stmt) error {
			m := messageRow{ID: s.ColumnText(0), SessionID: s.ColumnText(1), Role: s.ColumnText(2), Model: s.ColumnText(3),
				Provider: s.ColumnText(4), Created: s.ColumnInt64(5), Finished: s.ColumnInt64(6), Summary: s.ColumnInt64(9) != 0}
			if n := s.ColumnInt64(7); n > maxRow {
				b.Problem(rowProblem(path, m.ID, fmt.Sprintf("parts larger than %d MB: skipped", maxRow>>20)))
				return nil
			}
			parts := []byte(s.ColumnText(8))
			if err := json.Unmarshal(parts, &m.Parts); err != nil {
				b.Problem(rowProblem(path, m.ID, "parts are not a JSON array of parts: "+err.Error()))
				return nil
			}
			b.Read(len(parts))
			each(rec, &m)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// rowProblem names a message row that could not be read.
func rowProblem(path, id, msg string) adapters.Problem {
	return adapters.Problem{Path: path, Message: fmt.Sprintf("message %s: %s", id, msg)}
}
