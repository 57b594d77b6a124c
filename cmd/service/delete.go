package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentreview/service/store"
)

// DeleteCmd is `service delete ID [--db PATH] [--team-copy ask|delete|keep]`.
type DeleteCmd struct {
	ID        string `arg:"" help:"Id of the session to delete."`
	DB        string `help:"Store file (default ~/.service/store.db), or a team server's database (postgres://...)." placeholder:"PATH"`
	TeamCopy  string `help:"When the session was shared with a team server: ask (on a terminal; elsewhere keep), delete or keep the team copy." enum:"ask,delete,keep" default:"ask"`
	TokenFile string `help:"Your token for the team server, to delete its copy (default ~/.service/team-token)." placeholder:"PATH"`
}

// Run deletes the session in the store file directly; a running server
// sees the tombstone and tells its streams. A session shared with team
// servers has its copies there deleted too when asked to.
func (c *DeleteCmd) Run(e *env) error {
	if isPostgresURL(c.DB) {
		return c.deleteTeam(e)
	}
	st, path, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := st.Shares(e.ctx, c.ID)
	if err != nil {
		return err
	}
	var shares []store.Share
	var targets []string
	for _, sh := range all {
		if !sh.Gone && !sh.SharedAt.IsZero() { // something reached the team server
			shares = append(shares, sh)
			targets = append(targets, sh.Target)
		}
	}
	team := c.TeamCopy == "delete"
	if len(shares) > 0 && c.TeamCopy == "ask" && isTerminal(e.stdin) {
		team = askYes(e.stdin, e.stdout, fmt.Sprintf("Session %s was shared with %s. Delete the team copy too?", c.ID, strings.Join(targets, ", ")))
	}
	switch err := st.Delete(e.ctx, c.ID); {
	case errors.Is(err, store.ErrNotFound) && team && len(shares) > 0:
		// Deleted here before, its team copy kept then: delete that now.
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no session %q in %s", c.ID, path)
	case err != nil:
		return err
	default:
		fmt.Fprintf(e.stdout, "deleted session %s; it will not be recorded again\n", c.ID)
	}
	if len(shares) == 0 {
		return nil
	}
	if !team {
		fmt.Fprintf(e.stdout, "the team copy on %s was kept; to delete it too: service delete %s --team-copy=delete\n", strings.Join(targets, ", "), c.ID)
		return nil
	}
	tokenFile, err := teamTokenPath(c.TokenFile)
	if err != nil {
		return err
	}
	if err := deleteTeamCopies(e.ctx, st, shares, tokenFile, e.stdout); err != nil {
		return fmt.Errorf("the local session is deleted, but: %w", err)
	}
	return nil
}

// deleteTeam deletes a session from a team server's database, as its
// admin: every server process's streams report it (the delete notifies),
// and a later push or share of it is refused with 410.
func (c *DeleteCmd) deleteTeam(e *env) error {
	st, err := teamDB{DB: c.DB}.open(e.ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	switch err := st.Delete(e.ctx, c.ID); {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no session %q in the team database %s", c.ID, redactedDSN(c.DB))
	case err != nil:
		return err
	}
	fmt.Fprintf(e.stdout, "deleted session %s; it will not be recorded again\n", c.ID)
	return nil
}
