package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/agentreview/service/internal/shell"
)

// HooksCmd is `service hooks install|uninstall [--settings PATH]`: it puts
// the service's hooks and telemetry settings into Claude Code's settings
// file, or takes them out again.
type HooksCmd struct {
	Install   HooksInstallCmd   `cmd:"" help:"Add the service's hooks and the telemetry environment to Claude Code's settings (a backup is kept once)."`
	Uninstall HooksUninstallCmd `cmd:"" help:"Take the service's hooks and telemetry environment out of Claude Code's settings; everything else stays."`
}

// settingsFlag is the settings file both subcommands edit.
type settingsFlag struct {
	Settings string `help:"Claude Code settings file (default $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json)." type:"path" placeholder:"PATH"`
}

// HooksInstallCmd is `service hooks install`.
type HooksInstallCmd struct {
	settingsFlag `embed:""`
}

// HooksUninstallCmd is `service hooks uninstall`.
type HooksUninstallCmd struct {
	settingsFlag `embed:""`
}

// hookEvents are the Claude Code events whose hooks run `service hook`.
var hookEvents = []string{"SessionStart", "Stop", "SubagentStop", "SessionEnd"}

// hookTimeoutSeconds is the timeout Claude Code gives our hook command; the
// command itself gives up after hookTimeout, well before.
const hookTimeoutSeconds = 10

// telemetryEnv is what makes Claude Code send its telemetry to `service
// capture`.
var telemetryEnv = [][2]string{
	{"CLAUDE_CODE_ENABLE_TELEMETRY", "1"},
	{"OTEL_LOGS_EXPORTER", "otlp"},
	{"OTEL_METRICS_EXPORTER", "otlp"},
	{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"},
}

// backupSuffix names the one backup install keeps of the settings file.
const backupSuffix = ".bak-service"

// serviceBinary returns the absolute path of the running binary; a
// variable so that a test can name a stable path.
var serviceBinary = func() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this program's path: %w", err)
	}
	return filepath.Abs(p)
}

// Run merges the hooks and the telemetry environment into the settings.
func (c *HooksInstallCmd) Run(e *env) error {
	path, err := settingsPath(c.Settings)
	if err != nil {
		return err
	}
	bin, err := serviceBinary()
	if err != nil {
		return err
	}
	changed, err := editSettings(path, true, func(s map[string]any) error {
		return installHooks(s, bin)
	})
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(e.stdout, "%s already has the service's hooks: nothing changed\n", path)
		return nil
	}
	fmt.Fprintf(e.stdout, "installed the service's hooks and telemetry settings in %s (backup: %s)\n", path, path+backupSuffix)
	return nil
}

// Run takes the service's hooks and telemetry environment out.
func (c *HooksUninstallCmd) Run(e *env) error {
	path, err := settingsPath(c.Settings)
	if err != nil {
		return err
	}
	bin, err := serviceBinary()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stdout, "%s does not exist: nothing to uninstall\n", path)
		return nil
	}
	changed, err := editSettings(path, false, func(s map[string]any) error {
		return uninstallHooks(s, filepath.Base(bin))
	})
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(e.stdout, "%s has none of the service's hooks: nothing changed\n", path)
		return nil
	}
	fmt.Fprintf(e.stdout, "removed the service's hooks and telemetry settings from %s\n", path)
	return nil
}

// settingsPath returns --settings, or Claude Code's user settings file.
func settingsPath(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Abs(filepath.Join(dir, "settings.json"))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder: %w", err)
	}
	return filepath.Join(home, ".claude", "settings.json"), nil
}

// editSettings reads the settings file (missing is {} when create is set),
// applies edit, and, only if the decoded settings changed, keeps a backup
// of the old file once and replaces the file atomically with its mode
// kept. A file that is not a JSON object is refused and left as it was.
func editSettings(path string, create bool, edit func(map[string]any) error) (changed bool, err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // replace the file a symlink points at, not the link
	}
	mode := fs.FileMode(0o600)
	old, err := os.ReadFile(path)
	exists := err == nil
	switch {
	case exists:
		fi, err := os.Stat(path)
		if err != nil {
			return false, fmt.Errorf("hooks: %w", err)
		}
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist) && create:
	default:
		return false, fmt.Errorf("hooks: read settings: %w", err)
	}

	settings := map[string]any{}
	if exists {
		if settings, err = decodeSettings(old); err != nil {
			return false, fmt.Errorf("hooks: %s is left untouched: %w", path, err)
		}
	}
	before, _ := decodeSettings(old)
	if err := edit(settings); err != nil {
		return false, fmt.Errorf("hooks: %s is left untouched: %w", path, err)
	}
	if exists && reflect.DeepEqual(before, settings) {
		return false, nil
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return false, fmt.Errorf("hooks: encode settings: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("hooks: %w", err)
	}
	if exists {
		backup := path + backupSuffix
		if _, err := os.Lstat(backup); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(backup, old, mode); err != nil {
				return false, fmt.Errorf("hooks: back up settings: %w", err)
			}
		}
	}
	if err := writeAtomic(path, buf.Bytes(), mode); err != nil {
		return false, fmt.Errorf("hooks: write settings: %w", err)
	}
	return true, nil
}

// decodeSettings reads a settings file that must hold one JSON object.
// Numbers stay as written.
func decodeSettings(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: more than one value")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("not valid JSON: text after the value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// writeAtomic writes b to a temporary file in path's folder and renames it
// over path, so a reader sees the old file or the new one, never half.
func writeAtomic(path string, b []byte, mode fs.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// hookCommand is the command line Claude Code runs for our hooks, which a
// POSIX shell reads: the binary's path quoted (shell.Quote), so any path
// runs as itself.
func hookCommand(bin string) string {
	return shell.Quote(bin) + " hook"
}

// isOurHook reports whether a hook command runs `service hook` of a binary
// with our base name (wherever it was when installed).
func isOurHook(command, base string) bool {
	prog, ok := strings.CutSuffix(strings.TrimSpace(command), " hook")
	if !ok {
		return false
	}
	prog, ok = shell.Unquote(strings.TrimSpace(prog))
	return ok && filepath.Base(prog) == base
}

// installHooks adds our hook to each event unless it is there already
// (a stale one, from a binary since moved, is replaced), and sets the
// telemetry environment.
func installHooks(s map[string]any, bin string) error {
	hooks, err := objectField(s, "hooks")
	if err != nil {
		return err
	}
	env, err := objectField(s, "env")
	if err != nil {
		return err
	}
	cmd := hookCommand(bin)
	base := filepath.Base(bin)
	for _, event := range hookEvents {
		groups, err := hookGroups(hooks, event)
		if err != nil {
			return err
		}
		if hasHook(groups, cmd) {
			continue
		}
		groups = removeOurHooks(groups, base)
		groups = append(groups, map[string]any{
			"hooks": []any{map[string]any{
				"type":    "command",
				"command": cmd,
				"timeout": json.Number(fmt.Sprint(hookTimeoutSeconds)),
			}},
		})
		hooks[event] = groups
	}
	for _, kv := range telemetryEnv {
		env[kv[0]] = kv[1]
	}
	s["hooks"] = hooks
	s["env"] = env
	return nil
}

// uninstallHooks removes our hooks from every event, and each telemetry
// variable that still holds the value install set. A group, event, hooks
// or env object left empty by the removal goes too.
func uninstallHooks(s map[string]any, base string) error {
	if _, ok := s["hooks"]; ok {
		hooks, err := objectField(s, "hooks")
		if err != nil {
			return err
		}
		for event := range hooks {
			groups, err := hookGroups(hooks, event)
			if err != nil {
				return err
			}
			kept := removeOurHooks(groups, base)
			switch {
			case len(kept) == len(groups) && reflect.DeepEqual(kept, groups):
			case len(kept) == 0:
				delete(hooks, event)
			default:
				hooks[event] = kept
			}
		}
		if len(hooks) == 0 {
			delete(s, "hooks")
		}
	}
	if _, ok := s["env"]; ok {
		env, err := objectField(s, "env")
		if err != nil {
			return err
		}
		removed := false
		for _, kv := range telemetryEnv {
			if v, ok := env[kv[0]].(string); ok && v == kv[1] {
				delete(env, kv[0])
				removed = true
			}
		}
		if removed && len(env) == 0 {
			delete(s, "env")
		}
	}
	return nil
}

// objectField returns s[key] as an object, a new one if it is absent.
func objectField(s map[string]any, key string) (map[string]any, error) {
	switch v := s[key].(type) {
	case nil:
		if _, ok := s[key]; ok {
			return nil, fmt.Errorf("%q is null, not an object", key)
		}
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%q is not an object", key)
	}
}

// hookGroups returns an event's matcher groups.
func hookGroups(hooks map[string]any, event string) ([]any, error) {
	switch v := hooks[event].(type) {
	case nil:
		if _, ok := hooks[event]; ok {
			return nil, fmt.Errorf("hooks.%s is null, not a list", event)
		}
		return nil, nil
	case []any:
		return v, nil
	default:
		return nil, fmt.Errorf("hooks.%s is not a list", event)
	}
}

// hasHook reports whether any group runs exactly cmd.
func hasHook(groups []any, cmd string) bool {
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		list, _ := gm["hooks"].([]any)
		for _, h := range list {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); c == cmd {
				return true
			}
		}
	}
	return false
}

// removeOurHooks returns the groups without our hook entries; a group
// left with no hooks is dropped. Groups it does not understand are kept
// as they are.
func removeOurHooks(groups []any, base string) []any {
	var out []any
	for _, g := range groups {
		gm, ok := g.(map[string]any)
		list, isList := gm["hooks"].([]any)
		if !ok || !isList {
			out = append(out, g)
			continue
		}
		var kept []any
		for _, h := range list {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); isOurHook(c, base) {
				continue
			}
			kept = append(kept, h)
		}
		switch {
		case len(kept) == len(list):
			out = append(out, g)
		case len(kept) > 0:
			ng := make(map[string]any, len(gm))
			for k, v := range gm {
				ng[k] = v
			}
			ng["hooks"] = kept
			out = append(out, ng)
		}
	}
	return out
}
