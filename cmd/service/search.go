package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentreview/service/store"
)

// SearchCmd is `service search QUERY [--json] [--limit N] [--after CURSOR] [--session ID] [--db PATH]`.
type SearchCmd struct {
	Query   string `arg:"" help:"What to find: words, \"phrases\", prefix*, -excluded, and filters such as agent:claude-code type:command status:failed path:handlers/ after:2026-11-01."`
	JSON    bool   `help:"Print the hits as GET /api/search answers them."`
	Limit   int    `help:"At most this many hits." default:"50"`
	After   string `help:"Go on after an earlier page: the cursor it printed." placeholder:"CURSOR"`
	Session string `help:"Search this session alone (its id)." placeholder:"ID"`
	DB      string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run searches the store file directly, beside a running server.
func (c *SearchCmd) Run(e *env) error {
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.Search(e.ctx, store.SearchQuery{Q: c.Query, Limit: c.Limit, After: c.After, Session: c.Session})
	if err != nil {
		if inv, ok := errors.AsType[*store.InvalidError](err); ok {
			return fmt.Errorf("search query: %s", inv.Problems[0].Message)
		}
		return err
	}
	if c.JSON {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	if len(res.Hits) == 0 && !res.Partial {
		fmt.Fprintln(e.stdout, "no hits")
		return nil
	}
	session := ""
	for _, h := range res.Hits {
		if h.SessionID != session {
			session = h.SessionID
			fmt.Fprintf(e.stdout, "%s  %s  %s  %s\n", terminalSafe(h.SessionID), h.StartedAt, terminalSafe(h.Agent), terminalSafe(h.Title))
		}
		kind := h.Type
		if l := h.Label(); l != "" {
			kind += " " + terminalSafe(l)
		}
		snippet, _ := h.SnippetPastRole()
		fmt.Fprintf(e.stdout, "  #%d %s %s  %s\n", h.Seq, kind, terminalSafe(h.Status), terminalSafe(snippet))
		if h.Error != nil {
			fmt.Fprintf(e.stdout, "      error %s: %s\n", terminalSafe(h.Error.Type), terminalSafe(h.Error.Message))
		}
		for _, n := range h.Notes {
			fmt.Fprintf(e.stdout, "      note by %s: %s\n", terminalSafe(n.Author), terminalSafe(n.Text))
		}
		if more := h.NoteCount - len(h.Notes); more > 0 {
			fmt.Fprintf(e.stdout, "      (and %d more on the step)\n", more)
		}
	}
	switch {
	case res.Partial:
		fmt.Fprintf(e.stdout, "(%d hits: the search stopped after %s, before the older sessions; go on with --after %s)\n", len(res.Hits), store.SearchBudget, res.Next)
	case res.Next != "":
		fmt.Fprintf(e.stdout, "(first %d hits; narrow the query, raise --limit or go on with --after %s)\n", len(res.Hits), res.Next)
	}
	return nil
}

// ReindexCmd is `service reindex [--db PATH]`.
type ReindexCmd struct {
	DB string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run rebuilds the search index of the store file, in chunks whose
// progress shows on a terminal (openStore); cut off, it leaves the rest
// to the next command that opens the store.
func (c *ReindexCmd) Run(e *env) error {
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Reindex(e.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "search index rebuilt: %d sessions and steps\n", n)
	return nil
}
