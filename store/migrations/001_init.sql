-- Sessions: the header as last pushed, plus what the service keeps per session.
-- updated_at is the change stamp (unix microseconds), strictly increasing
-- across the whole store, that the live stream polls.
CREATE TABLE sessions (
  pk                   INTEGER PRIMARY KEY,
  id                   TEXT NOT NULL UNIQUE,
  agent_kind           TEXT NOT NULL,
  agent_version        TEXT NOT NULL,
  agent_format_version TEXT,
  workspace_root       TEXT NOT NULL,
  workspace_repo       TEXT,
  started_at           TEXT NOT NULL,
  started_ns           INTEGER NOT NULL, -- started_at as unix nanoseconds, for ordering
  ended_at             TEXT,
  source               TEXT NOT NULL,
  metrics              TEXT,             -- JSON, exactly as reported
  owner_id             TEXT NOT NULL,
  captured_on          TEXT NOT NULL,
  verdict_state        TEXT,
  verdict_note         TEXT,
  verdict_reviewer     TEXT,
  updated_at           INTEGER NOT NULL
);
CREATE INDEX sessions_by_start ON sessions (started_ns DESC);
CREATE INDEX sessions_by_agent ON sessions (agent_kind, started_ns DESC);
CREATE INDEX sessions_by_change ON sessions (updated_at);

CREATE TABLE segments (
  session_pk   INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  idx          INTEGER NOT NULL,
  start_reason TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  ended_at     TEXT,
  source_files TEXT NOT NULL, -- JSON array
  PRIMARY KEY (session_pk, idx)
) WITHOUT ROWID;

CREATE TABLE actors (
  session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id         TEXT NOT NULL,
  parent_id  TEXT,
  type       TEXT NOT NULL,
  label      TEXT,
  PRIMARY KEY (session_pk, id)
) WITHOUT ROWID;

CREATE TABLE turns (
  session_pk    INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id            TEXT NOT NULL,
  segment_index INTEGER NOT NULL,
  actor_id      TEXT NOT NULL,
  idx           INTEGER NOT NULL,
  prompt_id     TEXT,
  mode          TEXT,
  started_at    TEXT NOT NULL,
  updated_at    INTEGER NOT NULL, -- change stamp of the last write that changed it
  PRIMARY KEY (session_pk, id)
) WITHOUT ROWID;

-- Steps keep the small payload fields as JSON and the large text fields
-- (output, message text, edit strings) in their own columns after it, so a
-- page can read the first bytes of each without loading whole outputs.
CREATE TABLE steps (
  pk             INTEGER PRIMARY KEY,
  session_pk     INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id             TEXT NOT NULL,
  seq            INTEGER NOT NULL,
  segment_index  INTEGER NOT NULL,
  turn_id        TEXT NOT NULL,
  actor_id       TEXT NOT NULL,
  at             TEXT NOT NULL,
  type           TEXT NOT NULL,
  decision       TEXT NOT NULL,
  outcome        TEXT NOT NULL,
  content_status TEXT NOT NULL,
  role           TEXT,             -- payload.role of a message, for the title query
  flag_count     INTEGER NOT NULL, -- length of flags, for list counts from the index
  error          TEXT,             -- JSON
  channels       TEXT NOT NULL,    -- JSON array
  flags          TEXT NOT NULL,    -- JSON array
  updated_at     INTEGER NOT NULL, -- change stamp of the last write that changed it
  payload        TEXT NOT NULL,    -- JSON, without the columns below
  stdout         TEXT,
  stderr         TEXT,
  text           TEXT,
  old_string     TEXT,
  new_string     TEXT,
  UNIQUE (session_pk, id),
  UNIQUE (session_pk, seq)
);
CREATE INDEX steps_counts ON steps (session_pk, type, outcome, content_status, flag_count);
CREATE INDEX steps_prompts ON steps (session_pk, seq) WHERE type = 'message' AND role = 'user';
CREATE INDEX steps_by_turn ON steps (session_pk, turn_id, seq);
CREATE INDEX steps_by_change ON steps (session_pk, updated_at);

-- Deleted sessions: only the id is remembered, so it is never recorded again.
-- deleted_at shares the clock of sessions.updated_at.
CREATE TABLE tombstones (
  id         TEXT PRIMARY KEY,
  deleted_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tombstones_by_change ON tombstones (deleted_at);
