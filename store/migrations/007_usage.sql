-- Token usage as the agent reported it, one row per API response (final
-- counts), or per model where the agent reports only totals (requests > 1);
-- never calculated. Rows go with their session (ON DELETE CASCADE)
-- and are overwritten on disk like the rest of it (secure_delete).
CREATE TABLE usage_records (
  session_pk     INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id             TEXT NOT NULL,    -- the response's id, or one the adapter made
  at             TEXT NOT NULL,
  at_ns          INTEGER NOT NULL,
  model          TEXT NOT NULL,    -- '' when the agent did not say
  actor_id       TEXT NOT NULL,
  turn_id        TEXT NOT NULL,
  input          INTEGER NOT NULL,
  output         INTEGER NOT NULL,
  cache_read     INTEGER NOT NULL,
  cache_creation INTEGER NOT NULL,
  requests       INTEGER NOT NULL, -- API requests the row stands for
  cost_usd       REAL,             -- as reported; NULL when the agent reported none
  source         TEXT NOT NULL,    -- file or otel
  PRIMARY KEY (session_pk, id)
) WITHOUT ROWID;
CREATE INDEX usage_records_by_time ON usage_records (at_ns);

-- Files imported before usage was kept are read again, once, to fill it.
DELETE FROM import_files;
