-- The tool each step of type other called (store.StepColumns.ToolName),
-- for the report's tools and the search's tool: filter, as SQLite's
-- migration 024: the writer fills the column; fillToolNames (store.go)
-- fills it for the steps stored before, in this migration's transaction.
-- The filter finds each session's steps that called a tool in the index
-- alone, in seq order, with the other columns a search's row names.
ALTER TABLE steps ADD COLUMN tool_name text;
CREATE INDEX steps_tools ON steps (session_pk, tool_name, seq) INCLUDE (type, outcome, pk) WHERE tool_name IS NOT NULL;
