-- The tool each step of type other called (StepColumns.ToolName), for the
-- report's tools and the search's tool: filter: read from the payload,
-- a read of the tool's whole input and result, and SQLite's JSON functions
-- refuse one nested deeper than they go. Apply fills the column; this
-- fills it for the steps stored before (step_tool_name is ToolNameOf,
-- registered on every connection). The filter finds each session's steps
-- that called a tool by this index, in seq order; on (session_pk, seq,
-- tool_name), as the path filter's, SQLite walked the session's every step
-- by its unique index instead (75 ms a page at 100,000 steps when nothing
-- matched, against 7 ms for path:).
ALTER TABLE steps ADD COLUMN tool_name TEXT;
UPDATE steps SET tool_name = step_tool_name(payload) WHERE type = 'other';
CREATE INDEX steps_tools ON steps (session_pk, tool_name, seq) WHERE tool_name IS NOT NULL;
