-- What a step row and a session row index is made in Go
-- (store/search_text.go, registerSearchText), the one rule both backends
-- index by; until now these views made it in SQL (006) and a test kept the
-- Go copy the same. Every connection of the store registers the
-- functions; a process of an older build cannot read these views. The
-- index is rebuilt from them (indexVersion 2), so no row keeps text made
-- by the old views.
DROP VIEW search_step_docs;
CREATE VIEW search_step_docs (step_pk, session_pk, body) AS
SELECT pk, session_pk, search_step_text(payload, role, text, stdout, stderr, old_string, new_string, error, flags)
FROM steps;

DROP VIEW search_session_docs;
CREATE VIEW search_session_docs (session_pk, body) AS
SELECT pk, search_session_text(agent_kind, workspace_root, workspace_repo) FROM sessions;
