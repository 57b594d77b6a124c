-- Each usage record's change stamp, as in the SQLite store (its migration
-- 018): a session's remembered usage is brought up to date by reading only
-- the records written since.
ALTER TABLE usage_records ADD COLUMN updated_at bigint NOT NULL DEFAULT 0;
CREATE INDEX usage_records_by_change ON usage_records (session_pk, updated_at);
