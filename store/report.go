package store

// Report is what a reviewer reads first: the files the session touched,
// the commands it ran and the other tools it called. It is computed when
// read, over every step, from partial results per block of steps
// (wholeEntry.report in whole.go).
type Report struct {
	Files    []FileTouched `json:"files"`
	Commands []CommandRun  `json:"commands"`
	Tools    []ToolUse     `json:"tools"`
	// Turns are the turns of the read (SessionDetail.Turns) with failed
	// or flagged steps, in the read's order, counted over all their steps
	// however few of them the read returns: what a turn's header says.
	Turns []TurnProblems `json:"turns"`
}

// FileTouched counts the steps on one path: its edits and reads, and the
// commands whose lines name it as a file they write (an edit) or read (a
// read): a redirection's file, tee's, sed -i's, and the files of cat,
// head, tail, nl and sed. A whole write of a path as the first step that
// touches it counts as created.
type FileTouched struct {
	Path      string `json:"path"`
	Created   int    `json:"created"`
	Edited    int    `json:"edited"`
	Read      int    `json:"read"`
	Failed    int    `json:"failed"`     // of those steps, how many failed
	ByCommand int    `json:"by_command"` // of those steps, how many were commands
}

// CommandRun groups the runs of one distinct command line. A reference-only
// command whose text was never recorded groups under the empty command.
type CommandRun struct {
	Command  string `json:"command"`
	FirstSeq int64  `json:"first_seq"` // the seq of its first run
	// FirstFailedSeq is the seq of its first failed run; nil (left out)
	// when none failed.
	FirstFailedSeq  *int64  `json:"first_failed_seq,omitempty"`
	Runs            int     `json:"runs"`
	Failed          int     `json:"failed"`
	ExitCodes       []int64 `json:"exit_codes"` // distinct codes seen, ascending
	OutputNotInline bool    `json:"output_not_inline"`
}

// ToolUse counts the calls of one tool among the steps of type other
// (their payload's tool_name): the tools the step counts show only as
// "others", a web fetch, a to-do list, a subagent, an MCP server's tool.
type ToolUse struct {
	Tool   string `json:"tool"`
	Calls  int    `json:"calls"`
	Failed int    `json:"failed"` // of those calls, how many failed
}

// TurnProblems counts the failed steps of one turn and the flags on its
// steps, with the first step of each, as the summary counts them for the
// session.
type TurnProblems struct {
	TurnID string `json:"turn_id"`
	Failed int    `json:"failed"`
	// FirstFailedSeq is the seq of its first failed step; nil (left out)
	// when none failed.
	FirstFailedSeq *int64 `json:"first_failed_seq,omitempty"`
	Flags          int    `json:"flags"`
	// FirstFlaggedSeq is the seq of its first flagged step; nil (left
	// out) when none is flagged.
	FirstFlaggedSeq *int64 `json:"first_flagged_seq,omitempty"`
}
