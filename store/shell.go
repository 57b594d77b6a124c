package store

import "strings"

// ShellCommands reads a command line as a POSIX shell splits it: into
// pipelines (at ;, &, &&, ||, new lines and parentheses) of simple
// commands (at |), each a list of words with their quotes and
// backslashes removed; a # that begins a word begins a comment. It is a
// reader's approximation, enough to find a command's name and arguments
// (adapters' flags, removedPaths). certain says the words are what the
// command was given and that each simple command ran after the one
// before it: false when a word would be expanded (unquoted $, `, globs,
// braces, a ~ that begins it; $ or ` in double quotes), when the line
// redirects, pipes, runs a subshell or runs a command only if one failed
// (||), or when a quote is left open.
func ShellCommands(line string) (pipelines [][][]string, certain bool) {
	var (
		pipeline [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		quote    byte
	)
	certain = true
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
					certain = false
				}
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
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
		case c == '|':
			certain = false
			if i+1 < len(line) && line[i+1] == '|' {
				i++
				endPipeline()
			} else {
				endCommand()
			}
		case c == ';' || c == '&' || c == '\n':
			endPipeline()
		case c == '(' || c == ')':
			certain = false
			endPipeline()
		default:
			// (A \ here ends the line: the shell would read on.)
			if strings.IndexByte("$`*?[{}<>\\", c) >= 0 || (c == '~' && !inWord) {
				certain = false
			}
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		certain = false
	}
	endPipeline()
	return pipelines, certain
}
