package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"slices"
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
// the path in the workspace, which both records hold (and of its failed
// steps).
func TestFileRowsJoinBothPathsOfAFile(t *testing.T) {
	files := []store.FileTouched{
		{Path: "README.md", Read: 2},
		{Path: "/etc/hosts", Read: 1},
		{Path: "/home/wei/bot/README.md", Created: 1, Edited: 3, Failed: 1},
		{Path: "/home/wei/bot/src/a.py", Edited: 1},
	}
	got := fileRows("s", "/home/wei/bot", files)
	href := func(p string, also ...string) string {
		return "/search?q=" + url.QueryEscape(strings.Join(append([]string{`path:"` + p + `"`}, also...), " ")) + "&session=s"
	}
	want := []views.FileRow{
		{Name: "README.md", Path: "/home/wei/bot/README.md", Href: href("README.md"), FailedHref: href("README.md", "status:failed"),
			Created: 1, Edited: 3, Read: 2, Failed: 1},
		{Name: "/etc/hosts", Path: "/etc/hosts", Href: href("/etc/hosts"), Read: 1},
		{Name: "src/a.py", Path: "/home/wei/bot/src/a.py", Href: href("/home/wei/bot/src/a.py"), Edited: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fileRows =\n%+v\nwant\n%+v", got, want)
	}
}

// Each file of Files touched links to a search of the session's steps
// with its path, which finds the steps that touched it, and its count of
// failed steps to those of them that failed; the export's rows link
// nowhere.
func TestFilesTouchedLinkToTheirSteps(t *testing.T) {
	s := newTestService(t)
	b := newBatch("a")
	edit := b["steps"].([]any)[2].(obj)
	edit["outcome"], edit["error"] = "failed", obj{"type": "tool_error", "message": "old_string not found"}
	s.mustPush(b, http.StatusCreated)
	s.mustPush(newBatch("b"), http.StatusCreated)
	var file string
	var want, wantFailed []string
	for _, st := range b["steps"].([]any) {
		if p, ok := st.(obj)["payload"].(obj)["path"].(string); ok {
			file = p
			want = append(want, fmt.Sprint(st.(obj)["seq"]))
			if st.(obj)["outcome"] == "failed" {
				wantFailed = append(wantFailed, fmt.Sprint(st.(obj)["seq"]))
			}
		}
	}
	failed := mustDocument(t, s, "/session?id=a").Find(`[data-testid="files"] [data-testid="file-failed-steps"]`)
	var gotFailed []string
	mustDocument(t, s, failed.AttrOr("href", "")).Find(`[data-testid="search-group"][data-session-id="a"] [data-testid="search-hit"]`).Each(func(_ int, h *goquery.Selection) {
		gotFailed = append(gotFailed, h.AttrOr("data-seq", ""))
	})
	if failed.Length() != 1 || failed.Text() != fmt.Sprint(len(wantFailed)) || strings.Join(gotFailed, ",") != strings.Join(wantFailed, ",") {
		t.Errorf("the file's failed count %q links to %q, which finds steps %v; want %d linking to steps %v", failed.Text(), failed.AttrOr("href", ""), gotFailed, len(wantFailed), wantFailed)
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
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `data-testid="file-steps"`) || strings.Contains(rec.Body.String(), `data-testid="file-failed-steps"`) {
		t.Errorf("GET the export = %d; want 200 and no link from its files", rec.Code)
	}
}

// The Codex sample writes JOKE.md with a here-document, reads it with cat,
// patches and removes it: Files touched says two of its steps are
// commands, and Changes shows it created by the command and removed, with
// its content after as added lines (worked out in the store's test from
// the raw rollout; here, the lines of the here-document that the patch
// leaves are among them).
func TestFilesWrittenByCommandsOnThePage(t *testing.T) {
	raw, err := os.ReadFile("../adapters/codex/testdata/golden/agentlogs_crud_rollout.json")
	if err != nil {
		t.Fatal(err)
	}
	var batches []obj
	if err := json.Unmarshal(raw, &batches); err != nil || len(batches) != 1 {
		t.Fatalf("golden: %v", err)
	}
	s := newTestService(t)
	s.mustPush(batches[0], http.StatusCreated)
	sid := batches[0]["session"].(map[string]any)["id"].(string)
	var heredoc string
	var writeSeq, rmSeq any
	for _, st := range batches[0]["steps"].([]any) {
		c, _ := st.(obj)["payload"].(obj)["command"].(string)
		switch {
		case strings.HasPrefix(c, "cat <<'EOF' > "):
			heredoc, writeSeq = c, st.(obj)["seq"]
		case strings.HasPrefix(c, "rm "):
			rmSeq = st.(obj)["seq"]
		}
	}
	first, body, _ := strings.Cut(heredoc, "\n")
	file := strings.TrimPrefix(first, "cat <<'EOF' > ")

	doc := mustDocument(t, s, "/session?id="+sid)
	row := doc.Find(`[data-testid="files"] tbody tr`)
	if row.Length() != 1 || row.Find("code").AttrOr("title", "") != file || strings.TrimSpace(row.Find(`[data-testid="file-by-command"]`).Text()) != "2 by commands" {
		t.Errorf("Files touched = %d rows, %q, %q; want %s, 2 by commands", row.Length(), row.Find("code").AttrOr("title", ""), row.Find(`[data-testid="file-by-command"]`).Text(), file)
	}
	change := doc.Find(`[data-testid="change"]`)
	if got, want := change.Find(`[data-testid="change-status"]`).Text(), fmt.Sprintf("created, removed at step %v", rmSeq); change.Length() != 1 || got != want {
		t.Errorf("Changes = %d files, status %q; want one, %q", change.Length(), got, want)
	}
	added := change.Find(`[data-testid="change-diff"] .dl.add`).Map(func(_ int, l *goquery.Selection) string { return l.Text() })
	for _, l := range strings.Split(strings.TrimSuffix(body, "\nEOF"), "\n")[:3] { // the title, a blank line, the joke
		if !slices.Contains(added, "+"+l) {
			t.Errorf("the diff's added lines %q lack the here-document's %q", added, l)
		}
	}

	// The command's opened step names the file it writes, by its path in
	// the workspace, and the rm's the file it removes.
	for seq, want := range map[string]string{fmt.Sprint(writeSeq): "Writes " + path.Base(file), fmt.Sprint(rmSeq): "Removes " + path.Base(file)} {
		st := doc.Find(`[data-testid="step"][data-seq="` + seq + `"]`)
		detail := st.Find(`[data-testid="step-detail"]`)
		if u := st.AttrOr("data-body-url", ""); u != "" {
			detail = mustDocument(t, s, u).Find(`[data-testid="step-detail"]`)
		}
		var fields []string
		detail.Find("dt").Each(func(_ int, dt *goquery.Selection) {
			fields = append(fields, dt.Text()+" "+strings.TrimSpace(dt.Next().Text()))
		})
		if !slices.Contains(fields, want) {
			t.Errorf("step %s's fields %q; want %q", seq, fields, want)
		}
		// Its file links to the steps with its path, as its row of Files
		// touched does: the same search.
		link := detail.Find(`[data-testid="field-file"]`)
		if href, _ := link.Attr("href"); link.Length() != 1 || href != row.Find(`[data-testid="file-steps"]`).AttrOr("href", "-") {
			t.Errorf("step %s's file link %q (%d links); want Files touched's %q", seq, href, link.Length(), row.Find(`[data-testid="file-steps"]`).AttrOr("href", ""))
		}
	}

	// An export names a step's file without a link: it is read away from
	// the service.
	if body := s.get("/api/sessions/" + sid + "/export").Body.String(); strings.Contains(body, `data-testid="field-file"`) || !strings.Contains(body, "<dt>File</dt>") {
		t.Errorf("the export links a step's file, or names none")
	}

	// A file only a command names links to the search of its path, which
	// finds that command (migration 021), and its change says what it
	// wrote is not known.
	b := newBatch("cmd")
	b["steps"].(arr)[1].(obj)["payload"] = obj{"command": "go test ./... > test.log 2>&1", "exit_code": 0, "cwd": "/tmp/ws"}
	s.mustPush(b, http.StatusCreated)
	doc = mustDocument(t, s, "/session?id=cmd")
	link := doc.Find(`[data-testid="files"] [data-testid="file-steps"]`).FilterFunction(func(_ int, l *goquery.Selection) bool {
		return l.Find("code").AttrOr("title", "") == "/tmp/ws/test.log"
	})
	href, _ := link.Attr("href")
	var hits []string
	mustDocument(t, s, href).Find(`[data-testid="search-hit"]`).Each(func(_ int, h *goquery.Selection) { hits = append(hits, h.AttrOr("data-seq", "")) })
	if u, _ := url.Parse(href); link.Length() != 1 || u == nil || u.Query().Get("q") != `path:"/tmp/ws/test.log"` || strings.Join(hits, ",") != "2" {
		t.Errorf("test.log's link %q finds steps %v; want path:\"/tmp/ws/test.log\", the command, 2", href, hits)
	}
	if got := strings.TrimSpace(doc.Find(`[data-testid="change-edit-command"]`).Text()); got != "a command wrote it; what it wrote is not in its line" {
		t.Errorf("test.log's change says %q; want that what the command wrote is not known", got)
	}
}

// Coloured output is shown in its colours, its codes left out of the
// step's line and its body; a tool's field likewise; a file's own escape
// sequence, in a diff, is shown as its characters; and no control
// character reaches a page or a report, from any text an agent recorded.
func TestSessionShowsColouredOutput(t *testing.T) {
	s := newTestService(t)
	b := newBatch("col")
	steps := b["steps"].(arr)
	steps[1].(obj)["payload"].(obj)["command"] = "\x1b[1mnpx\x1b[22m jest"
	steps[1].(obj)["payload"].(obj)["stdout"] = "\x1b[1;31mFAIL\x1b[0m src/a.test.ts\a"
	steps[4].(obj)["payload"].(obj)["raw"] = obj{"command": "/model", "stdout": "Kept model as \x1b[1mDefault\x1b[22m"}
	// Every other text a page shows, with a code and a bell.
	steps[0].(obj)["payload"].(obj)["text"] = "\x1b[32mFix\x1b[0m the test\a"
	steps[2].(obj)["payload"].(obj)["path"] = "/tmp/ws/\x1b[1mmain.go\a"
	steps[2].(obj)["payload"].(obj)["old_string"] = "const red = \"\x1b[31m\"\a"
	steps[2].(obj)["payload"].(obj)["new_string"] = "const red = \"\x1b[91m\"\a"
	steps[2].(obj)["outcome"], steps[2].(obj)["error"] = "failed", obj{"type": "\x1b[31mtool_error\a", "message": "\x1b[31mdenied\a"}
	steps[3].(obj)["flags"] = arr{obj{"kind": "\x1b[1mrisky\a", "severity": "warn", "reason": "\x1b[33mread\a"}}
	steps[4].(obj)["payload"].(obj)["tool_name"] = "\x1b[36mWebFetch\a"
	b["session"].(obj)["workspace"] = obj{"root": "/tmp/\x1b[1mws\a", "repo": "github.com/\x1b[1macme\a"}
	s.mustPush(b, http.StatusCreated)
	page := ""
	for _, path := range []string{"/session?id=col", "/session/step?id=col&seq=2", "/session/step?id=col&seq=3",
		"/session/step?id=col&seq=4", "/session/step?id=col&seq=5", "/", "/search?q=fix", "/search?q=denied", "/usage",
		"/api/sessions/col/export", "/api/sessions/col/export?format=md"} {
		rec := s.get(path)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s = %d", path, rec.Code)
		}
		page += rec.Body.String()
	}
	if strings.ContainsFunc(page, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' }) {
		i := strings.IndexFunc(page, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' })
		t.Errorf("the session's page or a step's body holds a control character: %q", page[max(0, i-200):i+20])
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sel, want string }{
		{`#step-2 .line`, "npx jest"},
		{`[data-testid="block-stdout"] pre`, "FAIL src/a.test.ts^G"},
		{`[data-testid="block-stdout"] pre .t-red.t-bold`, "FAIL"},
		{`[data-testid="block-stdout"] pre .ctl`, "^G"},
		{`[data-testid="tool-field-stdout"] .t-bold`, "Default"},
		// A file's escape sequence is its text: shown, not followed.
		{`[data-testid="diff"] .dl.del`, `-const red = "^[[31m"^G`},
		{`[data-testid="change-edit-diff"] .dl.add`, `+const red = "^[[91m"^G`},
	} {
		if got := strings.TrimSpace(doc.Find(c.sel).First().Text()); got != c.want {
			t.Errorf("%s = %q; want %q", c.sel, got, c.want)
		}
	}
}
