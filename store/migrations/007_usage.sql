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

-- usage_records added up per session, hour (UTC), model, price-tier range
-- of the prompt, source and whether a cost was reported, kept by the
-- triggers below, so a report over millions of records reads a few
-- thousand rows. The tier ranges start where the embedded price table's
-- long-context tiers started when this was written (store.UsageReport).
CREATE TABLE usage_hours (
  session_pk     INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  hour_ns        INTEGER NOT NULL,
  model          TEXT NOT NULL,
  prompt_range   INTEGER NOT NULL,
  source         TEXT NOT NULL,
  reported       INTEGER NOT NULL, -- 1: the rows' cost_usd were reported
  input          INTEGER NOT NULL,
  output         INTEGER NOT NULL,
  cache_read     INTEGER NOT NULL,
  cache_creation INTEGER NOT NULL,
  requests       INTEGER NOT NULL,
  cost_usd       REAL NOT NULL,
  last_ns        INTEGER NOT NULL, -- the latest record's time, for the price date
  PRIMARY KEY (session_pk, hour_ns, model, prompt_range, source, reported)
) WITHOUT ROWID;
CREATE INDEX usage_hours_by_time ON usage_hours (hour_ns);
-- The sessions with OpenTelemetry records, which count only those.
CREATE INDEX usage_hours_otel ON usage_hours (session_pk) WHERE source = 'otel';

CREATE TRIGGER usage_records_add AFTER INSERT ON usage_records BEGIN
  INSERT INTO usage_hours VALUES (new.session_pk, new.at_ns - (new.at_ns % 3600000000000), new.model,
    CASE WHEN new.input + new.cache_read + new.cache_creation >= 512000 THEN 512000
         WHEN new.input + new.cache_read + new.cache_creation >= 272000 THEN 272000
         WHEN new.input + new.cache_read + new.cache_creation >= 271999 THEN 271999
         WHEN new.input + new.cache_read + new.cache_creation >= 200000 THEN 200000
         WHEN new.input + new.cache_read + new.cache_creation >= 199999 THEN 199999
         WHEN new.input + new.cache_read + new.cache_creation >= 128000 THEN 128000 ELSE 0 END,
    new.source, new.cost_usd IS NOT NULL, new.input, new.output, new.cache_read, new.cache_creation,
    new.requests, coalesce(new.cost_usd, 0), new.at_ns)
  ON CONFLICT DO UPDATE SET input = input + excluded.input, output = output + excluded.output,
    cache_read = cache_read + excluded.cache_read, cache_creation = cache_creation + excluded.cache_creation,
    requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd,
    last_ns = max(last_ns, excluded.last_ns);
END;

CREATE TRIGGER usage_records_remove AFTER DELETE ON usage_records BEGIN
  UPDATE usage_hours SET input = input - old.input, output = output - old.output,
    cache_read = cache_read - old.cache_read, cache_creation = cache_creation - old.cache_creation,
    requests = requests - old.requests, cost_usd = cost_usd - coalesce(old.cost_usd, 0)
  WHERE session_pk = old.session_pk AND hour_ns = old.at_ns - (old.at_ns % 3600000000000) AND model = old.model
    AND prompt_range = CASE WHEN old.input + old.cache_read + old.cache_creation >= 512000 THEN 512000
         WHEN old.input + old.cache_read + old.cache_creation >= 272000 THEN 272000
         WHEN old.input + old.cache_read + old.cache_creation >= 271999 THEN 271999
         WHEN old.input + old.cache_read + old.cache_creation >= 200000 THEN 200000
         WHEN old.input + old.cache_read + old.cache_creation >= 199999 THEN 199999
         WHEN old.input + old.cache_read + old.cache_creation >= 128000 THEN 128000 ELSE 0 END
    AND source = old.source AND reported = (old.cost_usd IS NOT NULL);
  DELETE FROM usage_hours WHERE session_pk = old.session_pk AND requests <= 0;
END;
