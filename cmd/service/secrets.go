package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// SecretsCmd is `service secrets [--session ID] [--agent KIND]
// [--workspace TEXT] [--since DATE] [--until DATE] [--candidates] [--json]
// [--fail] [--db PATH]`: the secrets the stored sessions hold, which their agents
// sent to a model or printed, found by the scan that masks the export; to
// know which keys to rotate.
type SecretsCmd struct {
	Session    string `help:"Look in this session alone (its id)." placeholder:"ID"`
	Agent      string `help:"Only the sessions of this agent (claude-code, codex, ...)." placeholder:"KIND"`
	Workspace  string `help:"Only the sessions whose workspace folder contains this." placeholder:"TEXT"`
	Since      string `help:"Only the sessions started on or after this date (2026-11-01) or RFC 3339 time." placeholder:"DATE"`
	Until      string `help:"Only the sessions started before this date or time." placeholder:"DATE"`
	Candidates bool   `help:"Also list the values only the generic rule matched (a long random-looking value beside a word such as key or token): the export masks them too, but many are not secrets."`
	JSON       bool   `help:"Print each session with secrets as the export review route answers it (GET /api/sessions/<id>/export/review), with its agent, title and start."`
	Fail       bool   `help:"Exit with status 1 when a secret is listed, as a scanner in a script or a scheduled job does."`
	DB         string `help:"Store file (default ~/.service/store.db), or a team server's PostgreSQL URL (postgres://...): the sessions its users pushed." placeholder:"PATH"`
}

// secretsPage is how many sessions each read of the list takes.
const secretsPage = 200

// secretsSession is a session with secrets in the JSON output.
type secretsSession struct {
	handlers.Review
	Agent     string `json:"agent"`
	Title     string `json:"title"`
	StartedAt string `json:"started_at"`
}

// Run reads every session the filters keep, newest first, from the store
// file directly (beside a running server) or a team server's database,
// and prints those whose export would mask a value, each value once with
// the steps it is in.
func (c *SecretsCmd) Run(e *env) error {
	var st handlers.Reader
	if isPostgresURL(c.DB) {
		pg, err := teamDB{DB: c.DB}.open(e.ctx)
		if err != nil {
			return err
		}
		defer pg.Close()
		st = pg
	} else {
		sq, _, err := openStore(e, c.DB)
		if err != nil {
			return err
		}
		defer sq.Close()
		st = sq
	}
	// definite and possible count the values listed; left, those not.
	scanned, definite, possible, left := 0, 0, 0, 0
	with := []secretsSession{}
	for s, err := range c.sessions(e, st) {
		if err != nil {
			return err
		}
		rv, err := handlers.ReviewSecrets(e.ctx, st, s.ID)
		if errors.Is(err, store.ErrNotFound) && c.Session == "" {
			continue // deleted since the list was read
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", s.ID, err)
		}
		scanned++
		kept := []handlers.ReviewFinding{}
		for _, f := range rv.Findings {
			switch {
			case f.Confidence == string(redact.Definite):
				definite++
			case !c.Candidates:
				left++
				continue
			default:
				possible++
			}
			kept = append(kept, f)
		}
		if len(kept) == 0 {
			continue
		}
		rv.Findings = kept
		with = append(with, secretsSession{Review: rv, Agent: s.Agent.Kind, Title: s.Summary.Title, StartedAt: s.StartedAt})
		if c.JSON {
			continue
		}
		fmt.Fprintf(e.stdout, "%s  %s  %s  %s\n", terminalSafe(s.ID), s.StartedAt, terminalSafe(s.Agent.Kind), terminalSafe(s.Summary.Title))
		for _, f := range kept {
			fmt.Fprintf(e.stdout, "  %s  %s  %s\n", terminalSafe(f.Rule), terminalSafe(f.Preview), places(f.Where))
		}
	}
	if c.JSON {
		b, err := json.MarshalIndent(map[string]any{"sessions": with, "scanned": scanned}, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(e.stdout, "%s\n", b); err != nil {
			return err
		}
		return c.failed(definite, possible)
	}
	if found := listed(definite, possible); found == "" {
		fmt.Fprintf(e.stdout, "No secrets in %s\n", plural(scanned, "session", "sessions"))
	} else {
		fmt.Fprintf(e.stdout, "%s in %d of %s\n", found, len(with), plural(scanned, "session", "sessions"))
	}
	if left > 0 {
		fmt.Fprintf(e.stdout, "(%s only the generic rule matched not listed: --candidates lists them)\n", plural(left, "possible secret", "possible secrets"))
	}
	return c.failed(definite, possible)
}

// listed says how many values were listed: "2 secrets and 1 possible
// secret"; "" for none.
func listed(definite, possible int) string {
	var found []string
	if definite > 0 {
		found = append(found, plural(definite, "secret", "secrets"))
	}
	if possible > 0 {
		found = append(found, plural(possible, "possible secret", "possible secrets"))
	}
	return strings.Join(found, " and ")
}

// failed is the command's end with --fail when it listed values.
func (c *SecretsCmd) failed(definite, possible int) error {
	if !c.Fail || definite+possible == 0 {
		return nil
	}
	return fmt.Errorf("%s listed (--fail)", listed(definite, possible))
}

// sessions yields the sessions the command looks in: --session alone, or
// every session the filters keep, newest first, a page of the list at a
// time.
func (c *SecretsCmd) sessions(e *env, st handlers.Reader) iter.Seq2[store.SessionOverview, error] {
	return func(yield func(store.SessionOverview, error) bool) {
		if c.Session != "" {
			d, err := st.Detail(e.ctx, c.Session, store.DetailQuery{NoSteps: true})
			yield(d.SessionOverview, notStored(c.Session, err))
			return
		}
		q := store.ListQuery{Agent: c.Agent, Workspace: c.Workspace, Since: c.Since, Until: c.Until, PageOnly: true, Limit: secretsPage}
		for {
			l, err := st.List(e.ctx, q)
			if inv, ok := errors.AsType[*store.InvalidError](err); ok {
				err = errors.New(inv.Problems[0].Message)
			}
			if err != nil {
				yield(store.SessionOverview{}, err)
				return
			}
			for _, s := range l.Sessions {
				if !yield(s, nil) {
					return
				}
			}
			if l.Next == "" {
				return
			}
			q.After = l.Next
		}
	}
}

// places says where a value is, as the export panel does: "step 14
// output, title".
func places(where []handlers.ReviewPlace) string {
	parts := make([]string, len(where))
	for i, w := range where {
		parts[i] = terminalSafe(views.FieldLabel(w.Field))
		if w.Seq != nil {
			parts[i] = "step " + strconv.FormatInt(*w.Seq, 10) + " " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}
