-- The version of the rule that made search_docs' words
-- (store.SearchTextVersion): a store made before this migration has words
-- of version 2. Open rewrites the words of the steps whose text a later
-- rule changes (search_rewrite.go), then records the version here.
CREATE TABLE search_text_version (version integer NOT NULL);
INSERT INTO search_text_version (version) VALUES (2);
