package store

import "strings"

// ShellCommand is one simple command of a line as ShellCommands reads it:
// its words, with their quotes and backslashes removed, and its
// redirections, in order.
type ShellCommand struct {
	Words     []string
	Redirects []ShellRedirect
	// Sure says every word is what the command was given: none would be
	// expanded (unquoted $, `, globs, braces, a ~ that begins it; $ or `
	// in double quotes) and no quote was left open.
	Sure bool
}

// ShellRedirect is one redirection of a simple command: its operator (>,
// >>, >|, &>, &>>, <, <>, >&, <&, <<, <<-, <<<), the file descriptor
// written before it (-1 when none is) and its word: a file, a descriptor,
// or, for << and <<-, the here-document's body, each of its lines ending
// in a new line.
type ShellRedirect struct {
	FD   int
	Op   string
	Word string
	// Sure says the word is what the command got: a word with nothing to
	// expand, or a here-document whose delimiter was quoted or whose body
	// has no $, ` or \; false too for a here-document never ended.
	Sure bool
}

// ShellCommands reads a command line as a POSIX shell splits it: into
// pipelines (at ;, &, &&, ||, new lines and parentheses) of simple
// commands (at |), each with its words and redirections; a # that begins
// a word begins a comment, and a here-document's body is read from the
// lines after the one that asks for it. It is a reader's approximation,
// enough to find a command's name, arguments and files (adapters' flags,
// CommandFiles). certain says the words are what the command was given
// and that each simple command ran after the one before it: false when a word would be expanded (see ShellCommand.Sure),
// when the line redirects, pipes, runs a subshell or runs a command only
// if one failed (||), or when a quote is left open.
func ShellCommands(line string) (pipelines [][]ShellCommand, certain bool) {
	var (
		pipeline []ShellCommand
		cmd      = ShellCommand{Sure: true}
		word     strings.Builder
		inWord   bool
		wordSure = true
		quoted   bool           // the word has a quote or a backslash
		pending  *ShellRedirect // the redirection the next word is for
		// here-documents whose bodies begin after this line: where their
		// redirections are once their commands are in pipelines, and their
		// delimiters
		heredocs []heredocAt
	)
	certain = true
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		certain = certain && wordSure
		if pending != nil {
			pending.Word, pending.Sure = w, wordSure
			if pending.Op == "<<" || pending.Op == "<<-" {
				// The body comes later; the word is its delimiter.
				heredocs = append(heredocs, heredocAt{pipeline: len(pipelines), command: len(pipeline),
					redirect: len(cmd.Redirects), delim: w, literal: quoted, strip: pending.Op == "<<-"})
				pending.Word, pending.Sure = "", false
			}
			cmd.Redirects = append(cmd.Redirects, *pending)
			pending = nil
		} else {
			cmd.Words = append(cmd.Words, w)
			cmd.Sure = cmd.Sure && wordSure
		}
		wordSure, quoted = true, false
	}
	endCommand := func() {
		endWord()
		if pending != nil {
			// A redirection with no word after it.
			certain, cmd.Sure = false, false
			cmd.Redirects = append(cmd.Redirects, *pending)
			pending = nil
		}
		if len(cmd.Words) > 0 || len(cmd.Redirects) > 0 {
			pipeline = append(pipeline, cmd)
		}
		cmd = ShellCommand{Sure: true}
	}
	endPipeline := func() {
		endCommand()
		if len(pipeline) > 0 {
			pipelines = append(pipelines, pipeline)
		}
		pipeline = nil
	}
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			switch {
			case c == quote:
				quote = 0
			case quote == '"' && c == '\\' && i+1 < len(line):
				i++
				word.WriteByte(line[i])
			default:
				if quote == '"' && (c == '$' || c == '`') {
					wordSure = false
				}
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			inWord, quoted = true, true
		case c == '\\' && i+1 < len(line):
			i++
			quoted = true
			if line[i] != '\n' {
				word.WriteByte(line[i])
				inWord = true
			}
		case c == '#' && !inWord:
			for i+1 < len(line) && line[i+1] != '\n' {
				i++
			}
		case c == ' ' || c == '\t':
			endWord()
		case c == '(' && i+1 < len(line) && line[i+1] == '(' && !inWord:
			// (( arithmetic )): its < and > compare numbers; read as
			// one word that is not sure, to the closing )).
			endWord()
			end := strings.Index(line[i:], "))")
			if end < 0 {
				end = len(line) - i
			}
			word.WriteString(line[i:min(i+end+2, len(line))])
			inWord, wordSure = true, false
			i += end + 1
		case (c == '>' || c == '<') && inTest(cmd.Words):
			// [[ a < b ]] compares strings.
			word.WriteByte(c)
			inWord = true
		case c == '>' || c == '<' || (c == '&' && i+1 < len(line) && line[i+1] == '>'):
			fd := -1
			if n, ok := descriptor(word.String()); inWord && !quoted && ok && c != '&' {
				fd = n
				word.Reset()
				inWord = false
			}
			endWord()
			if pending != nil { // two operators in a row: the first has no word
				endCommand()
			}
			certain = false
			op := redirectOp(line[i:])
			i += len(op) - 1
			pending = &ShellRedirect{FD: fd, Op: op}
		case c == '|':
			certain = false
			if i+1 < len(line) && line[i+1] == '|' {
				i++
				endPipeline()
			} else {
				endCommand()
			}
		case c == '\n':
			endPipeline()
			if len(heredocs) > 0 {
				i = readHeredocs(line, i+1, heredocs, pipelines) - 1
				heredocs = heredocs[:0]
			}
		case c == ';' || c == '&':
			endPipeline()
		case c == '(' || c == ')':
			certain = false
			endPipeline()
		default:
			// (A \ here ends the line: the shell would read on.)
			if strings.IndexByte("$`*?[{}\\", c) >= 0 || (c == '~' && !inWord) {
				wordSure = false
			}
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		wordSure = false
	}
	endPipeline()
	if len(heredocs) > 0 {
		// Asked for on the last line: no body at all.
		readHeredocs(line, len(line), heredocs, pipelines)
		certain = false
	}
	return pipelines, certain
}

// inTest says whether words are in a [[ test not closed yet (if [[ a < b
// ...), where < and > compare rather than redirect.
func inTest(words []string) bool {
	for i := len(words) - 1; i >= 0; i-- {
		switch words[i] {
		case "]]":
			return false
		case "[[":
			return true
		}
	}
	return false
}

// heredocAt is a here-document asked for on the line being read: where
// its redirection is (pipelines[pipeline][command].Redirects[redirect]),
// its delimiter, whether the delimiter was quoted (the body is then not
// expanded) and whether leading tabs are stripped (<<-).
type heredocAt struct {
	pipeline, command, redirect int
	delim                       string
	literal, strip              bool
}

// readHeredocs reads the bodies of heredocs, one after the other, from
// line[at:], into their redirections, and returns where the line goes on
// after the last one's delimiter.
func readHeredocs(line string, at int, heredocs []heredocAt, pipelines [][]ShellCommand) int {
	for _, h := range heredocs {
		var body strings.Builder
		ended := false
		for at < len(line) && !ended {
			end := strings.IndexByte(line[at:], '\n')
			next := at + end + 1
			if end < 0 {
				end, next = len(line)-at, len(line)
			}
			l := line[at : at+end]
			at = next
			if h.strip {
				l = strings.TrimLeft(l, "\t")
			}
			if l == h.delim {
				ended = true
				break
			}
			body.WriteString(l)
			body.WriteByte('\n')
		}
		r := &pipelines[h.pipeline][h.command].Redirects[h.redirect]
		r.Word = body.String()
		r.Sure = ended && (h.literal || !strings.ContainsAny(r.Word, "$`\\"))
	}
	return at
}

// descriptor reads the file descriptor a word of digits written just
// before a redirection gives.
func descriptor(w string) (int, bool) {
	if w == "" || len(w) > 4 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return 0, false
		}
		n = n*10 + int(w[i]-'0')
	}
	return n, true
}

// redirectOp is the redirection operator s begins with.
func redirectOp(s string) string {
	for _, op := range []string{"&>>", "&>", "<<<", "<<-", "<<", "<&", "<>", "<", ">>", ">|", ">&", ">"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return s[:1]
}
