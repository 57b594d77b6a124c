-- A session's title is its first user prompt's head or, with none, its
-- first task prompt's (read.go, titlePromptSQL). steps_prompts finds the
-- first; the second, with no index of its own, walked every step of the
-- session in seq order, looking each row up for its type and role, until
-- a task prompt or the end: each read of a session without a user prompt
-- (a subagent's, one pushed by a tool, load's) read all of it. On a
-- 100,000-step session that was about half the page's time after a push
-- (docs/performance.md, "A session without a user prompt"). Few steps are
-- task prompts, so the index costs a write almost nothing.
CREATE INDEX IF NOT EXISTS steps_task_prompts ON steps (session_pk, seq) WHERE type = 'message' AND role = 'task';
