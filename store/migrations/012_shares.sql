-- Sharing with team servers (service share): what each session has sent to
-- each team server. Nothing here holds a session's text: the manifest names
-- the kinds of secrets masked and where (step seq and field), never a value.
-- IF NOT EXISTS: a store rewound to an earlier user_version (a test of 007's
-- upgrade does that) runs this again.
CREATE TABLE IF NOT EXISTS shares (
  session_id   TEXT NOT NULL,
  target       TEXT NOT NULL,              -- the team server's base URL
  stamp        INTEGER NOT NULL DEFAULT 0, -- every change up to this stamp is on the target
  pending      INTEGER NOT NULL DEFAULT 0, -- a share under way: the session's stamp when it began
  pending_seqs TEXT NOT NULL DEFAULT '[]', -- JSON array: seqs of that share the target accepted
  steps        INTEGER NOT NULL DEFAULT 0, -- steps the target accepted, over every share
  shared_at    INTEGER,                    -- unix microseconds of the last accepted batch
  gone         INTEGER NOT NULL DEFAULT 0, -- the target answered 410: never shared there again
  manifest     TEXT NOT NULL DEFAULT '[]', -- JSON: what was masked in what was sent
  PRIMARY KEY (session_id, target)
) WITHOUT ROWID;

-- Rules of `service share --workspace DIR --to URL --auto`: every session of
-- the workspace is shared with the target on each later `service share --auto`.
CREATE TABLE IF NOT EXISTS share_rules (
  workspace  TEXT NOT NULL,
  target     TEXT NOT NULL,
  token_file TEXT NOT NULL,
  PRIMARY KEY (workspace, target)
) WITHOUT ROWID;
