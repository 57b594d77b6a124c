package store_test

import (
	"reflect"
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
