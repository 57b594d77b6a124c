package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fakeBinary makes serviceBinary name bin for the test.
func fakeBinary(t *testing.T, bin string) {
	t.Helper()
	old := serviceBinary
	serviceBinary = func() (string, error) { return bin, nil }
	t.Cleanup(func() { serviceBinary = old })
}

// runHooks runs `service hooks <sub> --settings path` and returns stdout.
func runHooks(t *testing.T, sub, path string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"hooks", sub, "--settings", path}, &out, &errOut)
	return out.String(), err
}

func mustRunHooks(t *testing.T, sub, path string) string {
	t.Helper()
	out, err := runHooks(t, sub, path)
	if err != nil {
		t.Fatalf("hooks %s = %v; want nil", sub, err)
	}
	return out
}

func mustDecode(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", path, err, b)
	}
	return v
}

// otherSettings has hooks of another tool on two of our events and one
// other, settings of its own, and env of its own.
const otherSettings = `{
  "model": "opus",
  "permissions": {"allow": ["Bash(go test:*)"], "deny": []},
  "env": {"FOO": "bar", "OTEL_METRIC_EXPORT_INTERVAL": "10000"},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "/usr/local/bin/notify done", "timeout": 5}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/guard.sh"}]}]
  },
  "statusLine": {"type": "command", "command": "x <y> & z", "padding": 0.5}
}
`

func TestHooksInstallKeepsOthersAndUninstallRestores(t *testing.T) {
	dir := t.TempDir()
	bin := "/opt/agent review/bin/service"
	fakeBinary(t, bin)
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte(otherSettings), 0o640); err != nil {
		t.Fatal(err)
	}
	var original map[string]any
	if err := json.Unmarshal([]byte(otherSettings), &original); err != nil {
		t.Fatal(err)
	}

	mustRunHooks(t, "install", path)
	got := mustDecode(t, path)
	for _, key := range []string{"model", "permissions", "statusLine"} {
		if !reflect.DeepEqual(got[key], original[key]) {
			t.Errorf("after install %s = %v; want %v", key, got[key], original[key])
		}
	}
	env := got["env"].(map[string]any)
	for k, v := range map[string]string{
		"FOO": "bar", "OTEL_METRIC_EXPORT_INTERVAL": "10000",
		"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
	} {
		if env[k] != v {
			t.Errorf("after install env[%s] = %v; want %q", k, env[k], v)
		}
	}
	hooks := got["hooks"].(map[string]any)
	wantCmd := `'/opt/agent review/bin/service' hook`
	for _, event := range []string{"SessionStart", "Stop", "SubagentStop", "SessionEnd"} {
		if n := countCommand(hooks[event], wantCmd); n != 1 {
			t.Errorf("after install %s runs %q %d times; want once", event, wantCmd, n)
		}
	}
	for event, cmd := range map[string]string{"Stop": "/usr/local/bin/notify done", "SessionStart": "echo hi", "PreToolUse": "/opt/guard.sh"} {
		if n := countCommand(hooks[event], cmd); n != 1 {
			t.Errorf("after install %s runs %q %d times; want once (kept)", event, cmd, n)
		}
	}
	if strings.Contains(mustRead(t, path), `\u003c`) {
		t.Errorf("install escaped < and > in other settings:\n%s", mustRead(t, path))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("after install mode = %v; want the file's own 0640", fi.Mode().Perm())
	}
	if b := mustRead(t, path+".bak-service"); b != otherSettings {
		t.Errorf("backup = %q; want the original file", b)
	}

	// A second install changes nothing, byte for byte.
	first := mustRead(t, path)
	if out := mustRunHooks(t, "install", path); !strings.Contains(out, "nothing changed") {
		t.Errorf("second install printed %q; want nothing changed", out)
	}
	if second := mustRead(t, path); first != second {
		t.Errorf("second install changed the file:\n%s\nto\n%s", first, second)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("folder holds %d files; want settings and one backup (no temp files left)", len(entries))
	}

	mustRunHooks(t, "uninstall", path)
	if got := mustDecode(t, path); !reflect.DeepEqual(got, original) {
		t.Errorf("after uninstall settings = %v; want the original %v", got, original)
	}
	if b := mustRead(t, path+".bak-service"); b != otherSettings {
		t.Errorf("after uninstall the backup = %q; want still the original", b)
	}
}

func TestHooksInstallReplacesMovedBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	fakeBinary(t, "/old/place/service")
	mustRunHooks(t, "install", path)
	fakeBinary(t, "/new/place/service")
	mustRunHooks(t, "install", path)
	hooks := mustDecode(t, path)["hooks"].(map[string]any)
	if n := countCommand(hooks["Stop"], "/old/place/service hook"); n != 0 {
		t.Errorf("Stop still runs the old binary %d times; want 0", n)
	}
	if n := countCommand(hooks["Stop"], "/new/place/service hook"); n != 1 {
		t.Errorf("Stop runs the new binary %d times; want 1", n)
	}
}

func TestHooksUninstallKeepsChangedEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	fakeBinary(t, "/bin/service")
	mustRunHooks(t, "install", path)
	s := mustDecode(t, path)
	s["env"].(map[string]any)["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector:4318"
	b, _ := json.Marshal(s)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRunHooks(t, "uninstall", path)
	got := mustDecode(t, path)
	want := map[string]any{"env": map[string]any{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after uninstall settings = %v; want %v (a value the user changed stays)", got, want)
	}
}

func TestHooksRefusesInvalidJSON(t *testing.T) {
	fakeBinary(t, "/bin/service")
	for name, body := range map[string]string{
		"truncated":        `{"hooks": {`,
		"trailing":         `{"a": 1} x`,
		"array":            `[1, 2]`,
		"empty":            ``,
		"hooks list":       `{"hooks": []}`,
		"env string":       `{"env": "x"}`,
		"event not a list": `{"hooks": {"Stop": {"command": "x"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "settings.json")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, sub := range []string{"install", "uninstall"} {
				_, err := runHooks(t, sub, path)
				if err == nil || !strings.Contains(err.Error(), "left untouched") {
					t.Errorf("hooks %s on %q = %v; want an error saying the file is left untouched", sub, body, err)
				}
				if got := mustRead(t, path); got != body {
					t.Errorf("hooks %s changed the invalid file to %q", sub, got)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("folder holds %d files; want only the settings (no backup, no temp file)", len(entries))
			}
		})
	}
}

func TestHooksInstallCreatesMissingFile(t *testing.T) {
	config := filepath.Join(t.TempDir(), "claude")
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	fakeBinary(t, "/bin/service")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"hooks", "install"}, &out, &errOut); err != nil {
		t.Fatalf("hooks install = %v", err)
	}
	path := filepath.Join(config, "settings.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("hooks install did not create %s: %v", path, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new settings mode = %v; want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(config)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("new folder mode = %v; want 0700", di.Mode().Perm())
	}
	if _, err := os.Stat(path + ".bak-service"); err == nil {
		t.Errorf("a backup was made of a file that did not exist")
	}
	if n := countCommand(mustDecode(t, path)["hooks"].(map[string]any)["SessionEnd"], "/bin/service hook"); n != 1 {
		t.Errorf("SessionEnd runs our hook %d times; want 1", n)
	}
	// Uninstall of a file holding only ours leaves an empty object.
	mustRunHooks(t, "uninstall", path)
	if got := mustDecode(t, path); len(got) != 0 {
		t.Errorf("after uninstall settings = %v; want {}", got)
	}
}

func TestIsOurHook(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{
		{"/usr/local/bin/service hook", true},
		{"'/a b/service' hook", true},
		{"service hook", true},
		{"/usr/local/bin/service hooks", false},
		{"/usr/local/bin/other hook", false},
		{"/usr/local/bin/service hook --db x", false},
		{"/usr/local/bin/myservice hook", false},
		{`'/R&D/it'\''s/service' hook`, true},
		{`/a\ b/service hook`, true},
		{`"/a b/service" hook`, true},
		{"notify; /usr/local/bin/service hook", false},
		{"'/unclosed/service hook", false},
	} {
		if got := isOurHook(tc.cmd, "service"); got != tc.want {
			t.Errorf("isOurHook(%q) = %v; want %v", tc.cmd, got, tc.want)
		}
	}
}

// countCommand counts the hooks running cmd in an event's groups.
func countCommand(groups any, cmd string) int {
	n := 0
	list, _ := groups.([]any)
	for _, g := range list {
		gm, _ := g.(map[string]any)
		hooks, _ := gm["hooks"].([]any)
		for _, h := range hooks {
			if hm, _ := h.(map[string]any); hm["command"] == cmd {
				n++
			}
		}
	}
	return n
}

// TestHooksInstallQuotesAnyPath installs from a binary under a folder named
// with each shell metacharacter, runs the written command through sh -c,
// and checks that it ran that binary with the one argument hook; uninstall
// then finds and removes it.
func TestHooksInstallQuotesAnyPath(t *testing.T) {
	for _, c := range []string{"&", ";", "(", ")", "|", "<", ">", "$", "`", `\`, `"`, "'", " ", "*", "?", "[", "]", "#", "~", "\n", "\t", "!", "{", "}", "a;b", "$(touch pwned)", "'; exit 1; '"} {
		t.Run(strconv.Quote(c), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "x"+c+"y")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// x_y matches x*y and x?y as a glob.
			if err := os.MkdirAll(filepath.Join(root, "x_y"), 0o755); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(dir, "service")
			script := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$#\" \"$@\" > \"$HOOK_OUT\"\n"
			for _, p := range []string{bin, filepath.Join(root, "x_y", "service")} {
				if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			fakeBinary(t, bin)
			path := filepath.Join(root, "settings.json")
			mustRunHooks(t, "install", path)
			hooks := mustDecode(t, path)["hooks"].(map[string]any)
			cmd := hooks["Stop"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)["command"].(string)

			out := filepath.Join(root, "out")
			sh := exec.Command("sh", "-c", cmd)
			sh.Dir = root
			sh.Env = append(os.Environ(), "HOOK_OUT="+out)
			if b, err := sh.CombinedOutput(); err != nil || len(b) > 0 {
				t.Fatalf("sh -c %q = %v, output %q; want the binary run silently", cmd, err, b)
			}
			got, err := os.ReadFile(out)
			if want := bin + "\n1\nhook\n"; err != nil || string(got) != want {
				t.Errorf("sh -c %q ran with $0, $#, $@ = %q, %v; want %q", cmd, got, err, want)
			}
			if _, err := os.Stat(filepath.Join(root, "pwned")); err == nil {
				t.Errorf("sh -c %q ran a command substitution", cmd)
			}

			mustRunHooks(t, "uninstall", path)
			if _, ok := mustDecode(t, path)["hooks"]; ok {
				t.Errorf("after uninstall %s still has hooks; want ours (%q) gone", path, cmd)
			}
		})
	}
}
