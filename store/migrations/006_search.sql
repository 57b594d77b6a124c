-- Full-text search over everything a step recorded and the session's
-- agent and workspace (search.go): one row per step (rowid = the step's
-- pk) and one per session (rowid = minus the session's pk). The store
-- indexes what writes stamped after search_state.indexed_through in the
-- background, a few statements per catch-up (search_index.go); Delete
-- removes the session's rows in its own transaction. Not triggers: FTS5
-- flushes a segment at every statement savepoint, so a trigger per step
-- made a 5,000-step push 7 times slower.
-- The default unicode61 tokenizer splits at every character that is not a
-- letter or digit, so a path, an identifier with _ or . and a command line
-- are found by their parts; the query side quotes each word as a phrase of
-- those parts (auth.go is "auth go"). secure-delete removes a deleted
-- row's terms from the index b-trees at once, so with secure_delete no
-- segment keeps them.
CREATE VIRTUAL TABLE search USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO search (search, rank) VALUES ('secure-delete', 1);
-- One in-memory segment up to 16 MB before FTS5 writes it out (default 1
-- MB): a 5,000-step push (6.5 MB of text) becomes one segment, not seven,
-- which halves the merging a catch-up does (CPU profile of
-- BenchmarkIndexLag5000).
INSERT INTO search (search, rank) VALUES ('hashsize', 16777216);

-- What a step row and a session row index: every string value of the
-- payload (command, path, tool name, tool input), the large text columns,
-- error and flags; a message's role marks it (user, assistant, thinking).
CREATE VIEW search_step_docs (step_pk, session_pk, body) AS
SELECT pk, session_pk, concat_ws(char(10),
  -- JSON deeper than SQLite's limit (1,000) is indexed as it is written.
  CASE WHEN json_valid(payload) THEN (SELECT group_concat(value, ' ') FROM json_tree(payload) WHERE type = 'text') ELSE payload END,
  role,
  text, stdout, stderr, old_string, new_string,
  (SELECT group_concat(value, ' ') FROM json_tree(error) WHERE type = 'text'),
  (SELECT group_concat(value, ' ') FROM json_tree(flags) WHERE type = 'text'))
FROM steps;

CREATE VIEW search_session_docs (session_pk, body) AS
SELECT pk, concat_ws(char(10), agent_kind, workspace_root, workspace_repo) FROM sessions;

-- The newest change stamp (sessions.updated_at) the index holds: the store
-- indexes what was stamped after it in the background (search_index.go).
CREATE TABLE search_state (indexed_through INTEGER NOT NULL);

-- Existing stores: build the index from what is stored.
INSERT INTO search (rowid, body) SELECT -session_pk, body FROM search_session_docs;
INSERT INTO search (rowid, body) SELECT step_pk, body FROM search_step_docs;
INSERT INTO search_state (indexed_through) SELECT coalesce(max(updated_at), 0) FROM sessions;
