-- The files a command's line names (store.CommandFilesColumn), so the
-- search's path: filter finds the commands that touched a file, as
-- SQLite's migration 021. The writer fills the column; fillCommandFiles
-- (store.go) fills it for the command steps stored before, in this
-- migration's transaction. The filter's index holds both the path of an
-- edit or a read and the files of a command, with the other columns a
-- search's row names, as 007's did.
ALTER TABLE steps ADD COLUMN command_files text;
DROP INDEX steps_paths;
CREATE INDEX steps_paths ON steps (session_pk, seq) INCLUDE (path, command_files, type, outcome, pk)
  WHERE path IS NOT NULL OR command_files IS NOT NULL;
