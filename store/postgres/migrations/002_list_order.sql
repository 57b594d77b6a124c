-- The list orders sessions newest first, then by id bytewise (COLLATE
-- "C"), as SQLite does, whatever collation the database was made with:
-- the list's keyset pages read this index. It replaces 001's
-- sessions_list, whose ids follow the database's collation and so cannot
-- serve that order.
DROP INDEX sessions_list;
CREATE INDEX sessions_list ON sessions (started_ns DESC, id COLLATE "C");
