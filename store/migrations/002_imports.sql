-- Agent files the import command has read, with the size and modification
-- time it saw, so a later run skips the files that have not changed.
-- Only paths are kept, never content and never a session id.
CREATE TABLE import_files (
  path       TEXT PRIMARY KEY,
  agent_kind TEXT NOT NULL,
  size       INTEGER NOT NULL,
  mtime_ns   INTEGER NOT NULL
) WITHOUT ROWID;
