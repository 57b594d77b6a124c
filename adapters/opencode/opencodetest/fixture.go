// Package opencodetest makes opencode databases for tests: hand-made from
// real records of the 1.1 storage layout, with opencode's own schema.
package opencodetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// schema is the part of opencode's database the adapter reads, as
// packages/opencode/src/session/session.sql.ts declares it (1.2); usage
// adds the session's cost and token columns of the session_usage
// migration (1.16).
const (
	schema = `
CREATE TABLE project (id text PRIMARY KEY);
CREATE TABLE session (
	id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
	parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
	share_url text, summary_additions integer, summary_deletions integer, summary_files integer, summary_diffs text,
	revert text, permission text, time_created integer NOT NULL, time_updated integer NOT NULL,
	time_compacting integer, time_archived integer);
CREATE TABLE message (
	id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
	time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (
	id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
	session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_session_idx ON part (session_id);`
	usageColumns = `
ALTER TABLE session ADD cost real DEFAULT 0 NOT NULL;
ALTER TABLE session ADD tokens_input integer DEFAULT 0 NOT NULL;
ALTER TABLE session ADD tokens_output integer DEFAULT 0 NOT NULL;
ALTER TABLE session ADD tokens_reasoning integer DEFAULT 0 NOT NULL;
ALTER TABLE session ADD tokens_cache_read integer DEFAULT 0 NOT NULL;
ALTER TABLE session ADD tokens_cache_write integer DEFAULT 0 NOT NULL;`
)

// FixtureCost is the session cost the 1.16 fixture reports; the samples
// (a subscription) report 0 on every message.
const FixtureCost = 0.4321

// MustDB writes dir/opencode.db in WAL mode, as opencode 1.2 (usage
// false) or 1.16 (usage true) would hold the sessions of the storage
// folder: a hand-made fixture of the real records, see testdata/SOURCES.md.
// With usage the session columns hold the sums of its messages, as
// opencode's migration fills them, and FixtureCost.
func MustDB(t testing.TB, storage, dir string, usage bool) string {
	t.Helper()
	path := filepath.Join(dir, "opencode.db")
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ddl := schema
	if usage {
		ddl += usageColumns
	}
	if err := sqlitex.ExecuteScript(conn, ddl, nil); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if err := sqlitex.Execute(conn, q, &sqlitex.ExecOptions{Args: args}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sessions, _ := filepath.Glob(filepath.Join(storage, "session", "*", "*.json"))
	for _, sf := range sessions {
		var s struct {
			ID, ProjectID, Directory, Title, Version string
			Time                                     struct{ Created, Updated int64 }
		}
		MustJSON(t, sf, &s)
		exec(`INSERT OR IGNORE INTO project (id) VALUES (?)`, s.ProjectID)
		exec(`INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.ProjectID, "slug", s.Directory, s.Title, s.Version, s.Time.Created, s.Time.Updated)
		msgs, _ := filepath.Glob(filepath.Join(storage, "message", s.ID, "*.json"))
		for _, mf := range msgs {
			var m map[string]any
			MustJSON(t, mf, &m)
			id := m["id"].(string)
			created := int64(m["time"].(map[string]any)["created"].(float64))
			delete(m, "id")
			delete(m, "sessionID")
			data, _ := json.Marshal(m)
			exec(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`, id, s.ID, created, created, string(data))
			parts, _ := filepath.Glob(filepath.Join(storage, "part", id, "*.json"))
			for _, pf := range parts {
				var p map[string]any
				MustJSON(t, pf, &p)
				pid := p["id"].(string)
				for _, k := range []string{"id", "sessionID", "messageID"} {
					delete(p, k)
				}
				data, _ := json.Marshal(p)
				exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`, pid, id, s.ID, created, created, string(data))
			}
		}
		if usage {
			exec(`UPDATE session SET cost = ?,
				tokens_input = (SELECT sum(json_extract(data, '$.tokens.input')) FROM message WHERE session_id = session.id),
				tokens_output = (SELECT sum(json_extract(data, '$.tokens.output')) FROM message WHERE session_id = session.id),
				tokens_reasoning = (SELECT sum(json_extract(data, '$.tokens.reasoning')) FROM message WHERE session_id = session.id),
				tokens_cache_read = (SELECT sum(json_extract(data, '$.tokens.cache.read')) FROM message WHERE session_id = session.id),
				tokens_cache_write = (SELECT sum(json_extract(data, '$.tokens.cache.write')) FROM message WHERE session_id = session.id)
				WHERE id = ?`, FixtureCost, s.ID)
		}
	}
	return path
}

// MustJSON decodes the JSON file at path into v.
func MustJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
