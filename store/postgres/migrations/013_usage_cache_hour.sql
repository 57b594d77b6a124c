-- Of a record's cache_creation, the tokens written to the cache for an
-- hour rather than five minutes (Claude's ephemeral_1h_input_tokens): an
-- estimate prices them at twice the input (as SQLite's migration 023).
ALTER TABLE usage_records ADD COLUMN cache_creation_1h bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN cache_creation_1h bigint NOT NULL DEFAULT 0;
