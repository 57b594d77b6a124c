// Package shell holds the one rule of how the service writes a command line
// for a POSIX shell (the hook Claude Code runs, the command that resumes a
// session) and reads a word of one back.
package shell

import "strings"

// Quote writes s as one word a POSIX shell reads back as s: as it is when
// it has only letters, digits and @%+=:,./-_, else in single quotes (each
// quote in it closed, escaped and reopened).
func Quote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Unquote reads one word the way a POSIX shell does (single quotes, double
// quotes, backslashes); false when it is not one whole word.
func Unquote(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += 1 + j
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
			if i == len(s) {
				return "", false
			}
		case '\\':
			if i+1 == len(s) {
				return "", false
			}
			i++
			b.WriteByte(s[i])
		case ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// Line writes args as one command line, each quoted (Quote).
func Line(args ...string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = Quote(a)
	}
	return strings.Join(words, " ")
}
