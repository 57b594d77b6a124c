package store_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// toolNames reads the tool_name column of every step that has one, by
// session id and seq.
func toolNames(t *testing.T, path string) map[string]string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := map[string]string{}
	err = sqlitex.Execute(conn, `SELECT s.id, st.seq, st.tool_name FROM steps st JOIN sessions s ON s.pk = st.session_pk
		WHERE st.tool_name IS NOT NULL`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error {
			got[fmt.Sprintf("%s/%d", st.ColumnText(0), st.ColumnInt64(1))] = st.ColumnText(2)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A store from before migration 024 gets the tool of each of its steps
// of type other when opened: the column holds, for every such step of the
// real samples, the tool_name its batch gave it, as Apply writes it, and
// the report and the tool: filter read it.
func TestOpenFillsToolNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, b := range storetest.AgentSamples(t) {
		if _, err := s.Apply(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		for _, st := range b.Steps {
			if st.Type == store.TypeOther {
				want[fmt.Sprintf("%s/%d", b.Session.ID, st.Seq)] = st.Payload.ToolName
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("the samples have no step of type other")
	}
	if got := toolNames(t, path); !maps.Equal(got, want) {
		t.Fatalf("tool_name as Apply wrote it = %v; want the batches' %v", got, want)
	}

	// The store as migration 023 left it (025 runs again too).
	conn, err := sqlite.OpenConn(path)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.ExecuteScript(conn, `DROP INDEX steps_tools; ALTER TABLE steps DROP COLUMN tool_name;
		ALTER TABLE notes DROP COLUMN folded; PRAGMA user_version = 23;`, nil)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path)
	if got := toolNames(t, path); !maps.Equal(got, want) {
		t.Errorf("tool_name after migrating = %v; want the batches' %v", got, want)
	}
	for key, tool := range want {
		r, err := s.Search(context.Background(), store.SearchQuery{Q: `tool:"` + tool + `"`, Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range r.Hits {
			found = found || fmt.Sprintf("%s/%d", h.SessionID, h.Seq) == key
		}
		if !found {
			t.Errorf("after migrating, tool:%q does not find step %s", tool, key)
		}
	}
}

// A store from before migration 025 gets its notes' folded texts when
// opened: note: then finds a note whatever the case of its letters.
func TestOpenFoldsNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	b := storetest.AgentSamples(t)[0]
	if _, err := s.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	const text = "Échec: the İSTANBUL test"
	if _, err := s.AddNote(context.Background(), b.Session.ID, store.NoteInput{Seq: b.Steps[0].Seq, Author: "ann", Text: text}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The store as migration 024 left it.
	conn, err := sqlite.OpenConn(path)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.ExecuteScript(conn, `ALTER TABLE notes DROP COLUMN folded; PRAGMA user_version = 24;`, nil)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path)
	for _, q := range []string{"note:échec", "note:istanbul", `note:"ÉCHEC: THE"`} {
		r, err := s.Search(context.Background(), store.SearchQuery{Q: q})
		if err != nil || len(r.Hits) != 1 || r.Hits[0].Seq != b.Steps[0].Seq || len(r.Hits[0].Notes) != 1 || r.Hits[0].Notes[0].Text != text {
			t.Errorf("after migrating, Search(%s) = %+v, %v; want step %d with its note", q, r.Hits, err, b.Steps[0].Seq)
		}
	}
}
