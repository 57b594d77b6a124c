-- The path of each edit and read, the only steps with one, for the search's
-- path: filter (search.go, searchFilters), as SQLite's migration 017. The
-- filter read and parsed every step's payload (2.2 s a page at 1,000,000
-- steps when nothing matched, docs/performance.md). An index on the
-- expression does not help: PostgreSQL reads the row for an expression
-- unless the index holds every column the query names, and the payload
-- cannot be in it. A stored column can, so the filter walks each
-- session's edits and reads in the index alone, in seq order; the index
-- also holds the other step columns a search's row names (type, outcome,
-- pk), without which each edit and read is read from the table (600 ms).
-- Adding the column rewrites the table once (about 30 s a million steps).
ALTER TABLE steps ADD COLUMN path text
  GENERATED ALWAYS AS (CASE WHEN type IN ('edit', 'read') THEN payload::json->>'path' END) STORED;
CREATE INDEX steps_paths ON steps (session_pk, seq) INCLUDE (path, type, outcome, pk) WHERE path IS NOT NULL;
