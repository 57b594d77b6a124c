package store

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
)

// A CommandFile is a file a command line names as one it reads, writes
// or removes (CommandFiles).
type CommandFile struct {
	Path  string
	Write bool
	// Whole: written from its start (>, tee without -a), so what it held
	// before does not count.
	Whole bool
	// Content is what a whole write put in the file, when the line says
	// for certain: cat or tee given a here-document as their own input.
	Content *string
	// Removed: rm or git rm names it, on a line read for certain
	// (ShellCommands), so that it ran after the commands before it.
	Removed bool
}

// maxCommandFiles bounds the files a command line names as read or
// written (CommandFiles): each is a row of Files touched, and a line of
// many short names would make the page many times its size.
const maxCommandFiles = 16

// commandFilesSlack is what the paths a command line names may hold
// beyond twice the line and its cwd (CommandFiles): each relative name is
// joined to the cwd, so without a bound a line of many short names in a
// long folder names many times its size, which Files touched, Changes and
// the stored column (CommandFilesColumn) would hold.
const commandFilesSlack = 1024

// CommandFiles are the files a command line names as ones it reads,
// writes or removes, each once for each (a file both read and written is
// written): the files of its redirections (<, >, >|, &>, >>, &>>; not
// /dev/...), the files tee writes, sed -i edits, cat, head, tail, nl and
// sed read, and rm and git rm remove. A relative path is joined to cwd,
// as a cd before it moves it, or kept relative when cwd is "" (the
// caller's to place), and dropped after a cd to a folder the line does
// not name. A word that would be expanded names no file; past
// maxCommandFiles files read or written, or once their paths together
// would hold more than twice the line and its cwd and commandFilesSlack
// bytes, no more are named. It is what the line says, not what ran: a
// command that failed may have written nothing.
func CommandFiles(line, cwd string) []CommandFile {
	if !strings.ContainsAny(line, "<>") && !mayNameFiles(line) {
		return nil // most lines: a cheap look first
	}
	pipelines, certain := ShellCommands(line)
	var out []CommandFile
	type key struct {
		path    string
		removed bool
	}
	at := map[key]int{} // out's index of each file
	named := 0          // files read or written
	lost := false       // a cd went where the line does not say
	room := 2*(len(line)+len(cwd)) + commandFilesSlack
	add := func(p string, f CommandFile) {
		if p == "" || p == "-" || (!f.Removed && named == maxCommandFiles) {
			return
		}
		if !path.IsAbs(p) {
			if lost {
				return
			}
			if cwd != "" && !strings.Contains(cwd, `\`) {
				p = path.Join(cwd, p)
			}
		}
		if f.Path = path.Clean(p); strings.HasPrefix(f.Path, "/dev/") {
			return // //dev/null, a cwd of /dev
		}
		k := key{f.Path, f.Removed}
		if i, ok := at[k]; ok {
			if f.Write && !out[i].Write {
				out[i] = f
			}
			return
		}
		if len(f.Path) > room {
			return
		}
		room -= len(f.Path)
		at[k] = len(out)
		out = append(out, f)
		if !f.Removed {
			named++
		}
	}
	for _, pipeline := range pipelines {
		for k, c := range pipeline {
			var heredoc *string // the command's own input, for certain
			for _, r := range c.Redirects {
				if (r.Op == "<<" || r.Op == "<<-") && r.Sure && k == 0 {
					heredoc = &r.Word
				}
			}
			name := ""
			if len(c.Words) > 0 {
				name = path.Base(c.Words[0])
			}
			for _, r := range c.Redirects {
				if !r.Sure {
					continue
				}
				switch r.Op {
				case ">", ">|", "&>":
					f := CommandFile{Write: true, Whole: true}
					if name == "cat" && len(c.Words) == 1 && heredoc != nil {
						f.Content = heredoc
					}
					add(r.Word, f)
				case ">>", "&>>":
					add(r.Word, CommandFile{Write: true})
				case "<":
					add(r.Word, CommandFile{})
				}
			}
			if !c.Sure || name == "" {
				lost = lost || name == "cd"
				continue
			}
			args := c.Words[1:]
			switch name {
			case "cd":
				switch {
				case len(args) != 1 || args[0] == "-" || args[0] == "":
					lost = true
				case path.IsAbs(args[0]):
					cwd, lost = path.Clean(args[0]), false
				default:
					cwd = path.Join(cwd, args[0])
				}
			case "rm", "git":
				if name == "git" && (len(args) == 0 || args[0] != "rm") {
					continue
				}
				if name == "git" {
					args = args[1:]
				}
				if !certain {
					continue
				}
				for _, a := range args {
					if !strings.HasPrefix(a, "-") {
						add(a, CommandFile{Removed: true})
					}
				}
			case "cat", "nl":
				for _, a := range operands(args, "") {
					add(a, CommandFile{})
				}
			case "head", "tail":
				for _, a := range operands(args, "nc") {
					add(a, CommandFile{})
				}
			case "tee":
				appending := false
				files := operands(args, "")
				for _, a := range args {
					appending = appending || a == "-a" || a == "--append"
				}
				for _, a := range files {
					f := CommandFile{Write: true, Whole: !appending}
					if !appending && heredoc != nil {
						f.Content = heredoc
					}
					add(a, f)
				}
			case "sed":
				files, inPlace := sedFiles(args)
				for _, a := range files {
					add(a, CommandFile{Write: inPlace})
				}
			}
		}
	}
	return out
}

// mayNameFiles says whether a line without redirections may name a file
// CommandFiles reads: it has one of the commands it knows as a word.
func mayNameFiles(line string) bool {
	for _, name := range []string{"cat", "nl", "head", "tail", "tee", "sed", "rm"} {
		for i := strings.Index(line, name); i >= 0; {
			end := i + len(name)
			if (i == 0 || strings.IndexByte(" \t\n;&|(/", line[i-1]) >= 0) && (end == len(line) || strings.IndexByte(" \t\n", line[end]) >= 0) {
				return true
			}
			next := strings.Index(line[end:], name)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
	return false
}

// operands are a command's arguments that are not options: after the
// options, and after --. withValue are the one-letter options whose value
// may be the next argument (head -n 20).
func operands(args []string, withValue string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case len(a) > 1 && a[0] == '-':
			if len(a) == 2 && strings.IndexByte(withValue, a[1]) >= 0 {
				i++ // -n 20
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// sedFiles are the files of a sed command's arguments (after its script,
// given with -e or -f or as the first operand) and whether it edits them
// in place (-i).
func sedFiles(args []string) (files []string, inPlace bool) {
	script := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest := args[i+1:]
			if !script && len(rest) > 0 {
				rest = rest[1:]
			}
			return append(files, rest...), inPlace
		case a == "-e" || a == "-f" || a == "--expression" || a == "--file":
			script = true
			i++
		case strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file="):
			script = true
		case strings.HasPrefix(a, "--in-place") || strings.HasPrefix(a, "-i"):
			inPlace = true // -i, -i.bak
		case strings.HasPrefix(a, "--"): // --posix, --regexp-extended, ...
		case len(a) > 1 && a[0] == '-':
			inPlace = inPlace || strings.Contains(a, "i") // -ni, -Ei
			if strings.HasSuffix(a, "e") || strings.HasSuffix(a, "f") {
				script = true // -ne SCRIPT
				i++
			}
		case !script:
			script = true
		default:
			files = append(files, a)
		}
	}
	return files, inPlace
}

// CommandFilesColumn is what a command step stores of the files its line
// names (CommandFiles), for the search's path: filter: each path once,
// one a line; "" when it names none. A change to CommandFiles reaches
// only the steps written after it: those stored before keep their column
// until a migration fills it again (as store/migrations/021 did).
func CommandFilesColumn(line, cwd string) string {
	files := CommandFiles(line, cwd)
	var named []string // read or written: at most maxCommandFiles, each once
	for _, f := range files {
		if !f.Removed {
			named = append(named, f.Path)
		}
	}
	names := slices.Clone(named)
	for _, f := range files {
		if f.Removed && !slices.Contains(named, f.Path) {
			names = append(names, f.Path)
		}
	}
	return strings.Join(names, "\n")
}

// StoredCommandFiles is CommandFilesColumn of a command step's payload as
// stored (its command and cwd), "" when it has no command: what a
// migration fills the column of the steps stored before it with, on
// either backend.
func StoredCommandFiles(payload string) string {
	var p struct{ Command, Cwd *string }
	if json.Unmarshal([]byte(payload), &p) != nil || p.Command == nil {
		return ""
	}
	return CommandFilesColumn(*p.Command, deref(p.Cwd))
}
