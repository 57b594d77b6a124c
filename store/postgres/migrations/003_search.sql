-- Full-text search (search.go, search_index.go): one row per step (rid =
-- the step's pk) and one per session (rid = minus the session's pk, its
-- agent, workspace root and repository), as SQLite's FTS5 index
-- (store/migrations/006 and 008). PostgreSQL's own parser keeps paths and
-- hosts whole and leaves diacritics, so the words are made in Go by
-- SQLite's unicode61 rules (store.SearchTokens) and written as a tsvector
-- with their positions: <-> finds phrases, :* prefixes. Apply indexes the
-- rows it changed in its own transaction; the rows go with their session,
-- and Delete vacuums this table as the others. The GIN index's file still
-- holds a deleted session's words after that VACUUM (read from the file
-- with pg_read_binary_file, on PostgreSQL 15), until
-- REINDEX INDEX CONCURRENTLY search_docs_doc rebuilds it.
-- exact is false when the words do not fit a tsvector's positions (more
-- than 16,383 words, or a word more than 256 times): doc then holds the
-- words without positions (NULL when even those do not fit), and a search
-- checks such a row's text in Go.
CREATE TABLE search_docs (
  rid        bigint PRIMARY KEY,
  session_pk bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  doc        tsvector,
  exact      boolean NOT NULL
);
CREATE INDEX search_docs_doc ON search_docs USING gin (doc);
CREATE INDEX search_docs_by_session ON search_docs (session_pk);
