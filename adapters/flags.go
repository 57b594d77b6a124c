package adapters

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
)

// Flag kinds the adapters set.
const (
	FlagDangerousCommand = "dangerous_command"
	FlagFailed           = "failed"
	FlagRejected         = "rejected"
	FlagSecretInOutput   = "secret_in_output"
	FlagDeadEndEdit      = "dead_end_edit"
)

// FlagStep adds the flags a step earns on its own: a secret in its output,
// a dangerous command (root is the session's workspace root, used to tell
// a deletion inside the workspace from one outside), a rejection, a
// failure. A flag of a kind the step already has is not added again.
func FlagStep(st *store.Step, root string) {
	flagSecrets(st)
	if st.Type == store.TypeCommand && st.Payload.Command != nil {
		cwd := ""
		if st.Payload.Cwd != nil {
			cwd = *st.Payload.Cwd
		}
		if f, ok := DangerousCommand(*st.Payload.Command, root, cwd); ok {
			addFlag(st, f)
		}
	}
	switch {
	case st.Decision == DecisionRejected:
		reason := "rejected by the user"
		if st.Error != nil && st.Error.Message != "" && st.Error.Message != "rejected" {
			reason += ": " + shorten(st.Error.Message)
		}
		addFlag(st, store.Flag{Kind: FlagRejected, Severity: "warn", Reason: reason})
	case st.Outcome == OutcomeFailed:
		reason := "failed"
		if st.Error != nil {
			reason = strings.TrimSpace(st.Error.Type + ": " + shorten(st.Error.Message))
			reason = strings.TrimSuffix(reason, ":")
		}
		addFlag(st, store.Flag{Kind: FlagFailed, Severity: "info", Reason: reason})
	}
}

// flagSecrets marks a step whose output holds a definite secret with the
// flag secret_in_output, naming the rule; the export masks the value.
func flagSecrets(st *store.Step) {
	var out []string
	for _, s := range []*string{st.Payload.Stdout, st.Payload.Stderr} {
		if s != nil {
			out = append(out, *s)
		}
	}
	if st.Type == store.TypeOther && len(st.Payload.Raw) > 0 {
		out = append(out, string(st.Payload.Raw))
	}
	if reason, ok := redact.SecretFlagReason(strings.Join(out, "\n")); ok {
		addFlag(st, store.Flag{Kind: FlagSecretInOutput, Severity: "danger", Reason: reason})
	}
}

// FlagDeadEnds marks each edit whose change a later edit of the same file
// undoes exactly (its old string is this edit's new string and the other
// way round) with dead_end_edit. Steps must be in session order and
// numbered (Seq), as Split leaves them.
func FlagDeadEnds(steps []store.Step) {
	type change struct{ path, old, new string }
	later := map[change][]int{} // each change's step indexes, in order
	for i, st := range steps {
		if c, ok := editChange(st); ok {
			later[change{c[0], c[1], c[2]}] = append(later[change{c[0], c[1], c[2]}], i)
		}
	}
	for i := range steps {
		c, ok := editChange(steps[i])
		if !ok {
			continue
		}
		for _, j := range later[change{c[0], c[2], c[1]}] {
			if j > i {
				addFlag(&steps[i], store.Flag{Kind: FlagDeadEndEdit, Severity: "info",
					Reason: fmt.Sprintf("reverted by the edit at step %d", steps[j].Seq)})
				break
			}
		}
	}
}

// editChange returns an edit's path, old and new strings, when it is a
// real change of part of a file.
func editChange(st store.Step) ([3]string, bool) {
	p := st.Payload
	if st.Type != store.TypeEdit || p.Path == "" || p.OldString == nil || p.NewString == nil ||
		*p.OldString == *p.NewString || (p.IsFullWrite != nil && *p.IsFullWrite) {
		return [3]string{}, false
	}
	return [3]string{p.Path, *p.OldString, *p.NewString}, true
}

func addFlag(st *store.Step, f store.Flag) {
	for _, g := range st.Flags {
		if g.Kind == f.Kind {
			return
		}
	}
	st.Flags = append(st.Flags, f)
}

func shorten(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// substituted is a shell running what curl or wget fetched, without a pipe:
// bash <(curl ...), sh -c "$(curl ...)".
var substituted = regexp.MustCompile(`\b(sh|bash|zsh)\b[^|;&]*(<\(|\$\()\s*(curl|wget)\b`)

// DangerousCommand reports whether a shell command does something a
// reviewer should see: rm -rf outside the workspace root (or of /, ~ or
// $HOME), a download piped to a shell, a forced git push, chmod 777, sudo.
// cwd is where the command ran, when known; relative paths resolve
// against it, else against root. The flag's reason names every pattern
// found; its severity is the worst of them.
func DangerousCommand(command, root, cwd string) (store.Flag, bool) {
	var reasons []string
	danger := false
	add := func(reason string, isDanger bool) {
		for _, r := range reasons {
			if r == reason {
				return
			}
		}
		reasons = append(reasons, reason)
		danger = danger || isDanger
	}
	if !path.IsAbs(root) {
		root = ""
	}
	if !path.IsAbs(cwd) {
		cwd = root
	}
	scanCommand(command, root, cwd, add, 0)
	if substituted.MatchString(command) {
		add("runs a downloaded script (curl or wget into a shell)", true)
	}
	if len(reasons) == 0 {
		return store.Flag{}, false
	}
	sev := "warn"
	if danger {
		sev = "danger"
	}
	return store.Flag{Kind: FlagDangerousCommand, Severity: sev, Reason: strings.Join(reasons, "; ")}, true
}

func scanCommand(command, root, cwd string, add func(string, bool), depth int) {
	if depth > 3 {
		return
	}
	for _, pipeline := range shellSplit(command) {
		for k, words := range pipeline {
			words, sudo := unwrap(words)
			if sudo {
				add("sudo: runs as root", false)
			}
			if len(words) == 0 {
				continue
			}
			name := path.Base(words[0])
			switch name {
			case "sh", "bash", "zsh", "dash":
				if k > 0 {
					prev, _ := unwrap(pipeline[k-1])
					if len(prev) > 0 && (path.Base(prev[0]) == "curl" || path.Base(prev[0]) == "wget") {
						add(fmt.Sprintf("pipes %s into %s", path.Base(prev[0]), name), true)
					}
				}
				for i := 1; i+1 < len(words); i++ {
					if words[i] == "-c" {
						scanCommand(words[i+1], root, cwd, add, depth+1)
						break
					}
				}
			case "rm":
				checkRm(words[1:], root, cwd, add)
			case "git":
				checkPush(words[1:], add)
			case "chmod":
				for _, w := range words[1:] {
					if w == "777" || w == "0777" || w == "a+rwx" || w == "ugo+rwx" {
						add("chmod 777: makes files writable by everyone", false)
					}
				}
			}
		}
	}
}

// unwrap drops what runs another command unchanged in front of it:
// variable assignments, env, time, nohup, command, exec, and sudo (with
// its options), reporting whether sudo was there.
func unwrap(words []string) ([]string, bool) {
	sudo := false
	for len(words) > 0 {
		w := words[0]
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "="):
			words = words[1:]
		case w == "env" || w == "time" || w == "nohup" || w == "command" || w == "exec":
			words = words[1:]
		case path.Base(w) == "sudo" || w == "doas":
			sudo = true
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				opt := words[0]
				words = words[1:]
				if (opt == "-u" || opt == "-g") && len(words) > 0 {
					words = words[1:]
				}
			}
		default:
			return words, sudo
		}
	}
	return words, sudo
}

// checkRm flags a recursive, forced rm of /, the home folder, or a path
// outside the workspace.
func checkRm(args []string, root, cwd string, add func(string, bool)) {
	recursive, force := false, false
	var targets []string
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && a == "--recursive":
			recursive = true
		case opts && a == "--force":
			force = true
		case opts && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1:
			recursive = recursive || strings.ContainsAny(a, "rR")
			force = force || strings.Contains(a, "f")
		default:
			targets = append(targets, a)
		}
	}
	if !recursive || !force {
		return
	}
	home := homeOf(root)
	for _, t := range targets {
		p := strings.TrimRight(strings.TrimSuffix(t, "*"), "/")
		switch {
		case p == "" && strings.HasPrefix(t, "/"):
			add("rm -rf of /", true)
			continue
		case p == "~" || p == "$HOME" || p == "${HOME}":
			add("rm -rf of the home folder", true)
			continue
		case strings.HasPrefix(p, "~/"):
			if home == "" {
				add("rm -rf outside the workspace: "+t, true)
				continue
			}
			p = home + p[1:]
		case strings.HasPrefix(p, "$HOME/") || strings.HasPrefix(p, "${HOME}/"):
			if home == "" {
				add("rm -rf outside the workspace: "+t, true)
				continue
			}
			p = home + p[strings.IndexByte(p, '/'):]
		case strings.HasPrefix(p, "$"):
			add("rm -rf of a path held in a variable: "+t, false)
			continue
		}
		if !path.IsAbs(p) {
			if cwd == "" {
				if strings.HasPrefix(path.Clean(p), "..") {
					add("rm -rf outside the workspace: "+t, true)
				}
				continue
			}
			p = path.Join(cwd, p)
		}
		p = path.Clean(p)
		switch {
		case p == "/":
			add("rm -rf of /", true)
		case home != "" && p == home:
			add("rm -rf of the home folder", true)
		case root == "":
			add("rm -rf of an absolute path (workspace unknown): "+t, false)
		case p == root || !strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/"):
			add("rm -rf outside the workspace: "+t, true)
		}
	}
}

// homeOf guesses the home folder from a workspace root under /home/NAME,
// /Users/NAME or /root.
func homeOf(root string) string {
	parts := strings.Split(root, "/")
	switch {
	case len(parts) >= 3 && (parts[1] == "home" || parts[1] == "Users") && parts[2] != "":
		return "/" + parts[1] + "/" + parts[2]
	case len(parts) >= 2 && parts[1] == "root":
		return "/root"
	}
	return ""
}

// checkPush flags git push --force or -f (not --force-with-lease).
func checkPush(args []string, add func(string, bool)) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") { // git -C dir, -c k=v
		if args[i] == "-C" || args[i] == "-c" {
			i++
		}
		i++
	}
	if i >= len(args) || args[i] != "push" {
		return
	}
	for _, a := range args[i+1:] {
		if a == "--force" || a == "-f" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f")) {
			add("git push --force: rewrites the remote's history", false)
			return
		}
	}
}

// shellSplit cuts a command line into pipelines of simple commands, each a
// list of words with quotes removed. It is a reader's approximation of the
// shell, enough to find command names and their arguments.
func shellSplit(s string) [][][]string {
	var (
		pipelines [][][]string
		pipeline  [][]string
		words     []string
		word      strings.Builder
		inWord    bool
		quote     byte
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			pipeline = append(pipeline, words)
		}
		words = nil
	}
	endPipeline := func() {
		endCommand()
		if len(pipeline) > 0 {
			pipelines = append(pipelines, pipeline)
		}
		pipeline = nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				word.WriteByte(s[i])
			} else {
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case c == ' ' || c == '\t':
			endWord()
		case c == '|':
			if i+1 < len(s) && s[i+1] == '|' {
				i++
				endPipeline()
			} else {
				endCommand()
			}
		case c == ';' || c == '&' || c == '\n' || c == '(' || c == ')':
			endPipeline()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endPipeline()
	return pipelines
}
