-- The team server's store: the tables of the SQLite store
-- (store/migrations), with the same names and columns, in PostgreSQL's
-- types. Text is text, JSON kept exactly as pushed is text too (a jsonb
-- would reorder keys and lose duplicates), change stamps are unix
-- microseconds as in SQLite.

-- The store's change stamp: strictly increasing across every server
-- process. A writer takes pg_advisory_xact_lock(stampLock) first (one
-- writer at a time, as SQLite's write lock), then moves last on, so stamps
-- commit in order and a reader of ChangesSince never misses one.
CREATE TABLE clock (
  one  boolean PRIMARY KEY DEFAULT true CHECK (one),
  last bigint NOT NULL
);
INSERT INTO clock (last) VALUES (0);

CREATE TABLE sessions (
  pk                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id                   text NOT NULL UNIQUE,
  agent_kind           text NOT NULL,
  agent_version        text NOT NULL,
  agent_format_version text,
  workspace_root       text NOT NULL,
  workspace_repo       text,
  started_at           text NOT NULL,
  started_ns           bigint NOT NULL,
  ended_at             text,
  source               text NOT NULL,
  metrics              text,
  owner_id             text NOT NULL,
  captured_on          text NOT NULL,
  verdict_state        text,
  verdict_note         text,
  verdict_reviewer     text,
  updated_at           bigint NOT NULL
);
CREATE INDEX sessions_list ON sessions (started_ns DESC, id);
CREATE INDEX sessions_by_agent ON sessions (agent_kind, started_ns DESC);
CREATE INDEX sessions_by_owner ON sessions (owner_id, started_ns DESC);
CREATE INDEX sessions_by_verdict ON sessions (verdict_state, started_ns DESC);
CREATE INDEX sessions_by_change ON sessions (updated_at);

CREATE TABLE segments (
  session_pk   bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  idx          bigint NOT NULL,
  start_reason text NOT NULL,
  started_at   text NOT NULL,
  ended_at     text,
  source_files text NOT NULL,
  PRIMARY KEY (session_pk, idx)
);

CREATE TABLE actors (
  session_pk bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id         text NOT NULL,
  parent_id  text,
  type       text NOT NULL,
  label      text,
  PRIMARY KEY (session_pk, id)
);

CREATE TABLE turns (
  session_pk    bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id            text NOT NULL,
  segment_index bigint NOT NULL,
  actor_id      text NOT NULL,
  idx           bigint NOT NULL,
  prompt_id     text,
  mode          text,
  started_at    text NOT NULL,
  updated_at    bigint NOT NULL,
  PRIMARY KEY (session_pk, id)
);

CREATE TABLE steps (
  pk             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_pk     bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id             text NOT NULL,
  seq            bigint NOT NULL,
  segment_index  bigint NOT NULL,
  turn_id        text NOT NULL,
  actor_id       text NOT NULL,
  at             text NOT NULL,
  type           text NOT NULL,
  decision       text NOT NULL,
  outcome        text NOT NULL,
  content_status text NOT NULL,
  role           text,
  flag_count     integer NOT NULL,
  error          text,
  channels       text NOT NULL,
  flags          text NOT NULL,
  updated_at     bigint NOT NULL,
  payload        text NOT NULL,
  stdout         text,
  stderr         text,
  text           text,
  old_string     text,
  new_string     text,
  UNIQUE (session_pk, id),
  UNIQUE (session_pk, seq)
);
CREATE INDEX steps_by_turn ON steps (session_pk, turn_id, seq);
CREATE INDEX steps_by_change ON steps (session_pk, updated_at);

-- Deleted sessions: only the id is remembered, so it is never recorded
-- again (a later push or share of it is refused with 410).
CREATE TABLE tombstones (
  id         text PRIMARY KEY,
  deleted_at bigint NOT NULL
);
CREATE INDEX tombstones_by_change ON tombstones (deleted_at);

CREATE TABLE notes (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_pk bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  step_pk    bigint NOT NULL REFERENCES steps (pk) ON DELETE CASCADE,
  author     text NOT NULL,
  text       text NOT NULL,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX notes_by_session ON notes (session_pk, step_pk);
CREATE INDEX notes_by_step ON notes (step_pk);

CREATE TABLE usage_records (
  session_pk     bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id             text NOT NULL,
  at             text NOT NULL,
  at_ns          bigint NOT NULL,
  model          text NOT NULL,
  actor_id       text NOT NULL,
  turn_id        text NOT NULL,
  input          bigint NOT NULL,
  output         bigint NOT NULL,
  cache_read     bigint NOT NULL,
  cache_creation bigint NOT NULL,
  requests       bigint NOT NULL,
  cost_usd       double precision,
  source         text NOT NULL,
  PRIMARY KEY (session_pk, id)
);
CREATE INDEX usage_records_by_time ON usage_records (at_ns);

CREATE TABLE usage_hours (
  session_pk     bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  hour_ns        bigint NOT NULL,
  model          text NOT NULL,
  prompt_range   bigint NOT NULL,
  source         text NOT NULL,
  reported       integer NOT NULL,
  input          bigint NOT NULL,
  output         bigint NOT NULL,
  cache_read     bigint NOT NULL,
  cache_creation bigint NOT NULL,
  requests       bigint NOT NULL,
  cost_usd       double precision NOT NULL,
  last_ns        bigint NOT NULL,
  PRIMARY KEY (session_pk, hour_ns, model, prompt_range, source, reported)
);
CREATE INDEX usage_hours_by_time ON usage_hours (hour_ns);

-- Push tokens of the team's users (service team token add USER): only the
-- SHA-256 of a token is kept; the token is printed once.
CREATE TABLE team_tokens (
  hash       bytea PRIMARY KEY,
  user_id    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX team_tokens_by_user ON team_tokens (user_id);
