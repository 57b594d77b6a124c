-- The list reads the pk, id and change stamp of sessions newest first: this
-- index covers that, so an unfiltered list reads no table row and sorts
-- nothing. It starts with sessions_by_start's column, which it replaces.
-- It may run again (as 008 may), so it checks.
CREATE INDEX IF NOT EXISTS sessions_list ON sessions (started_ns DESC, id, updated_at);
DROP INDEX IF EXISTS sessions_by_start;
