package main

import (
	"errors"
	"fmt"

	"github.com/agentreview/service/store"
)

// DeleteCmd is `service delete ID [--db PATH]`.
type DeleteCmd struct {
	ID string `arg:"" help:"Id of the session to delete."`
	DB string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run deletes the session in the store file directly; a running server
// sees the tombstone and tells its streams.
func (c *DeleteCmd) Run(e *env) error {
	st, path, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Delete(e.ctx, c.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no session %q in %s", c.ID, path)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "deleted session %s; it will not be recorded again\n", c.ID)
	return nil
}
