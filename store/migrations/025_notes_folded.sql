-- Each note's text folded (FoldNote: every character in lower case), for
-- the search's note: filter, which compares the filter's value folded the
-- same way: SQLite's lower() folds ASCII letters alone, so note:échec did
-- not find "Échec". The writer fills it; this fills it for the notes
-- written before (note_fold is FoldNote, registered on every connection).
ALTER TABLE notes ADD COLUMN folded TEXT NOT NULL DEFAULT '';
UPDATE notes SET folded = note_fold(text);
