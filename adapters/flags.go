package adapters

import (
	"fmt"
	"hash/maphash"
	"path"
	"regexp"
	"slices"
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

// FlagDeadEnds marks with dead_end_edit each edit whose change later edits
// of the same file undo: one that swaps it back (b→a after a→b), a chain
// that ends where it began (b→c, then c→a), or a full write of the text
// the edit replaced. A full write counts as a change of the whole file when
// its text before is known: from its old string, or from the full write
// of the same file just before it with no edit between. Steps must be in
// session order and numbered (Seq), as Split leaves them.
func FlagDeadEnds(steps []store.Step) {
	var changes []change
	var at []int // the step of each change
	for i, st := range steps {
		if c := editChange(st); c.path != "" {
			changes, at = append(changes, c), append(at, i)
		}
	}
	deadEnds(changes, func(k int) int64 { return steps[at[k]].Seq }, func(k int, f store.Flag) { addFlag(&steps[at[k]], f) })
}

// deadEnds is FlagDeadEnds on the changes of a session's edit steps, in
// session order, for callers that do not hold the steps themselves. seq
// gives the Seq of the step of the change at an index; flag is called with
// the dead_end_edit flag of each step that earns one.
func deadEnds(changes []change, seq func(i int) int64, flag func(i int, f store.Flag)) {
	changes = knownBefore(changes)
	type at struct {
		path     string
		old, new Key
	}
	byOld := map[at][]int{}    // changes from a text: step indexes, in order
	bySwap := map[at][]int{}   // changes from a text to another
	writesTo := map[at][]int{} // full writes of a text, whatever was there before
	index := func(m map[at][]int, k at, i int) { m[k] = append(m[k], i) }
	for i, c := range changes {
		if c.path == "" || !c.hasNew {
			continue
		}
		if c.full {
			index(writesTo, at{path: c.path, new: c.new}, i)
		}
		if c.hasOld && c.old != c.new {
			index(byOld, at{path: c.path, old: c.old}, i)
			index(bySwap, at{path: c.path, old: c.old, new: c.new}, i)
		}
	}
	// after is the first index in list beyond pos, or -1.
	after := func(list []int, pos int) int {
		k, _ := slices.BinarySearch(list, pos+1)
		if k == len(list) {
			return -1
		}
		return list[k]
	}
	for i, c := range changes {
		if c.path == "" || !c.hasOld || !c.hasNew || c.old == c.new {
			continue
		}
		// Follow the text this edit wrote through the later edits that
		// replace it, until one puts back the text it replaced.
		var through []int64
		cur, pos := c.new, i
		for range maxRevertChain {
			end := after(bySwap[at{path: c.path, old: cur, new: c.old}], pos)
			if w := after(writesTo[at{path: c.path, new: c.old}], pos); w >= 0 && (end < 0 || w < end) {
				end = w
			}
			if end >= 0 {
				flag(i, store.Flag{Kind: FlagDeadEndEdit, Severity: "info", Reason: revertReason(seq(end), changes[end].full, through)})
				break
			}
			if cur == emptyKey {
				break // every insertion starts from the empty text: following it would join unrelated edits
			}
			next := after(byOld[at{path: c.path, old: cur}], pos)
			if next < 0 {
				break
			}
			through = append(through, seq(next))
			cur, pos = changes[next].new, next
		}
	}
}

// maxRevertChain is how many later edits a revert may take, the one that
// completes it included; FlagDeadEnds follows no longer chains.
const maxRevertChain = 20

// Key stands for a text (an edit's, a record's id): two texts are the same
// when their keys are equal. It is a 128-bit hash, fixed for the process,
// so that what only needs recognising again is kept without its text (the
// edits of a spilled session, the ids a parser has read).
type Key [2]uint64

// keySeeds are the hash seeds of Key.
var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// KeyOf returns the key of s.
func KeyOf(s string) Key {
	return Key{maphash.String(keySeeds[0], s), maphash.String(keySeeds[1], s)}
}

// emptyKey is the key of the empty text.
var emptyKey = KeyOf("")

// change is what an edit step did to its file. path is empty for a step
// that is not an edit of a named file.
type change struct {
	path     string
	old, new Key
	hasOld   bool // the text replaced is known
	hasNew   bool // the text written is known
	full     bool // the whole file was written
}

// editChange returns the path of an edit step and the keys of the text
// it replaced and the text it wrote, as far as the step says them.
func editChange(st store.Step) change {
	p := st.Payload
	if st.Type != store.TypeEdit || p.Path == "" {
		return change{}
	}
	c := change{path: p.Path, full: p.IsFullWrite != nil && *p.IsFullWrite}
	if p.OldString != nil {
		c.old, c.hasOld = KeyOf(*p.OldString), true
	}
	if p.NewString != nil {
		c.new, c.hasNew = KeyOf(*p.NewString), true
	}
	return c
}

// knownBefore returns a copy of changes in which a full write with no old
// string has the text of the full write of its file just before it, when
// no other edit of that file came between.
func knownBefore(changes []change) []change {
	changes = slices.Clone(changes)
	written := map[string]Key{} // the whole text of a file, while known
	for i, c := range changes {
		if c.path == "" {
			continue
		}
		before, known := written[c.path]
		delete(written, c.path)
		if !c.full {
			continue
		}
		if !c.hasOld && known {
			changes[i].old, changes[i].hasOld = before, true
		}
		if c.hasNew {
			written[c.path] = c.new
		}
	}
	return changes
}

// revertReason names the step that completes a revert (its Seq, and
// whether it is a full write) and the steps the change went through before
// it.
func revertReason(end int64, full bool, through []int64) string {
	what := "edit"
	if full {
		what = "write"
	}
	reason := fmt.Sprintf("reverted by the %s at step %d", what, end)
	switch n := len(through); {
	case n == 1:
		reason += fmt.Sprintf(", through step %d", through[0])
	case n > 1:
		var b strings.Builder
		for k, seq := range through {
			switch {
			case k == n-1:
				b.WriteString(" and ")
			case k > 0:
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d", seq)
		}
		reason += ", through steps " + b.String()
	}
	return reason
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
	pipelines, _ := store.ShellCommands(command) // uncertain words are still worth a flag
	for _, pipeline := range pipelines {
		for k, c := range pipeline {
			words, sudo := unwrap(c.Words)
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
					prev, _ := unwrap(pipeline[k-1].Words)
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
