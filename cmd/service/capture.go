package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/capture"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
	"github.com/agentreview/service/store"
)

// CaptureCmd is `service capture [--db PATH] [--otlp-port N]`.
type CaptureCmd struct {
	DB       string `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
	OTLPPort int    `name:"otlp-port" help:"Port on 127.0.0.1 of the OTLP/HTTP receiver for Claude Code's telemetry." default:"4318"`
}

// Run captures until the context ends (SIGINT or SIGTERM): the OTLP
// receiver and the watchers, in this process, beside any server that
// reads the same store.
func (c *CaptureCmd) Run(e *env) error {
	dbPath, err := storePath(c.DB)
	if err != nil {
		return err
	}
	claude, err := claudeCodeFolders()
	if err != nil {
		return err
	}
	cline, err := clineFolders()
	if err != nil {
		return err
	}
	codexDirs, err := codexFolders()
	if err != nil {
		return err
	}
	gemini, err := geminiFolders()
	if err != nil {
		return err
	}
	copilot, err := copilotCLIFolders()
	if err != nil {
		return err
	}
	opencodeDirs, err := opencodeFolders()
	if err != nil {
		return err
	}
	qwen, err := qwenCodeFolders()
	if err != nil {
		return err
	}
	st, err := store.Open(e.ctx, dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.OTLPPort)))
	if err != nil {
		return fmt.Errorf("listen for telemetry: %w (another capture running? use --otlp-port)", err)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	// opencode's data folder only: a $OPENCODE_DB elsewhere may sit in a
	// folder too large to watch (import reads it).
	// Crush: the data dir of each project it has run in, as its
	// projects.json lists them, a new one as it is added. Aider: the
	// repositories whose chat histories were imported.
	// Codex: its sessions folder (an archived session is never written).
	codexDirs = codexDirs[:1]
	roots := map[string][]string{codex.Kind: codexDirs, geminicli.Kind: gemini, copilotcli.Kind: copilot, opencode.Kind: opencodeDirs[:1], qwencode.Kind: qwen}
	follow := map[string]func() []string{crush.Kind: crush.ProjectDataDirs, aider.Kind: capture.AiderRepositories(e.ctx, st)}
	cp := &capture.Capture{Store: st, ClaudeRoots: claude, ClineRoots: cline, Roots: roots, Follow: follow, Log: log}
	srv := &http.Server{
		Handler:           cp.Receiver(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(e.stdout, "capturing into %s\n", dbPath)
	fmt.Fprintf(e.stdout, "  telemetry:   http://%s (OTLP/HTTP logs and metrics)\n", ln.Addr())
	fmt.Fprintf(e.stdout, "  claude code: %v\n", claude)
	fmt.Fprintf(e.stdout, "  cline:       %v\n", cline)
	fmt.Fprintf(e.stdout, "  codex:       %v\n", codexDirs)
	fmt.Fprintf(e.stdout, "  gemini cli:  %v\n", gemini)
	fmt.Fprintf(e.stdout, "  copilot cli: %v\n", copilot)
	fmt.Fprintf(e.stdout, "  opencode:    %v\n", opencodeDirs[:1])
	// Crush's projects and the stored sessions' workspaces are the agents'
	// paths: terminalSafe.
	fmt.Fprintf(e.stdout, "  crush:       %s and each project Crush adds to its projects.json\n", terminalSafe(fmt.Sprint(crush.ProjectDataDirs())))
	fmt.Fprintf(e.stdout, "  qwen code:   %v\n", qwen)
	fmt.Fprintf(e.stdout, "  aider:       %s and each repository imported or worked in from now on\n", terminalSafe(fmt.Sprint(follow[aider.Kind]())))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	captured := make(chan error, 1)
	go func() { captured <- cp.Run(ctx) }()
	var serveErr, captureErr error
	select {
	case serveErr = <-served:
		cancel()
		captureErr = <-captured
	case captureErr = <-captured:
	case <-e.ctx.Done():
		captureErr = <-captured
	}
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	srv.Shutdown(shutdown)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	if captureErr != nil {
		return captureErr
	}
	fmt.Fprintln(e.stdout, "capture stopped")
	return nil
}
