-- A usage report reads the hour rows of a time range (store.UsageReport):
-- an index holding every column it reads, so the report walks one b-tree
-- in time order and never looks a row up in the table (the lookups were
-- a third of `service usage daily`'s report, CPU profile of
-- BenchmarkUsageReportDaily). The table's key (session_pk first) is in
-- the index too, as in every index of a WITHOUT ROWID table.
DROP INDEX usage_hours_by_time;
CREATE INDEX usage_hours_by_time ON usage_hours (hour_ns, model, prompt_range, reported, source,
  input, output, cache_read, cache_creation, requests, cost_usd, last_ns);
