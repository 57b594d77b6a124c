package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
	"github.com/agentreview/service/store"
)

// ImportCmd is `service import <agent> [PATH...] [--db PATH] [--rescan]`.
type ImportCmd struct {
	ClaudeCode ImportClaudeCodeCmd `cmd:"" name:"claude-code" help:"Import Claude Code transcripts (default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects and ~/.config/claude/projects)."`
	Cline      ImportClineCmd      `cmd:"" help:"Import Cline tasks and sessions (default: ~/.cline/data/{sessions,tasks} and the extension's task folders in VS Code, its Insiders build, VSCodium, Cursor and Windsurf, and in ~/.vscode-server and ~/.vscode-remote)."`
	Codex      ImportCodexCmd      `cmd:"" help:"Import Codex CLI rollouts (default: $CODEX_HOME/sessions and archived_sessions, else those of ~/.codex)."`
	GeminiCLI  ImportGeminiCLICmd  `cmd:"" name:"gemini-cli" help:"Import Gemini CLI sessions (default: $GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp)."`
	CopilotCLI ImportCopilotCLICmd `cmd:"" name:"copilot-cli" help:"Import GitHub Copilot CLI sessions (default: $COPILOT_HOME, else ~/.copilot: session-state and history-session-state)."`
	Opencode   ImportOpencodeCmd   `cmd:"" help:"Import opencode sessions from its database and storage (default: $OPENCODE_DB and $XDG_DATA_HOME/opencode, else ~/.local/share/opencode)."`
	QwenCode   ImportQwenCodeCmd   `cmd:"" name:"qwen-code" help:"Import Qwen Code chat recordings (default: $QWEN_RUNTIME_DIR/projects, else $QWEN_HOME/projects, else ~/.qwen/projects)."`
	Aider      ImportAiderCmd      `cmd:"" help:"Import Aider's chat history, a session per run (default: .aider.chat.history.md in the current folder; name other repositories' histories or folders as PATH)."`
	Crush      ImportCrushCmd      `cmd:"" help:"Import Crush sessions from each project's .crush/crush.db (default: the projects in Crush's projects.json, in $CRUSH_GLOBAL_DATA, else $XDG_DATA_HOME/crush, else ~/.local/share/crush; and ./.crush)."`
}

// importFlags are what every import takes.
type importFlags struct {
	Paths  []string `arg:"" optional:"" name:"path" type:"path" help:"Files or folders to read instead of the agent's own folders."`
	DB     string   `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
	Rescan bool     `help:"Read every file again, even those unchanged since the last import."`
}

// ImportClaudeCodeCmd is `service import claude-code`.
type ImportClaudeCodeCmd struct {
	Flags importFlags `embed:""`
}

// ImportClineCmd is `service import cline`.
type ImportClineCmd struct {
	Flags importFlags `embed:""`
}

// ImportCodexCmd is `service import codex`.
type ImportCodexCmd struct {
	Flags importFlags `embed:""`
}

// ImportGeminiCLICmd is `service import gemini-cli`.
type ImportGeminiCLICmd struct {
	Flags importFlags `embed:""`
}

// ImportCopilotCLICmd is `service import copilot-cli`.
type ImportCopilotCLICmd struct {
	Flags importFlags `embed:""`
}

// ImportOpencodeCmd is `service import opencode`.
type ImportOpencodeCmd struct {
	Flags importFlags `embed:""`
}

// ImportQwenCodeCmd is `service import qwen-code`.
type ImportQwenCodeCmd struct {
	Flags importFlags `embed:""`
}

// ImportAiderCmd is `service import aider`.
type ImportAiderCmd struct {
	Flags importFlags `embed:""`
}

// ImportCrushCmd is `service import crush`.
type ImportCrushCmd struct {
	Flags importFlags `embed:""`
}

// importCacheKiB is the SQLite page cache of each of the import's
// connections, per file: an import writes new rows, which a cache of
// SQLite's default size (2,000 KiB) speeds up by no measured amount, and
// pure-Go SQLite holds it outside the Go heap, where the import's memory
// limit does not reach (docs/performance.md, "Peak memory of one 210 MB
// transcript").
const importCacheKiB = 100

// Run imports Claude Code transcripts.
func (c *ImportClaudeCodeCmd) Run(e *env) error {
	return runImport(e, claudecode.Agent, c.Flags, claudeCodeFolders)
}

// Run imports Cline tasks.
func (c *ImportClineCmd) Run(e *env) error {
	return runImport(e, cline.Agent, c.Flags, clineFolders)
}

// Run imports Codex rollouts.
func (c *ImportCodexCmd) Run(e *env) error {
	return runImport(e, codex.Agent, c.Flags, codexFolders)
}

// Run imports Gemini CLI sessions.
func (c *ImportGeminiCLICmd) Run(e *env) error {
	return runImport(e, geminicli.Agent, c.Flags, geminiFolders)
}

// Run imports Copilot CLI sessions.
func (c *ImportCopilotCLICmd) Run(e *env) error {
	return runImport(e, copilotcli.Agent, c.Flags, copilotCLIFolders)
}

// Run imports opencode sessions.
func (c *ImportOpencodeCmd) Run(e *env) error {
	return runImport(e, opencode.Agent, c.Flags, opencodeFolders)
}

// Run imports Qwen Code sessions.
func (c *ImportQwenCodeCmd) Run(e *env) error {
	return runImport(e, qwencode.Agent, c.Flags, qwenCodeFolders)
}

// Run imports Aider's chat histories.
func (c *ImportAiderCmd) Run(e *env) error {
	return runImport(e, aider.Agent, c.Flags, aiderFolders)
}

// Run imports Crush sessions.
func (c *ImportCrushCmd) Run(e *env) error {
	return runImport(e, crush.Agent, c.Flags, crushFolders)
}

// runImport reads the given paths (or the agent's own folders that exist)
// and writes every session through the store's Apply. On a terminal it
// redraws one progress line; the summary line is always printed last. When
// the paths hold none of the agent's files it fails, naming the files and
// layout it looks for.
func runImport(e *env, agent adapters.Agent, f importFlags, folders func() ([]string, error)) error {
	roots := f.Paths
	if len(roots) == 0 {
		defaults, err := folders()
		if err != nil {
			return err
		}
		for _, d := range defaults {
			if _, err := os.Stat(d); err == nil {
				roots = append(roots, d)
			}
		}
		if len(roots) == 0 {
			fmt.Fprintf(e.stdout, "no %s files: none of %s exists\n", agent.Kind, strings.Join(defaults, ", "))
			return nil
		}
	}
	st, _, err := openStore(e, f.DB, store.CacheSize(importCacheKiB))
	if err != nil {
		return err
	}
	defer st.Close()
	defer adapters.LimitMemory()()
	im := &adapters.Importer{Store: st, Rescan: f.Rescan}
	tty := isTerminal(e.stdout)
	if tty {
		var last time.Time
		im.Progress = func(p adapters.Progress) {
			if time.Since(last) < 100*time.Millisecond && p.Files < p.FilesTotal {
				return
			}
			last = time.Now()
			fmt.Fprintf(e.stdout, "\rimporting %s: files %d/%d, %d sessions, %d steps written\x1b[K", agent.Kind, p.Files, p.FilesTotal, p.Sessions, p.Steps)
		}
	}
	sum, err := im.Run(e.ctx, agent, roots)
	if tty {
		fmt.Fprint(e.stdout, "\r\x1b[K")
	}
	fmt.Fprintln(e.stdout, terminalSafe(sum.String())) // its problems name the agent's files and folders
	if err == nil && sum.Files == 0 {
		return fmt.Errorf("no %s files found in %s: it looks for %s", agent.Kind, strings.Join(roots, ", "), agent.Layout)
	}
	return err
}

// isTerminal reports whether w (an output, or stdin) is a terminal: where
// a progress line that redraws itself helps rather than litters, and where
// a person can answer a question.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// envOrHome is a folder an agent's environment variable names (dir), else
// the folder under in the home folder: the one rule of the default folders
// below.
func envOrHome(dir string, under ...string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder: %w", err)
	}
	return filepath.Join(append([]string{home}, under...)...), nil
}

// claudeCodeFolders is where Claude Code keeps transcripts:
// $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects and the projects of
// its folder in the XDG configuration folder ($XDG_CONFIG_HOME/claude,
// else ~/.config/claude), where some versions write them (ccusage reads
// both).
func claudeCodeFolders() ([]string, error) {
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return []string{filepath.Join(dir, "projects")}, nil
	}
	claude, err := envOrHome("", ".claude")
	if err != nil {
		return nil, err
	}
	config, err := envOrHome(os.Getenv("XDG_CONFIG_HOME"), ".config")
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(claude, "projects"), filepath.Join(config, "claude", "projects")}, nil
}

// clineFolders is where Cline keeps tasks: its data folder ($CLINE_DATA_DIR,
// else $CLINE_DIR/data, else ~/.cline/data) with the SDK sessions and the
// task folders, and the extension's task folders in each editor of the VS
// Code family (clineEditors), in the user's configuration folder
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config, ~/Library/Application
// Support, %AppData%) and in a remote server's or Codespace's data folder.
func clineFolders() ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("find the home folder: %w", err)
	}
	data := filepath.Join(home, ".cline", "data")
	if dir := os.Getenv("CLINE_DATA_DIR"); dir != "" {
		data = dir
	} else if dir := os.Getenv("CLINE_DIR"); dir != "" {
		data = filepath.Join(dir, "data")
	}
	folders := []string{filepath.Join(data, "sessions"), filepath.Join(data, "tasks")}
	tasks := filepath.Join("globalStorage", "saoudrizwan.claude-dev", "tasks")
	if config, err := os.UserConfigDir(); err == nil {
		for _, editor := range clineEditors {
			folders = append(folders, filepath.Join(config, editor, "User", tasks))
		}
	}
	for _, server := range []string{".vscode-server", ".vscode-remote"} {
		folders = append(folders, filepath.Join(home, server, "data", "User", tasks))
	}
	return folders, nil
}

// clineEditors are the editors of the VS Code family Cline runs in, by the
// name of their folder in the user's configuration folder.
var clineEditors = []string{"Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"}

// codexFolders is where Codex keeps rollouts, in $CODEX_HOME, else
// ~/.codex: sessions, then archived_sessions, where Codex moves the
// rollout of a session archived (it is never written again there).
func codexFolders() ([]string, error) {
	dir, err := envOrHome(os.Getenv("CODEX_HOME"), ".codex")
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(dir, "sessions"), filepath.Join(dir, "archived_sessions")}, nil
}

// geminiFolders is where Gemini CLI keeps sessions, under its home
// ($GEMINI_CLI_HOME, else the home folder): .gemini/tmp/<project>/chats.
func geminiFolders() ([]string, error) {
	home, err := envOrHome(os.Getenv("GEMINI_CLI_HOME"))
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(home, ".gemini", "tmp")}, nil
}

// copilotCLIFolders is where Copilot CLI keeps sessions: session-state
// (events.jsonl logs) and history-session-state (older JSON files) in
// $COPILOT_HOME, else ~/.copilot.
func copilotCLIFolders() ([]string, error) {
	dir, err := envOrHome(os.Getenv("COPILOT_HOME"), ".copilot")
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(dir, "session-state"), filepath.Join(dir, "history-session-state")}, nil
}

// opencodeFolders is where opencode keeps sessions: its data folder
// ($XDG_DATA_HOME/opencode, else ~/.local/share/opencode) holding
// opencode.db (1.2 and later) and storage/ (up to 1.1), and the database
// $OPENCODE_DB names (a relative name is in the data folder).
func opencodeFolders() ([]string, error) {
	data, err := envOrHome(os.Getenv("XDG_DATA_HOME"), ".local", "share")
	if err != nil {
		return nil, err
	}
	data = filepath.Join(data, "opencode")
	folders := []string{data}
	if db := os.Getenv("OPENCODE_DB"); db != "" && db != ":memory:" {
		if !filepath.IsAbs(db) {
			db = filepath.Join(data, db)
		}
		folders = append(folders, db)
	}
	return folders, nil
}

// qwenCodeFolders is where Qwen Code keeps its chat recordings,
// projects/<project>/chats/ in its runtime folder: $QWEN_RUNTIME_DIR, else
// $QWEN_HOME, else ~/.qwen.
func qwenCodeFolders() ([]string, error) {
	dir, err := envOrHome(cmp.Or(os.Getenv("QWEN_RUNTIME_DIR"), os.Getenv("QWEN_HOME")), ".qwen")
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(dir, "projects")}, nil
}

// aiderFolders is where Aider's history is found by default: Aider writes
// it in the root of the repository it runs in, so the current folder's.
func aiderFolders() ([]string, error) {
	path, err := filepath.Abs(aider.HistoryFile)
	if err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// crushFolders is where Crush's sessions are found: its global data folder
// (crush.DataHome), whose projects.json lists every project's data dir, and
// the .crush folder of the working directory, for a Crush that kept no
// such list.
func crushFolders() ([]string, error) {
	home, err := crush.DataHome()
	if err != nil {
		return nil, fmt.Errorf("find Crush's data folder: %w", err)
	}
	here, err := filepath.Abs(".crush")
	if err != nil {
		return nil, err
	}
	return []string{home, here}, nil
}
