-- Each usage record's change stamp: the write's that inserted it (a changed
-- record is deleted and inserted again, usage.go), as steps.updated_at. A
-- session's usage is remembered with its tallies, and the next read after
-- a write reads only the records written since (whole.go, Tallies.usage):
-- a live refresh of a session of 25,788 records read and priced them all,
-- about 100 ms (docs/performance.md). The records already stored have 0:
-- a session's are read whole the first time anyway.
ALTER TABLE usage_records ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX usage_records_by_change ON usage_records (session_pk, updated_at);
