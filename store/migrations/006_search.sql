-- Full-text search over everything a step recorded and the session's
-- workspace (search.go, search_index.go). One row per step (rowid = the
-- step's pk) and one per session (rowid = minus the session's pk). The
-- default unicode61 tokenizer splits at every character that is not a
-- letter or digit, so a path, an identifier with _ or . and a command line
-- are found by their parts; the query side quotes each word as a phrase of
-- those parts (auth.go is "auth go"). secure-delete removes a deleted row's
-- terms from the index b-trees at once, so with secure_delete no segment
-- keeps them.
CREATE VIRTUAL TABLE search USING fts5(body, session_pk UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO search (search, rank) VALUES ('secure-delete', 1);

-- What a step row and a session row index: every string value of the
-- payload (command, path, tool name, tool input), the large text columns,
-- error and flags; a message's role marks it (user, assistant, thinking).
CREATE VIEW search_step_docs (rowid, session_pk, body) AS
SELECT pk, session_pk, concat_ws(char(10),
  (SELECT group_concat(value, ' ') FROM json_tree(payload) WHERE type = 'text'),
  role,
  text, stdout, stderr, old_string, new_string,
  (SELECT group_concat(value, ' ') FROM json_tree(error) WHERE type = 'text'),
  (SELECT group_concat(value, ' ') FROM json_tree(flags) WHERE type = 'text'))
FROM steps;

CREATE VIEW search_session_docs (rowid, session_pk, body) AS
SELECT -pk, pk, concat_ws(char(10), agent_kind, workspace_root, workspace_repo) FROM sessions;

-- Every writer goes through these: the index changes in the write's own
-- transaction, and a session's delete cascades to its steps' rows.
CREATE TRIGGER search_step_insert AFTER INSERT ON steps BEGIN
  INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_step_docs WHERE rowid = NEW.pk;
END;
CREATE TRIGGER search_step_update AFTER UPDATE ON steps BEGIN
  DELETE FROM search WHERE rowid = OLD.pk;
  INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_step_docs WHERE rowid = NEW.pk;
END;
CREATE TRIGGER search_step_delete AFTER DELETE ON steps BEGIN
  DELETE FROM search WHERE rowid = OLD.pk;
END;
CREATE TRIGGER search_session_insert AFTER INSERT ON sessions BEGIN
  INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_session_docs WHERE rowid = -NEW.pk;
END;
CREATE TRIGGER search_session_update AFTER UPDATE OF agent_kind, workspace_root, workspace_repo ON sessions BEGIN
  DELETE FROM search WHERE rowid = -OLD.pk;
  INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_session_docs WHERE rowid = -NEW.pk;
END;
CREATE TRIGGER search_session_delete AFTER DELETE ON sessions BEGIN
  DELETE FROM search WHERE rowid = -OLD.pk;
END;

-- Existing stores: build the index from what is stored.
INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_session_docs;
INSERT INTO search (rowid, session_pk, body) SELECT rowid, session_pk, body FROM search_step_docs;
