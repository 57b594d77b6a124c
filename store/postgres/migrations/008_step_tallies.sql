-- Each session's steps counted as the list shows them (store.StepCount:
-- by type, failed or not, reference-only or not, with their flags), kept
-- by Apply in the transaction that writes the steps (apply.go, tallies).
-- The list counted every listed session's steps with a GROUP BY each time
-- a process first listed it or it changed: 745 ms for the first whole list
-- at 1,000,000 steps, 7.2 s at 10,000,000, and a recount of every step of
-- a live session at each list after a push to it (docs/performance.md).
-- Building it reads every step once.
CREATE TABLE step_tallies (
  session_pk     bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  type           text NOT NULL,
  failed         boolean NOT NULL,
  reference_only boolean NOT NULL,
  steps          bigint NOT NULL,
  flags          bigint NOT NULL,
  PRIMARY KEY (session_pk, type, failed, reference_only)
);
INSERT INTO step_tallies (session_pk, type, failed, reference_only, steps, flags)
  SELECT session_pk, type, outcome = 'failed', content_status = 'reference_only', count(*), sum(flag_count)
  FROM steps GROUP BY 1, 2, 3, 4;
