package opencode

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// dbUnits lists the sessions of a database, one unit each, in one read.
// Each unit's stamp is the newest update time and the number of its
// session's rows, so the import runner reads again only the sessions that
// changed, although they share one file.
func dbUnits(path string) ([]adapters.Unit, error) {
	conn, err := adapters.OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	paths := []string{path}
	var units []adapters.Unit
	err = sqlitex.Execute(conn, `SELECT s.id, max(s.time_updated, coalesce(m.t, 0), coalesce(p.t, 0)), 1 + coalesce(m.n, 0) + coalesce(p.n, 0)
		FROM session s
		LEFT JOIN (SELECT session_id, max(time_updated) AS t, count(*) AS n FROM message GROUP BY session_id) m ON m.session_id = s.id
		LEFT JOIN (SELECT session_id, max(time_updated) AS t, count(*) AS n FROM part GROUP BY session_id) p ON p.session_id = s.id
		ORDER BY s.id`, &sqlitex.ExecOptions{
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

// maxRow is the largest data column read: a larger row is reported and
// skipped, as a line longer than MaxLine is in a JSON Lines file.
const maxRow = adapters.MaxLine

// readDB reads one session from the database in one read transaction:
// its row, its messages and their parts. metrics are the session's cost
// and token columns (opencode 1.16 and later), nil when it has none.
func readDB(b *adapters.Builder, path, id string) (rec *record, metrics *store.Metrics) {
	conn, err := adapters.OpenSQLite(path)
	if err != nil {
		b.Problem(adapters.Problem{Path: path, Message: err.Error()})
		return nil, nil
	}
	defer conn.Close()
	err = readSession(conn, b, path, id, func(r *record, m *store.Metrics) { rec, metrics = r, m })
	if err != nil {
		b.Problem(adapters.Problem{Path: path, Message: fmt.Sprintf("session %s: %v", id, err)})
		return nil, nil
	}
	return rec, metrics
}

func readSession(conn *sqlite.Conn, b *adapters.Builder, path, id string, done func(*record, *store.Metrics)) (err error) {
	defer sqlitex.Save(conn)(&err) // one read transaction, ended at once
	// opencode adds and drops session columns between versions: a column
	// this opencode lacks reads as empty.
	cols := map[string]bool{}
	err = sqlitex.Execute(conn, `SELECT name FROM pragma_table_info('session')`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { cols[s.ColumnText(0)] = true; return nil },
	})
	if err != nil {
		return err
	}
	col := func(name, otherwise string) string {
		if cols[name] {
			return name
		}
		return otherwise
	}
	usage := `NULL, 0, 0, 0, 0, 0`
	if cols["cost"] && cols["tokens_input"] && cols["tokens_output"] && cols["tokens_reasoning"] && cols["tokens_cache_read"] && cols["tokens_cache_write"] {
		usage = `cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write`
	}
	rec := &record{}
	var metrics *store.Metrics
	found := false
	q := `SELECT id, ` + col("version", "''") + `, ` + col("project_id", "''") + `, ` + col("directory", "''") + `, ` +
		`coalesce(` + col("parent_id", "''") + `, ''), ` + col("title", "''") + `, ` + col("time_created", "0") + `, ` +
		col("time_updated", "0") + `, ` + usage + ` FROM session WHERE id = ?`
	err = sqlitex.Execute(conn, q, &sqlitex.ExecOptions{
		Args: []any{id},
		ResultFunc: func(s *sqlite.Stmt) error {
			found = true
			in := &rec.Info
			in.ID, in.Version, in.ProjectID, in.Directory, in.ParentID, in.Title = s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), s.ColumnText(3), s.ColumnText(4), s.ColumnText(5)
			in.Time.Created, in.Time.Updated = s.ColumnInt64(6), s.ColumnInt64(7)
			if s.ColumnType(8) != sqlite.TypeNull {
				metrics = &store.Metrics{CostUSD: s.ColumnFloat(8), Tokens: store.Tokens{
					Input: s.ColumnInt64(9), Output: s.ColumnInt64(10), CacheRead: s.ColumnInt64(12), CacheCreation: s.ColumnInt64(13)}}
			}
			return nil
		},
	})
	if err != nil || !found {
		return cmp.Or(err, errors.New("no such session"))
	}
	byID := map[string]int{}
	err = sqlitex.Execute(conn, `SELECT id, length(data), CASE WHEN length(data) <= ? THEN data END FROM message WHERE session_id = ? ORDER BY time_created, id`, &sqlitex.ExecOptions{
		Args: []any{maxRow, id},
		ResultFunc: func(s *sqlite.Stmt) error {
			mid := s.ColumnText(0)
			var m messageInfo
			if !rowJSON(b, path, "message", mid, s, &m) {
				return nil
			}
			m.ID = mid
			byID[mid] = len(rec.Messages)
			rec.Messages = append(rec.Messages, message{Info: m})
			return nil
		},
	})
	if err != nil {
		return err
	}
	err = sqlitex.Execute(conn, `SELECT id, length(data), CASE WHEN length(data) <= ? THEN data END, message_id FROM part WHERE session_id = ? ORDER BY message_id, id`, &sqlitex.ExecOptions{
		Args: []any{maxRow, id},
		ResultFunc: func(s *sqlite.Stmt) error {
			var p part
			if !rowJSON(b, path, "part", s.ColumnText(0), s, &p) {
				return nil
			}
			p.ID, p.MessageID = s.ColumnText(0), s.ColumnText(3)
			if i, ok := byID[p.MessageID]; ok {
				rec.Messages[i].Parts = append(rec.Messages[i].Parts, p)
			} else {
				b.Skip("part without its message")
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	sortRecord(rec)
	done(rec, metrics)
	return nil
}

// rowJSON decodes a row's data column (column 2, its length in column 1),
// reporting a row too large or not JSON.
func rowJSON(b *adapters.Builder, path, table, id string, s *sqlite.Stmt, v any) bool {
	if n := s.ColumnInt64(1); n > maxRow {
		b.Problem(rowProblem(path, table, id, fmt.Sprintf("data larger than %d MB: skipped", maxRow>>20)))
		return false
	}
	data := []byte(s.ColumnText(2))
	b.Read(len(data))
	if p := decode(path, data, v); p != nil {
		b.Problem(rowProblem(path, table, id, p.Message))
		return false
	}
	return true
}

// IsDatabase reports whether a file name is one of opencode's databases
// or their write-ahead log, and names the database. The -shm file is not
// one: every reader writes to it, a capture's own reads included.
func IsDatabase(path string) (db string, ok bool) {
	db = strings.TrimSuffix(path, "-wal")
	return db, isDBName(filepath.Base(db))
}

// IsStorageFile reports whether path is a JSON file of the 1.1 storage
// layout, and names its storage folder.
func IsStorageFile(path string) (storage string, ok bool) {
	if storageKind(path) == "" || !strings.HasSuffix(path, ".json") {
		return "", false
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(path))), true
}
