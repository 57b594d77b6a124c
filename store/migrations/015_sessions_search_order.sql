-- Search walks the sessions in its own order, newest start first and then
-- by pk from the highest (search.go): this index read backwards. A page of
-- filters alone (filterPageSQL) then reads as far as its last hit and
-- sorts nothing; without it SQLite sorted the steps of every session that
-- starts at the same time as another, and before the walk every hit of the
-- store (0.8-1.5 s a page at 1,000,000 steps, docs/performance.md).
CREATE INDEX IF NOT EXISTS sessions_search_order ON sessions (started_ns);
