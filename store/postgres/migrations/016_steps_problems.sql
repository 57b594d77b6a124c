-- The failed and flagged steps of each session in seq order, for
-- Store.NextProblem (a session's page that leaves steps out steps through
-- every problem with it: the e and E keys), a seek each, as SQLite's
-- steps_failed and steps_flagged (its migration 016) serve it.
CREATE INDEX steps_problems ON steps (session_pk, seq) WHERE outcome = 'failed' OR flag_count > 0;
