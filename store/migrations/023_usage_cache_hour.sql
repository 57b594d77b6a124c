-- Of a record's cache_creation, the tokens written to the cache for an
-- hour rather than five minutes (Claude's ephemeral_1h_input_tokens): an
-- estimate prices them at twice the input, not 1.25 times (pricing).
ALTER TABLE usage_records ADD COLUMN cache_creation_1h INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN cache_creation_1h INTEGER NOT NULL DEFAULT 0;
DROP INDEX usage_hours_by_time;
CREATE INDEX usage_hours_by_time ON usage_hours (hour_ns, model, prompt_range, reported, source,
  input, output, cache_read, cache_creation, cache_creation_1h, requests, cost_usd, last_ns);

-- Claude Code's transcripts are read again, once, by the next import or
-- capture, to fill it.
DELETE FROM import_files WHERE agent_kind = 'claude-code';
