package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentreview/service/handlers"
	"github.com/agentreview/service/store"
)

// ExportCmd is `service export ID [--format html|md] [--outline] [--images]
// [--keep PLACEHOLDER]... [--out FILE] [--db PATH]`: the export panel's
// report from a terminal, for a script or a pipe (`| gh pr comment
// --body-file -`).
type ExportCmd struct {
	ID      string   `arg:"" help:"Id of the session."`
	Format  string   `help:"html: the self-contained report; md: the same as Markdown, for a pull request or an issue." enum:"html,md" default:"html"`
	Outline bool     `help:"With --format md: each step its line alone, with its error and notes."`
	Images  bool     `help:"Put the steps' images in the report (redaction cannot see into images)."`
	Keep    []string `help:"Leave unmasked a value only the generic rule matched, by its placeholder in the export panel ([generic-secret-1]); repeatable." placeholder:"PLACEHOLDER"`
	Out     string   `help:"Write the report to this file (default: standard output, when it is not a terminal)." short:"o" placeholder:"FILE"`
	DB      string   `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run writes the report from the store file directly, beside a running
// server, masked and scanned as the download is. A report cut short by a
// failure is not left behind as a file.
func (c *ExportCmd) Run(e *env) error {
	if c.Outline && c.Format != "md" {
		return errors.New("--outline is for a Markdown report: add --format md")
	}
	if isPostgresURL(c.DB) {
		return errors.New("export reads a local store file; a team server's sessions download from its app")
	}
	if c.Out == "" && isTerminal(e.stdout) {
		// The report holds the agents' text as recorded, which may hold
		// terminal escape sequences.
		return errors.New("the report is a file: give --out FILE, or pipe it")
	}
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	o := handlers.ExportOptions{Format: c.Format, Keep: c.Keep, Images: c.Images, Outline: c.Outline}
	if c.Out == "" {
		return exportError(c.ID, handlers.WriteExport(e.ctx, st, c.ID, o, e.stdout, func(string, string) {}))
	}
	f, err := os.CreateTemp(filepath.Dir(c.Out), ".export-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	if err := exportError(c.ID, handlers.WriteExport(e.ctx, st, c.ID, o, f, func(string, string) {})); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), c.Out); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stderr, "wrote %s\n", c.Out)
	return err
}

// exportError says what an export's failure means to whoever ran it.
func exportError(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notStored(id, err)
	}
	return fmt.Errorf("export of session %s: %w", id, err)
}
