-- The list's total and its cost filter read, for each session without
-- metrics, the costs its requests reported (list.go): the reported
-- usage_hours rows of a session, by this index of them alone, as SQLite's
-- migration 020. Few agents report a cost per request, so it is small.
CREATE INDEX usage_hours_reported ON usage_hours (session_pk, cost_usd) WHERE reported = 1;
