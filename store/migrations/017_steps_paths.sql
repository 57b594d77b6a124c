-- A search's path: filter reads each session's steps that have a path
-- (edits and reads) in seq order, with the path: this index holds it, so a
-- path few steps have ("where did the agent touch auth.go?") costs a walk
-- of the index, not a read of every edit's and read's payload (1.2 s a
-- page at 1,000,000 steps when nothing matched, docs/performance.md). Its
-- expression is the filter's (search.go, searchFilters), as SQLite
-- requires.
CREATE INDEX IF NOT EXISTS steps_paths ON steps (session_pk, seq, json_extract(payload, '$.path')) WHERE type IN ('edit', 'read');
