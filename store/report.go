package store

import (
	"encoding/json"
	"fmt"
	"slices"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Report is what a reviewer reads first: the files the session touched and
// the commands it ran.
type Report struct {
	Files    []FileTouched `json:"files"`
	Commands []CommandRun  `json:"commands"`
}

// FileTouched counts the edit and read steps on one path. A full write of
// a path as the first step that touches it counts as created.
type FileTouched struct {
	Path    string `json:"path"`
	Created int    `json:"created"`
	Edited  int    `json:"edited"`
	Read    int    `json:"read"`
	Failed  int    `json:"failed"` // of those steps, how many failed
}

// CommandRun groups the runs of one distinct command line. A reference-only
// command whose text was never recorded groups under the empty command.
type CommandRun struct {
	Command         string  `json:"command"`
	Runs            int     `json:"runs"`
	Failed          int     `json:"failed"`
	ExitCodes       []int64 `json:"exit_codes"` // distinct codes seen, ascending
	OutputNotInline bool    `json:"output_not_inline"`
}

// readReport computes the report in SQL, from the small payload JSON only,
// so it costs little even for a session of many steps. Files and commands
// come in order of first appearance.
func readReport(conn *sqlite.Conn, pk int64) (Report, error) {
	r := Report{Files: []FileTouched{}, Commands: []CommandRun{}}
	err := sqlitex.Execute(conn, `WITH t AS (
		  SELECT seq, type, outcome = 'failed' AS failed, json_extract(payload, '$.path') AS path,
		    coalesce(json_extract(payload, '$.is_full_write'), 0) AS full
		  FROM steps WHERE session_pk = ? AND type IN ('edit', 'read')),
		first AS (SELECT path, min(seq) AS seq FROM t GROUP BY path)
		SELECT t.path,
		  sum(t.type = 'edit' AND t.full AND t.seq = first.seq),
		  sum(t.type = 'edit' AND NOT (t.full AND t.seq = first.seq)),
		  sum(t.type = 'read'), sum(t.failed)
		FROM t JOIN first USING (path) GROUP BY t.path ORDER BY first.seq`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			r.Files = append(r.Files, FileTouched{Path: st.ColumnText(0), Created: st.ColumnInt(1), Edited: st.ColumnInt(2), Read: st.ColumnInt(3), Failed: st.ColumnInt(4)})
			return nil
		},
	})
	if err != nil {
		return r, fmt.Errorf("files touched: %w", err)
	}
	err = sqlitex.Execute(conn, `SELECT coalesce(json_extract(payload, '$.command'), '') AS command, min(seq),
		  count(*), sum(outcome = 'failed'),
		  json_group_array(DISTINCT json_extract(payload, '$.exit_code')) FILTER (WHERE json_extract(payload, '$.exit_code') IS NOT NULL),
		  max(content_status = 'reference_only' OR json_extract(payload, '$.output_ref') IS NOT NULL)
		FROM steps WHERE session_pk = ? AND type = 'command' GROUP BY 1 ORDER BY 2`, &sqlitex.ExecOptions{
		Args: []any{pk},
		ResultFunc: func(st *sqlite.Stmt) error {
			c := CommandRun{Command: st.ColumnText(0), Runs: st.ColumnInt(2), Failed: st.ColumnInt(3), OutputNotInline: st.ColumnBool(5), ExitCodes: []int64{}}
			if !st.ColumnIsNull(4) {
				if err := json.Unmarshal([]byte(st.ColumnText(4)), &c.ExitCodes); err != nil {
					return err
				}
			}
			slices.Sort(c.ExitCodes)
			r.Commands = append(r.Commands, c)
			return nil
		},
	})
	if err != nil {
		return r, fmt.Errorf("commands run: %w", err)
	}
	return r, nil
}
