-- The files a command's line names (store.CommandFilesColumn: written,
-- read or removed, one a line), so the search's path: filter finds the
-- commands that touched a file as Files touched counts them, not only
-- edits and reads: `cat <<'EOF' > notes.md` is how Codex writes a file.
-- Apply fills the column; this fills it for the command steps stored
-- before (step_command_files is the same rule, registered on every
-- connection), writing only the rows whose line names a file. The
-- filter's index (017) becomes one over both: the column of a command, the
-- path of an edit or a read; its expression and its WHERE are the
-- filter's (search.go, searchFilters), as SQLite requires.
ALTER TABLE steps ADD COLUMN command_files TEXT;
UPDATE steps SET command_files = named.files
FROM (SELECT pk, step_command_files(payload) AS files FROM steps WHERE type = 'command') AS named
WHERE steps.pk = named.pk AND named.files IS NOT NULL;
DROP INDEX IF EXISTS steps_paths;
CREATE INDEX steps_paths ON steps (session_pk, seq, coalesce(command_files, json_extract(payload, '$.path')))
WHERE type IN ('edit', 'read') OR command_files IS NOT NULL;
