-- Index clean-up after a delete (delete.go, cleanIndexes). VACUUM removes a
-- deleted session's rows and their index entries, but not every copy of
-- its text in the indexes: search_docs_doc's GIN index never drops an
-- emptied key (a word), and a B-tree keeps key copies in its inner pages
-- and in freed page space. REINDEX INDEX CONCURRENTLY of the indexes
-- whose keys hold text rebuilds them without the deleted session. due is
-- the change stamp of the latest delete not yet cleaned from them (0:
-- none): Delete sets it in its transaction, and whichever server process
-- holds cleanLock rebuilds the indexes and sets it back to 0 if no delete
-- came meanwhile, so a delete by any process (or by the admin's
-- `service delete --db`) is cleaned by a running server.
CREATE TABLE index_cleanup (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  due bigint NOT NULL
);
INSERT INTO index_cleanup (due) VALUES (0);
