-- A session's title is its first user prompt's head or, with none, its
-- first task prompt's (read.go, titlePromptSQL), as SQLite's migrations
-- 001 and 019. Without these indexes both look-ups walked the session's
-- steps in seq order, reading each row for its type and role: a session
-- whose first step is a user prompt stopped at once, but one without a
-- user prompt (a subagent's, one pushed by a tool) was read whole for
-- each read of its row, its page and each list that showed it. Few steps
-- are prompts, so the indexes are small and cost a write almost nothing.
CREATE INDEX steps_prompts ON steps (session_pk, seq) WHERE type = 'message' AND role = 'user';
CREATE INDEX steps_task_prompts ON steps (session_pk, seq) WHERE type = 'message' AND role = 'task';
