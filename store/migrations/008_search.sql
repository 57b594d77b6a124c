-- The search index without its own copy of the text (issue 13's size
-- target): a contentless FTS5 table (content = '') keeps only the index
-- b-trees, 1.67x of the indexed text became about 0.6x. Snippets are made
-- from the steps' own columns (search.go). The views of 006 stay what a
-- row indexes: removing a row from a contentless index takes the very text
-- it was indexed with ('delete' command), and with the secure-delete option
-- FTS5 then removes its terms from the segment b-trees at once. A
-- contentless_delete table would only mark the row deleted and keep its
-- terms until a merge, secure-delete or not (TestDeleteOverwrites and
-- TestIndexForgetsReplacedText fail with it).
-- The secure-delete option is on only while a catch-up or Delete removes
-- rows (search_index.go): on, it made every flush of new rows 70% slower
-- (CPU profile of an import).
DROP TABLE search;
CREATE VIRTUAL TABLE search USING fts5(body, content = '', tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO search (search, rank) VALUES ('hashsize', 16777216);

-- The text a row was indexed with, kept from the moment a write changes or
-- deletes it until the next catch-up (or Delete) removes it from the index
-- (search_index.go). A row is in the index when search_docsize holds its
-- rowid. Triggers, one plain insert for each indexed row a write changes:
-- every writer keeps the index right without knowing of it.
CREATE TABLE search_stale (rid INTEGER PRIMARY KEY, body TEXT NOT NULL);

CREATE TRIGGER search_step_changes BEFORE UPDATE OF payload, role, text, stdout, stderr, old_string, new_string, error, flags ON steps
WHEN (old.payload, old.role, old.text, old.stdout, old.stderr, old.old_string, old.new_string, old.error, old.flags)
  IS NOT (new.payload, new.role, new.text, new.stdout, new.stderr, new.old_string, new.new_string, new.error, new.flags)
  AND EXISTS (SELECT 1 FROM search_docsize WHERE id = old.pk)
BEGIN
  INSERT OR IGNORE INTO search_stale (rid, body) SELECT step_pk, body FROM search_step_docs WHERE step_pk = old.pk;
END;

CREATE TRIGGER search_step_goes BEFORE DELETE ON steps
WHEN EXISTS (SELECT 1 FROM search_docsize WHERE id = old.pk)
BEGIN
  INSERT OR IGNORE INTO search_stale (rid, body) SELECT step_pk, body FROM search_step_docs WHERE step_pk = old.pk;
END;

CREATE TRIGGER search_session_changes BEFORE UPDATE OF agent_kind, workspace_root, workspace_repo ON sessions
WHEN (old.agent_kind, old.workspace_root, old.workspace_repo) IS NOT (new.agent_kind, new.workspace_root, new.workspace_repo)
  AND EXISTS (SELECT 1 FROM search_docsize WHERE id = -old.pk)
BEGIN
  INSERT OR IGNORE INTO search_stale (rid, body) SELECT -session_pk, body FROM search_session_docs WHERE session_pk = old.pk;
END;

CREATE TRIGGER search_session_goes BEFORE DELETE ON sessions
WHEN EXISTS (SELECT 1 FROM search_docsize WHERE id = -old.pk)
BEGIN
  INSERT OR IGNORE INTO search_stale (rid, body) SELECT -session_pk, body FROM search_session_docs WHERE session_pk = old.pk;
END;

-- Where each session's steps sit among the index rows: the smallest and
-- largest pk of its steps. A search walks the sessions newest first and
-- reads only the index rows in their spans, so a common word costs a page,
-- not every hit (search.go, wordPage). The catch-up widens a changed
-- session's span; a step keeps its pk, so a span never narrows.
CREATE TABLE search_spans (
  session_pk INTEGER PRIMARY KEY REFERENCES sessions (pk) ON DELETE CASCADE,
  lo         INTEGER NOT NULL,
  hi         INTEGER NOT NULL
);

-- Existing stores: build the index again from what is stored.
INSERT INTO search_spans (session_pk, lo, hi) SELECT session_pk, min(pk), max(pk) FROM steps GROUP BY session_pk;
INSERT INTO search (rowid, body) SELECT -session_pk, body FROM search_session_docs;
INSERT INTO search (rowid, body) SELECT step_pk, body FROM search_step_docs;
UPDATE search_state SET indexed_through = coalesce((SELECT max(updated_at) FROM sessions), 0);
