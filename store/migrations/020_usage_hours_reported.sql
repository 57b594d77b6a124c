-- The list's total adds, for each session without metrics, the costs its
-- requests reported (read.go, List: the reported usage_hours rows, by
-- session). Without this index that read every usage_hours row of the
-- store on each list, most of them unreported (Claude Code's, Codex's);
-- with it only the reported ones, in session order, and none of the
-- table's rows. Few agents report a cost per request, so it is small.
CREATE INDEX IF NOT EXISTS usage_hours_reported ON usage_hours (session_pk, cost_usd) WHERE reported = 1;
