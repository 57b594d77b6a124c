-- Each note's text folded (store.FoldNote), for the search's note: filter,
-- as SQLite's migration 025: lower() in the C collation folded ASCII
-- letters alone. The writer fills it; fillNotesFolded (store.go) fills it
-- for the notes written before, in this migration's transaction.
ALTER TABLE notes ADD COLUMN folded text NOT NULL DEFAULT '';
