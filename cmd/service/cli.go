package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/agentreview/service/internal/term"
	"github.com/agentreview/service/store"
	"github.com/alecthomas/kong"
)

// CLI is every command of the service.
type CLI struct {
	Serve   ServeCmd   `cmd:"" help:"Run the server: ingest API, read routes, live stream and review app on 127.0.0.1."`
	Delete  DeleteCmd  `cmd:"" help:"Delete a session for good (works while the server runs)."`
	Share   ShareCmd   `cmd:"" help:"Share sessions with a team server, masked as the export masks them; only what changed since the last share is sent."`
	Search  SearchCmd  `cmd:"" help:"Search every stored session (works while the server runs)."`
	Export  ExportCmd  `cmd:"" help:"Write a session's redacted report, HTML or Markdown, as the export panel downloads it (works while the server runs)."`
	Resume  ResumeCmd  `cmd:"" help:"Reopen a session in its agent, in its workspace, as the session page's resume command does."`
	Reindex ReindexCmd `cmd:"" help:"Rebuild the search index from the stored sessions."`
	Import  ImportCmd  `cmd:"" help:"Import sessions from an agent's own files (incremental: unchanged files are skipped)."`
	Demo    DemoCmd    `cmd:"" help:"Run the review app on a temporary, read-only store of example sessions."`
	Dev     DevCmd     `cmd:"" help:"Run the UI development server: pages from a running core, /api proxied to it."`
	Capture CaptureCmd `cmd:"" help:"Capture live sessions: Claude Code telemetry on 127.0.0.1, and the files of Claude Code, Cline, Codex, Gemini CLI, Copilot CLI, opencode, Qwen Code and Crush as they change."`
	Hook    HookCmd    `cmd:"" help:"What Claude Code's hooks run (hook JSON on stdin): brings the session up to date. Always exits 0, prints nothing."`
	Hooks   HooksCmd   `cmd:"" help:"Install or uninstall the service's hooks and telemetry settings in Claude Code's settings file."`
	Usage   UsageCmd   `cmd:"" help:"Print token usage and cost by day, week, month or session (estimated cost marked ≈)."`
	Secrets SecretsCmd `cmd:"" help:"List the secrets (keys, tokens, passwords) the stored sessions hold, as the export finds and masks them: which keys to rotate (works while the server runs)."`
	Team    TeamCmd    `cmd:"" help:"Administer a team server: push tokens of its users (PostgreSQL, --db postgres://...)."`
}

// env is what every command runs with.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// exitCode carries kong's wish to exit (after --help) out of Parse.
type exitCode int

// run parses args and runs the command, with the process's stdin; main
// only calls this, so the whole CLI runs inside a test.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWithStdin(ctx, args, os.Stdin, stdout, stderr)
}

// runWithStdin is run with stdin given, for the commands that read it.
func runWithStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	var cli CLI
	parser, err := kong.New(&cli,
		kong.Name("service"),
		kong.Description("Local review service for the sessions of AI coding agents."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.UsageOnError(),
	)
	if err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			code, ok := v.(exitCode)
			if !ok {
				panic(v)
			}
			if code != 0 {
				err = fmt.Errorf("exit %d", code)
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		return err
	}
	return kctx.Run(&env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr})
}

// serviceDir is ~/.service, where the store and the token live by default.
func serviceDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder: %w", err)
	}
	return filepath.Join(home, ".service"), nil
}

// openStore opens the store file db names (storePath) and returns it with
// its path. A build of the search index (the first Open of a store
// migration 008 left unindexed, reindex) shows its progress on stderr
// when stderr is a terminal (indexProgress).
func openStore(e *env, db string, opts ...store.Option) (*store.Store, string, error) {
	path, err := storePath(db)
	if err != nil {
		return nil, "", err
	}
	opts = append(opts, store.OnIndexProgress(indexProgress(e.stderr)))
	st, err := store.Open(e.ctx, path, opts...)
	return st, path, err
}

// notStored says a read of session id found no such session as a command
// says it, and returns any other error as it is.
func notStored(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no session %q in the store", id)
	}
	return err
}

// storePath returns the --db path, or ~/.service/store.db.
func storePath(db string) (string, error) {
	if db != "" {
		return db, nil
	}
	dir, err := serviceDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "store.db"), nil
}

// terminalSafe puts agent content on one line with no control characters,
// so no escape sequence in it reaches the terminal: its control sequences
// (colours) left out, as the review app shows it (term.Shown), any other
// control character a space.
func terminalSafe(s string) string {
	s, _ = term.Shown(s)
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}
