package handlers

import "testing"

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
