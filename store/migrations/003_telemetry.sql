-- Telemetry a capture process received for a session (Claude Code's
-- OpenTelemetry events: requests with their cost, tool decisions and
-- results), kept so that every writer that reads the session's transcript
-- again (capture, hook, import) joins the same evidence to it. Rows go with
-- their session (ON DELETE CASCADE) and are overwritten on disk like the
-- rest of it (secure_delete).
CREATE TABLE telemetry (
  session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  kind       TEXT NOT NULL,
  key        TEXT NOT NULL,
  ord        INTEGER NOT NULL, -- arrival number within the session, from 1; kept when the record is written again
  body       TEXT NOT NULL,    -- JSON, as the writer recorded it
  PRIMARY KEY (session_pk, kind, key)
) WITHOUT ROWID;
CREATE INDEX telemetry_by_ord ON telemetry (session_pk, ord);
