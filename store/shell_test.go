package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

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
		{"rm x > /dev/null", cmds{{{"rm", "x", ">", "/dev/null"}}}, false},
		{`rm 'open`, cmds{{{"rm", "open"}}}, false},
		{"", nil, true},
	} {
		got, certain := store.ShellCommands(c.line)
		if !reflect.DeepEqual(got, c.want) || certain != c.certain {
			t.Errorf("ShellCommands(%q) = %q, %v; want %q, %v", c.line, got, certain, c.want, c.certain)
		}
	}
}

// Words read for certain, each written again in single quotes, read back
// as the same words; nothing makes the reader panic.
func FuzzShellCommands(f *testing.F) {
	for _, s := range []string{"go test ./...", `rm a\ b 'c d' "e\"f" # x`, "cd sub && rm a; ls &", "a | b || (c)", `"open`, "x\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		pipelines, certain := store.ShellCommands(line)
		if !certain {
			return
		}
		var again []string
		for _, p := range pipelines {
			if len(p) != 1 {
				t.Fatalf("ShellCommands(%q) is certain with a pipe: %q", line, p)
			}
			var words []string
			for _, w := range p[0] {
				words = append(words, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
			}
			again = append(again, strings.Join(words, " "))
		}
		joined := strings.Join(again, "; ")
		back, sure := store.ShellCommands(joined)
		if !sure || !reflect.DeepEqual(back, pipelines) {
			t.Fatalf("ShellCommands(%q) = %q; written again as %q it reads %q, %v", line, pipelines, joined, back, sure)
		}
	})
}
