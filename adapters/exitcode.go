package adapters

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/agentreview/service/store"
)

// statedExitRE are the ways agents state a command's exit code in its
// output: "Exit code N" or "Error: Exit code N" at its start (Claude Code,
// Cline), "Process exited with code N" (Codex), an "Exit Code: N" line
// (Gemini CLI), "<exited with exit code N>" at its end (Copilot CLI).
var statedExitRE = regexp.MustCompile(`^(?:Error: )?(?i:exit code):?\s*(-?\d{1,9})\b|Process exited with code (-?\d{1,9})\b|(?m:^Exit Code: (-?\d{1,9})\b)|<exited with exit code (-?\d{1,9})>\s*$`)

// StatedExitCode is the exit code a command's output states, if it states
// one.
func StatedExitCode(output string) (int64, bool) {
	m := statedExitRE.FindStringSubmatch(output)
	for _, g := range m[min(1, len(m)):] {
		if g != "" {
			code, err := strconv.ParseInt(g, 10, 64)
			return code, err == nil
		}
	}
	return 0, false
}

// commandExit is the exit code rule every agent shares (finishStep): a
// command keeps the code its adapter took from the agent's structured
// result; without one it takes the code its output states, else it has
// none. A command that ran with a non-zero code failed.
func commandExit(st *store.Step) {
	p := &st.Payload
	if st.Type != store.TypeCommand || st.Decision == DecisionRejected || st.Outcome == OutcomeNotRun {
		return
	}
	if p.ExitCode == nil && p.Stdout != nil {
		if code, ok := StatedExitCode(*p.Stdout); ok {
			p.ExitCode = &code
		}
	}
	if p.ExitCode != nil && *p.ExitCode != 0 && st.Outcome == OutcomeOK {
		st.Outcome = OutcomeFailed
		st.Error = &store.StepError{Type: "exit_code", Message: fmt.Sprintf("Exit code %d", *p.ExitCode)}
	}
}
