-- The list's "has failures" and "flagged" filters ask, for every session,
-- whether one of its steps failed or carries a flag (read.go,
-- sqliteListConds), once for the page and once for each of its counts.
-- steps_counts answered by reading every step's entry of a session with
-- none: each list of a filtered store read the whole of it. These indexes
-- hold only those steps, so each answer is one look-up. In seq order, so a
-- search's flag: filter walks a session's flagged steps alone.
CREATE INDEX IF NOT EXISTS steps_failed ON steps (session_pk, seq) WHERE outcome = 'failed';
CREATE INDEX IF NOT EXISTS steps_flagged ON steps (session_pk, seq) WHERE flag_count > 0;
