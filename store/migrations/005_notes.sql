-- Reviewers' notes on steps, written from the review app. Rows go with
-- their session (ON DELETE CASCADE) and are overwritten on disk like the
-- rest of it (secure_delete). Steps are upserted in place, never replaced,
-- so a note outlives every later push of its step.
CREATE TABLE notes (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  step_pk    INTEGER NOT NULL REFERENCES steps (pk) ON DELETE CASCADE,
  author     TEXT NOT NULL,
  text       TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX notes_by_session ON notes (session_pk, step_pk);
CREATE INDEX notes_by_step ON notes (step_pk);

-- The list filters and counts sessions by verdict.
CREATE INDEX sessions_by_verdict ON sessions (verdict_state, started_ns DESC);
