package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

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
// first touched, the whole path as its title, and a link to a search of
// the path in the workspace, which both records hold.
func TestFileRowsJoinBothPathsOfAFile(t *testing.T) {
	files := []store.FileTouched{
		{Path: "README.md", Read: 2},
		{Path: "/etc/hosts", Read: 1},
		{Path: "/home/wei/bot/README.md", Created: 1, Edited: 3, Failed: 1},
		{Path: "/home/wei/bot/src/a.py", Edited: 1},
	}
	got := fileRows("s", "/home/wei/bot", files)
	href := func(p string) string { return "/search?q=" + url.QueryEscape(`path:"`+p+`"`) + "&session=s" }
	want := []views.FileRow{
		{Name: "README.md", Path: "/home/wei/bot/README.md", Href: href("README.md"), Created: 1, Edited: 3, Read: 2, Failed: 1},
		{Name: "/etc/hosts", Path: "/etc/hosts", Href: href("/etc/hosts"), Read: 1},
		{Name: "src/a.py", Path: "/home/wei/bot/src/a.py", Href: href("/home/wei/bot/src/a.py"), Edited: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fileRows =\n%+v\nwant\n%+v", got, want)
	}
}

// Each file of Files touched links to a search of the session's steps
// with its path, which finds the steps that touched it; the export's
// rows link nowhere.
func TestFilesTouchedLinkToTheirSteps(t *testing.T) {
	s := newTestService(t)
	b := newBatch("a")
	s.mustPush(b, http.StatusCreated)
	s.mustPush(newBatch("b"), http.StatusCreated)
	var file string
	var want []string
	for _, st := range b["steps"].([]any) {
		if p, ok := st.(obj)["payload"].(obj)["path"].(string); ok {
			file = p
			want = append(want, fmt.Sprint(st.(obj)["seq"]))
		}
	}
	link := mustDocument(t, s, "/session?id=a").Find(`[data-testid="files"] [data-testid="file-steps"]`)
	href, _ := link.Attr("href")
	if link.Length() != 1 || link.Find("code").AttrOr("title", "") != file {
		t.Fatalf("Files touched links = %d, the first to %q for %q; want one, for %s", link.Length(), href, link.Find("code").AttrOr("title", ""), file)
	}
	var got []string
	hits := mustDocument(t, s, href).Find(`[data-testid="search-group"]`)
	hits.Find(`[data-testid="search-hit"]`).Each(func(_ int, h *goquery.Selection) { got = append(got, h.AttrOr("data-seq", "")) })
	if hits.Length() != 1 || hits.AttrOr("data-session-id", "") != "a" || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s finds steps %v in %d sessions; want session a's %v", href, got, hits.Length(), want)
	}
	rec := s.get("/api/sessions/a/export")
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `data-testid="file-steps"`) {
		t.Errorf("GET the export = %d; want 200 and no link from its files", rec.Code)
	}
}
