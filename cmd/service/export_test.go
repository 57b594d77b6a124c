package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// TestExportCommand writes the imported Codex sample's report from the
// command line: Markdown as an outline to standard output, a step item
// for each step of the rollout; HTML to a file; and refuses a bad keep,
// an unknown session and an outline of HTML without leaving a file.
func TestExportCommand(t *testing.T) {
	withHome(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	rollout := filepath.Join("..", "..", "..", "shared", "samples", "codex", "agentlogs_crud_rollout.jsonl")
	runImportCmd(t, "codex", rollout, "--db", db)
	raw, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatal(err)
	}
	// The session's id, from the rollout's first line.
	id := string(raw[bytes.Index(raw, []byte(`"id":"`))+6:])
	id = id[:strings.IndexByte(id, '"')]

	export := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"export", "--db", db}, args...), &out, &errOut)
		return out.String(), err
	}
	md, err := export(id, "--format", "md", "--outline")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md, "# create a file JOKE.md") {
		t.Errorf("the outline starts %.80q; want the session's title", md)
	}
	st, _, err := openStore(&env{ctx: context.Background(), stderr: io.Discard}, db)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Detail(context.Background(), id, store.DetailQuery{NoSteps: true})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md, "\n- **#"); n != d.Summary.Steps {
		t.Errorf("the outline has %d step items; want the session's %d", n, d.Summary.Steps)
	}

	file := filepath.Join(dir, "report.html")
	if out, err := export(id, "-o", file); err != nil || out != "" {
		t.Fatalf("export -o = %q, %v", out, err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.HasPrefix(bytes.ToLower(b), []byte("<!doctype html>")) {
		t.Errorf("the file holds %.40q, %v; want the HTML report", b, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{id, "--keep", "nope", "-o", filepath.Join(dir, "bad.md")}, "keep must name placeholders of the export review"},
		{[]string{"no-such-session", "-o", filepath.Join(dir, "none.html")}, `no session "no-such-session" in the store`},
		{[]string{id, "--outline", "-o", filepath.Join(dir, "outline.html")}, "--outline is for a Markdown report"},
	} {
		if _, err := export(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("export %q = %v; want %q", c.args, err, c.want)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range left {
		if b := filepath.Base(f); b != "store.db" && b != "report.html" && !strings.HasPrefix(b, "store.db-") {
			t.Errorf("a failed export left %s", b)
		}
	}
}
