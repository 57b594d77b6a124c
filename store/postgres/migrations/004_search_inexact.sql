-- The search_docs rows whose words a search checks in Go (exact is
-- false: search.go), found by index. With it, a search's condition
-- (exact AND doc @@ words) OR (NOT exact AND ...) is a BitmapOr of the GIN
-- index and this one, so a word of few rows is read from the GIN index
-- instead of the whole table (docs/performance.md "Team server"). Such
-- rows are rare (none in a store of generated sessions), so the index is
-- small.
CREATE INDEX search_docs_inexact ON search_docs (session_pk) WHERE NOT exact;
