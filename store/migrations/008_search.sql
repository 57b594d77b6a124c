-- The search index without its own copy of the text (issue 13's size
-- target): a contentless FTS5 table (content = '') keeps only the index
-- b-trees: 1.67x of the indexed text became 0.36-0.39x. Snippets are made
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
-- It builds everything it makes from scratch, so it may run again.
DROP TABLE search;
DROP TABLE IF EXISTS search_stale;
DROP TABLE IF EXISTS search_spans;
CREATE VIRTUAL TABLE search USING fts5(body, content = '', tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO search (search, rank) VALUES ('hashsize', 16777216);

-- The text a row was indexed with, kept from the moment a write may change
-- it (Apply, keepIndexedText in search_index.go) until the next catch-up
-- or Delete removes it from the index; Apply drops it again for the steps
-- it left unchanged (dropUnchangedText). A row is in the index when search_docsize holds its
-- rowid. Not triggers: a trigger on steps makes every step's upsert keep
-- a statement journal, which made a 5,000-step push 2.3 times slower in
-- its inserts (CPU profile of BenchmarkIngest5000Gzip).
CREATE TABLE search_stale (rid INTEGER PRIMARY KEY, body TEXT NOT NULL);

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

-- Existing stores: the index holds nothing yet. The catch-up of the Open
-- that migrated builds it, rows and spans, from the views above, in
-- chunks with progress on a terminal (search_index.go). Built here, in
-- one transaction, it made Open give up after 15 s on a store of a
-- million steps, and on one of 200,000 on a busy machine.
UPDATE search_state SET indexed_through = 0;
