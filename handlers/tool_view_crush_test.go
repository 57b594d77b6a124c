package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// crushSample is the real Crush database of ../shared/samples.
const crushSample = "../../shared/samples/crush/dbos-transact-golang/.crush/crush.db"

// TestListAndGlobRenderings: the real Crush session's ls, glob and grep
// calls show as a folder listing and as searches, their lines and fields
// the arguments the database records for them, their result the tool's
// answer.
func TestListAndGlobRenderings(t *testing.T) {
	s := newTestService(t)
	im := &adapters.Importer{Store: s.store}
	if sum, err := im.Run(context.Background(), crush.Agent, []string{crushSample}); err != nil || sum.New == 0 {
		t.Fatalf("import = %s, %v", sum, err)
	}
	// The first call of each tool, read from the database by the test.
	type callRec struct{ id, path, pattern, result string }
	first := map[string]*callRec{}
	conn, err := sqlite.OpenConn(crushSample, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = sqlitex.Execute(conn, `SELECT c.value -> 'data' ->> 'name', c.value -> 'data' ->> 'id',
			c.value -> 'data' ->> 'input' ->> 'path', c.value -> 'data' ->> 'input' ->> 'pattern', r.value -> 'data' ->> 'content'
		FROM messages m, json_each(m.parts) c, messages t, json_each(t.parts) r
		WHERE c.value ->> 'type' = 'tool_call' AND r.value ->> 'type' = 'tool_result'
		  AND r.value -> 'data' ->> 'tool_call_id' = c.value -> 'data' ->> 'id'
		ORDER BY m.created_at, m.rowid, c.key`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error {
			if name := st.ColumnText(0); first[name] == nil {
				first[name] = &callRec{st.ColumnText(1), st.ColumnText(2), st.ColumnText(3), st.ColumnText(4)}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "a20c5ed5-41d4-45f7-88eb-7ba0645f1341"
	page, err := goquery.NewDocumentFromReader(s.get("/session?id=" + sid).Body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.store.Detail(context.Background(), sid, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seqOf := map[string]int64{}
	for _, st := range d.Steps {
		seqOf[st.ID] = st.Seq
	}
	for _, c := range []struct{ tool, kind, line string }{
		{"ls", "list", "ls " + first["ls"].path},
		{"glob", "grep", "glob " + first["glob"].pattern + " " + first["glob"].path},
		{"grep", "grep", "grep " + first["grep"].pattern + " " + first["grep"].path},
	} {
		rec := first[c.tool]
		seq := seqOf[rec.id]
		step := page.Find(fmt.Sprintf(`#step-%d`, seq))
		if got := strings.TrimSpace(step.Find(".line").First().Text()); got != c.line {
			t.Errorf("%s line = %q; want %q", c.tool, got, c.line)
		}
		r := s.get(fmt.Sprintf("/session/step?id=%s&seq=%d", sid, seq))
		if r.Code != http.StatusOK {
			t.Fatalf("GET step %d = %d", seq, r.Code)
		}
		doc, _ := goquery.NewDocumentFromReader(r.Body)
		v := doc.Find(`[data-testid="tool-` + c.kind + `"]`)
		label, want := "Folder", rec.path
		if c.kind == "grep" {
			label, want = "Pattern", rec.pattern
		}
		if got := v.Find(`[data-testid="tool-field-` + label + `"]`).Text(); got != want {
			t.Errorf("%s %s = %q; want %q", c.tool, label, got, want)
		}
		if got := v.Find(`pre`).Last().Text(); got != rec.result {
			t.Errorf("%s result = %q; want the tool's answer %q", c.tool, got, rec.result)
		}
	}
}
