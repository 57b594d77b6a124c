-- Deleted sessions whose clean-up has not finished: the write-ahead log
-- still holds their content (a reader kept it from being checkpointed and
-- truncated), or their capture files are not removed yet. The store retries
-- in the background and at the next start, then removes the row.
CREATE TABLE scrubs (
  id TEXT PRIMARY KEY REFERENCES tombstones (id)
) WITHOUT ROWID;
