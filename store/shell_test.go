package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// shellWords are the words of each command of each pipeline.
func shellWords(pipelines [][]store.ShellCommand) [][][]string {
	var out [][][]string
	for _, p := range pipelines {
		var cmds [][]string
		for _, c := range p {
			cmds = append(cmds, c.Words)
		}
		out = append(out, cmds)
	}
	return out
}

// A command line splits into pipelines of commands of words as a shell
// splits it, and says when its words are not for certain what the
// commands were given.
func TestShellCommands(t *testing.T) {
	type cmds = [][][]string
	for _, c := range []struct {
		line    string
		want    cmds
		certain bool
	}{
		{"go test ./...", cmds{{{"go", "test", "./..."}}}, true},
		{`git commit -m "fix: the parser's 'empty' case" && git push`,
			cmds{{{"git", "commit", "-m", "fix: the parser's 'empty' case"}}, {{"git", "push"}}}, true},
		{`rm a\ b 'c d' "e\"f" g#h # a comment; rm x` + "\nrm y",
			cmds{{{"rm", "a b", "c d", `e"f`, "g#h"}}, {{"rm", "y"}}}, true},
		{"cd sub; ls &", cmds{{{"cd", "sub"}}, {{"ls"}}}, true},
		{"line one \\\nstill one", cmds{{{"line", "one", "still", "one"}}}, true},
		// Read, but not for certain.
		{"curl -s x | sh", cmds{{{"curl", "-s", "x"}, {"sh"}}}, false},
		{"make || rm a", cmds{{{"make"}}, {{"rm", "a"}}}, false},
		{"(cd sub; rm a)", cmds{{{"cd", "sub"}}, {{"rm", "a"}}}, false},
		{"rm *.go", cmds{{{"rm", "*.go"}}}, false},
		{`rm "$HOME/x"`, cmds{{{"rm", "$HOME/x"}}}, false},
		{"rm ~/x a~b", cmds{{{"rm", "~/x", "a~b"}}}, false},
		{"rm x > /dev/null", cmds{{{"rm", "x"}}}, false}, // the redirection is not a word
		{`rm 'open`, cmds{{{"rm", "open"}}}, false},
		{"", nil, true},
	} {
		got, certain := store.ShellCommands(c.line)
		if words := shellWords(got); !reflect.DeepEqual(words, c.want) || certain != c.certain {
			t.Errorf("ShellCommands(%q) = %q, %v; want %q, %v", c.line, words, certain, c.want, c.certain)
		}
	}
}

// Redirections are read apart from the words, with their descriptors,
// and a here-document's body from the lines after the one asking for it,
// the line going on after its delimiter; each says whether its word is
// what the command got.
func TestShellRedirects(t *testing.T) {
	type redirs = []store.ShellRedirect
	r := func(fd int, op, word string, sure bool) store.ShellRedirect {
		return store.ShellRedirect{FD: fd, Op: op, Word: word, Sure: sure}
	}
	for _, c := range []struct {
		line  string
		words []string // of the first command
		want  redirs   // of the first command
		next  [][][]string
	}{
		{"go test ./... > out.txt 2>&1", []string{"go", "test", "./..."}, redirs{r(-1, ">", "out.txt", true), r(2, ">&", "1", true)}, nil},
		{"echo hi >>log 2>/dev/null <in", []string{"echo", "hi"}, redirs{r(-1, ">>", "log", true), r(2, ">", "/dev/null", true), r(-1, "<", "in", true)}, nil},
		{"make &> build.log", []string{"make"}, redirs{r(-1, "&>", "build.log", true)}, nil},
		{`cat >| "$OUT"`, []string{"cat"}, redirs{r(-1, ">|", "$OUT", false)}, nil},
		{"a2>x", []string{"a2"}, redirs{r(-1, ">", "x", true)}, nil}, // digits must be a word of their own
		{"'2'>x", []string{"2"}, redirs{r(-1, ">", "x", true)}, nil}, // a quoted 2 is a word
		{"cat <<< 'here string'", []string{"cat"}, redirs{r(-1, "<<<", "here string", true)}, nil},
		{"cat <<'EOF' > /tmp/a.md\n# Title\n\nSome $text\nEOF\nls",
			[]string{"cat"}, redirs{r(-1, "<<", "# Title\n\nSome $text\n", true), r(-1, ">", "/tmp/a.md", true)}, [][][]string{{{"ls"}}}},
		{"cat > b.txt <<EOF\nplain\nEOF", []string{"cat"}, redirs{r(-1, ">", "b.txt", true), r(-1, "<<", "plain\n", true)}, nil},
		{"cat <<EOF >c\n$HOME\nEOF", []string{"cat"}, redirs{r(-1, "<<", "$HOME\n", false), r(-1, ">", "c", true)}, nil}, // expanded
		{"cat <<-\"END\" >d\n\tindented\n\tEND\n", []string{"cat"}, redirs{r(-1, "<<-", "indented\n", true), r(-1, ">", "d", true)}, nil},
		{"cat <<EOF >e\nnever ended", []string{"cat"}, redirs{r(-1, "<<", "never ended\n", false), r(-1, ">", "e", true)}, nil},
		{"cat <<A; cat <<B\none\nA\ntwo\nB\necho # not a body", []string{"cat"}, redirs{r(-1, "<<", "one\n", true)}, [][][]string{{{"cat"}}, {{"echo"}}}},
		{"cat <<EOF", []string{"cat"}, redirs{r(-1, "<<", "", false)}, nil},
		{"cat >", []string{"cat"}, redirs{r(-1, ">", "", false)}, nil},
		// < and > that compare: no redirection.
		{"[[ $a > b ]] && cat x > y", []string{"[[", "$a", ">", "b", "]]"}, nil, [][][]string{{{"cat", "x"}}}},
		{"if (( n > 10 )); then ls > out; fi", []string{"if", "(( n > 10 ))"}, nil, [][][]string{{{"then", "ls"}}, {{"fi"}}}},
	} {
		got, certain := store.ShellCommands(c.line)
		if certain {
			t.Errorf("ShellCommands(%q) is certain; a line that redirects is not", c.line)
		}
		if len(got) == 0 {
			t.Errorf("ShellCommands(%q) read no command", c.line)
			continue
		}
		first := got[0][0]
		if !reflect.DeepEqual(first.Words, c.words) || !reflect.DeepEqual(first.Redirects, c.want) {
			t.Errorf("ShellCommands(%q)'s first command = %q %+v; want %q %+v", c.line, first.Words, first.Redirects, c.words, c.want)
		}
		if rest := shellWords(got)[1:]; len(rest) > 0 || c.next != nil {
			if !reflect.DeepEqual(rest, c.next) {
				t.Errorf("ShellCommands(%q)'s later commands = %q; want %q", c.line, rest, c.next)
			}
		}
	}
}

// Words read for certain, each written again in single quotes, read back
// as the same words; nothing makes the reader panic.
func FuzzShellCommands(f *testing.F) {
	for _, s := range []string{"go test ./...", `rm a\ b 'c d' "e\"f" # x`, "cd sub && rm a; ls &", "a | b || (c)", `"open`, "x\\",
		"cat <<'EOF' > f\nbody\nEOF\nls", "a 2>&1 >>b <<-X\n\tx\n\tX"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		pipelines, certain := store.ShellCommands(line)
		if !certain {
			return
		}
		var again []string
		for _, p := range pipelines {
			if len(p) != 1 || len(p[0].Redirects) > 0 || !p[0].Sure {
				t.Fatalf("ShellCommands(%q) is certain with a pipe, a redirection or words not sure: %+v", line, p)
			}
			var words []string
			for _, w := range p[0].Words {
				words = append(words, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
			}
			again = append(again, strings.Join(words, " "))
		}
		joined := strings.Join(again, "; ")
		back, sure := store.ShellCommands(joined)
		if !sure || !reflect.DeepEqual(back, pipelines) {
			t.Fatalf("ShellCommands(%q) = %+v; written again as %q it reads %+v, %v", line, pipelines, joined, back, sure)
		}
	})
}
