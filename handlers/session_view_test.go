package handlers

import (
	"reflect"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// A path in the session's workspace is shown by its path in it; any other
// path, one in a folder whose name only begins like the root's included,
// as written.
func TestInWorkspace(t *testing.T) {
	for _, c := range []struct{ root, path, want string }{
		{"/home/dev/api", "/home/dev/api/src/auth.go", "src/auth.go"},
		{"/home/dev/api/", "/home/dev/api/src/auth.go", "src/auth.go"},
		{`C:\dev\api`, `C:\dev\api\src\auth.go`, `src\auth.go`},
		{"/home/dev/api", "/home/dev/api2/auth.go", "/home/dev/api2/auth.go"},
		{"/home/dev/api", "/home/dev/.bashrc", "/home/dev/.bashrc"},
		{"/home/dev/api", "/home/dev/api", "/home/dev/api"},
		{"/home/dev/api", "/home/dev/api/", "/home/dev/api/"},
		{"/home/dev/api", "src/auth.go", "src/auth.go"},
		{"/", "/etc/hosts", "/etc/hosts"},
		{"", "/etc/hosts", "/etc/hosts"},
	} {
		if got := inWorkspace(c.root, c.path); got != c.want {
			t.Errorf("inWorkspace(%q, %q) = %q; want %q", c.root, c.path, got, c.want)
		}
	}
}

// Files touched has one row for a file recorded both by its path in the
// workspace and by its whole path, with the counts of both, where it was
// first touched, and the whole path as its title.
func TestFileRowsJoinBothPathsOfAFile(t *testing.T) {
	files := []store.FileTouched{
		{Path: "README.md", Read: 2},
		{Path: "/etc/hosts", Read: 1},
		{Path: "/home/wei/bot/README.md", Created: 1, Edited: 3, Failed: 1},
		{Path: "/home/wei/bot/src/a.py", Edited: 1},
	}
	got := fileRows("/home/wei/bot", files)
	want := []views.FileRow{
		{Name: "README.md", Path: "/home/wei/bot/README.md", Created: 1, Edited: 3, Read: 2, Failed: 1},
		{Name: "/etc/hosts", Path: "/etc/hosts", Read: 1},
		{Name: "src/a.py", Path: "/home/wei/bot/src/a.py", Edited: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fileRows =\n%+v\nwant\n%+v", got, want)
	}
}
