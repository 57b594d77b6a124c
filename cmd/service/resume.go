package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/store"
)

// ResumeCmd is `service resume ID [--print] [--db PATH]`: the session
// page's resume command, from a terminal.
type ResumeCmd struct {
	ID    string `arg:"" help:"Id of the session."`
	Print bool   `help:"Print the command instead of running it."`
	DB    string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run reopens the session in its agent, in its workspace, with this
// terminal: the command the session page offers (agents.ResumeCommand),
// run by sh.
func (c *ResumeCmd) Run(e *env) error {
	if isPostgresURL(c.DB) {
		return errors.New("resume reads a local store file: a session is resumed on the machine it ran on")
	}
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	d, err := st.Detail(e.ctx, c.ID, store.DetailQuery{NoSteps: true})
	st.Close()
	if err != nil {
		return notStored(c.ID, err)
	}
	line := agents.ResumeCommand(d.Agent.Kind, d.ID, d.Workspace.Root)
	if line == "" {
		return fmt.Errorf("%s cannot reopen a session by its id", terminalSafe(d.Agent.Kind))
	}
	if c.Print {
		_, err := fmt.Fprintln(e.stdout, line)
		return err
	}
	if root := d.Workspace.Root; strings.HasPrefix(root, "/") {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return fmt.Errorf("the session's workspace %s is not a folder on this machine", terminalSafe(root))
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return fmt.Errorf("no sh to run %s: %w", line, err)
	}
	cmd := exec.CommandContext(e.ctx, sh, "-c", line)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	return cmd.Run()
}
