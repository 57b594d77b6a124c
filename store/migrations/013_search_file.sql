-- The search index moves to a file of its own, <store>-search, attached to
-- every connection as schema idx (search_index.go makes its tables): SQLite
-- has one writer per file, and the index's catch-up held the store's only
-- write lock, so a push that arrived during it waited for all of it
-- (docs/performance.md, "Search index"). The catch-up now writes only the
-- index file, reading a snapshot of this one.
-- secure_delete is on for every connection, so the pages these tables free
-- are overwritten. The views of 006 stay here: they read this file's
-- tables. The index of an existing store is built again in the new file by
-- the catch-up of the Open that migrated, in chunks with progress.
DROP TABLE IF EXISTS main.search;
DROP TABLE IF EXISTS main.search_spans;
DROP TABLE IF EXISTS main.search_stale;
DROP TABLE IF EXISTS main.search_state;

-- A transaction that writes both files (Apply replacing indexed text,
-- Delete) is atomic in each file, not across them: a crash between the two
-- commits can leave the index holding text this file no longer has. Each
-- such transaction adds 1 to this epoch and to idx.search_state's; when
-- they differ, the index is emptied (with secure delete) and built again.
-- It starts at a random number, so an index file left beside a new store
-- of the same name (the store file removed, its -search kept) never
-- matches it.
-- IF NOT EXISTS: a store rewound to an earlier user_version (a test of
-- 007's upgrade does that) runs this again.
CREATE TABLE IF NOT EXISTS search_epoch (epoch INTEGER NOT NULL);
INSERT INTO search_epoch (epoch) SELECT random() >> 2 WHERE NOT EXISTS (SELECT 1 FROM search_epoch);
