package postgres

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
	"github.com/agentreview/service/store/storetest"
)

// A store whose words were made by an earlier text rule gets them made
// again when opened: the words of each step whose text may have changed
// since (textMayBeJSONInAString, store.SplitRunesPattern, a working
// folder, an ESC) are
// this build's, the real Copilot CLI web searches and commands among them,
// the others are left as they were, and the version is recorded.
func TestOpenRewritesSearchWords(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	chinese := ""
	for _, b := range storetest.SampleBatches(t) {
		// The Claude Code session with /compact's coloured output: its step
		// changes in version 6.
		if b.Session.Agent.Kind == "copilot-cli" || b.Session.ID == "0e26ec2f-937e-482c-b889-bc126f996913" {
			if chinese == "" && b.Session.Agent.Kind == "copilot-cli" { // a workspace named in Chinese: the session's own row changes in version 4
				chinese, b.Session.Workspace.Root = b.Session.ID, "/home/wei/專案"
			}
			if _, err := s.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// This build's words of every row, then a store of an earlier version:
	// the words gone, as if made by a rule that found none of them. Version
	// 2, the oldest a store can be, and 5, the build before this one.
	want := textByKey(t, s, `SELECT rid, coalesce(doc::text, '') FROM search_docs`)
	for _, from := range []int{2, 5} {
		s = reopened(t, s, dsn, fmt.Sprintf(`UPDATE search_docs SET doc = NULL; UPDATE search_text_version SET version = %d`, from))
		t.Run(fmt.Sprintf("from version %d", from), func(t *testing.T) { checkRewritten(t, s, want, chinese, from) })
	}
}

// checkRewritten checks the words of store s after it was opened at
// version from: want for each row whose text may have changed since (the
// rules of versions 3 to 6), none for the others.
func checkRewritten(t *testing.T, s *Store, want map[int64]string, chinese string, from int) {
	ctx := context.Background()
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT version FROM search_text_version`).Scan(&version); err != nil || version != store.SearchTextVersion {
		t.Fatalf("search_text_version = %d, %v; want %d", version, err, store.SearchTextVersion)
	}
	// Version 3 changed the words of a step with JSON in a string;
	// version 4 those of a step with a character that is a word of its own;
	// version 5 those of a step with a working folder; version 6 those of
	// a step with an ESC.
	json, split := regexp.MustCompile(textMayBeJSONInAString), regexp.MustCompile(store.SplitRunesPattern())
	rows, _ := s.pool.Query(ctx, `SELECT st.pk, coalesce(d.doc::text, ''), st.payload || coalesce(st.error, '') || st.flags,
		  concat_ws(' ', st.role, st.text, st.stdout, st.stderr, st.old_string, st.new_string), st.payload LIKE '%web_search%'
		FROM steps st JOIN search_docs d ON d.rid = st.pk`)
	var rid int64
	var doc, text, columns string
	var search bool
	rewritten, searches, splits, folders, escapes := 0, 0, 0, 0, 0
	_, err := pgx.ForEachRow(rows, []any{&rid, &doc, &text, &columns, &search}, func() error {
		isJSON := json.MatchString(text)
		isSplit := !isJSON && split.MatchString(text+columns)
		folder := strings.Contains(text, `"cwd":`)
		escape := strings.Contains(strings.ToLower(text), `\u001b`) || strings.Contains(columns, "\x1b")
		may := from < 3 && isJSON || from < 4 && split.MatchString(text+columns) || from < 5 && folder || escape
		switch {
		case may && doc != want[rid]:
			t.Errorf("step %d: words %.80q after the rewrite; want %.80q", rid, doc, want[rid])
		case may:
			rewritten++
			if search {
				searches++
			}
			if isSplit {
				splits++
			}
			if folder {
				folders++
			}
			if escape {
				escapes++
			}
		case doc != "":
			t.Errorf("step %d, none of the changes since version %d: words %.80q; want them left as they were (none)", rid, from, doc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT d.rid, coalesce(d.doc::text, ''), s.id FROM search_docs d JOIN sessions s ON d.rid = -s.pk`)
	var id string
	_, err = pgx.ForEachRow(rows, []any{&rid, &doc, &id}, func() error {
		if from < 4 && id == chinese && doc != want[rid] || (from >= 4 || id != chinese) && doc != "" {
			t.Errorf("session %s: words %q after the rewrite from version %d; want %q only for the one with a workspace in Chinese, from before 4", id, doc, from, want[rid])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if escapes == 0 || rewritten == len(want) || from < 5 && (searches == 0 || splits == 0 || folders == 0) {
		t.Errorf("%d of %d steps rewritten, %d web searches, %d in Chinese, %d with a folder and %d with an ESC among them; want some of each the versions since %d changed, not all",
			rewritten, len(want), searches, splits, folders, escapes, from)
	}
}

// BenchmarkRewriteSearchWords: the first Open of a store whose words an
// earlier text rule made (rewriteSearchDocs), on scaleStore's store.
func BenchmarkRewriteSearchWords(b *testing.B) {
	s, _ := scaleStore(b)
	ctx := context.Background()
	var steps, candidates int64
	err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE payload ~ $1 OR flags ~ $1 OR coalesce(error ~ $1, false)) FROM steps`,
		textMayBeJSONInAString).Scan(&steps, &candidates)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d steps, %d of them with JSON in a string", steps, candidates)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	timed(b, func() {
		if _, err := conn.Exec(ctx, `UPDATE search_text_version SET version = 2`); err != nil {
			b.Fatal(err)
		}
	}, func() {
		if err := rewriteSearchDocs(ctx, conn); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(steps), "steps")
}

// A store from before migration 012 gets the files of its commands when
// opened: the column holds for every command step of the real samples
// what Apply writes, and path: finds a file only a command names.
func TestOpenFillsCommandFiles(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range storetest.AgentSamples(t) {
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	const filled = `SELECT pk, command_files FROM steps WHERE command_files IS NOT NULL`
	want := textByKey(t, s, filled)
	if len(want) == 0 {
		t.Fatal("no command of the samples names a file")
	}
	// The store as migration 011 left it.
	s = reopened(t, s, dsn, `DROP INDEX steps_paths; ALTER TABLE steps DROP COLUMN command_files;
		CREATE INDEX steps_paths ON steps (session_pk, seq) INCLUDE (path, type, outcome, pk) WHERE path IS NOT NULL;
		DELETE FROM schema_migrations WHERE name = 'migrations/012_step_command_files.sql'`)
	got := textByKey(t, s, filled)
	if !maps.Equal(got, want) {
		t.Errorf("command_files after migrating = %v; want what Apply wrote, %v", got, want)
	}
	// The planner knows the new column (without its statistics it read
	// every step of each session for path:).
	var stats int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE tablename = 'steps' AND attname = 'command_files'`).Scan(&stats); err != nil || stats != 1 {
		t.Errorf("statistics of steps.command_files after migrating: %d rows, %v; want 1", stats, err)
	}
	for pk, files := range want {
		name := strings.SplitN(files, "\n", 2)[0]
		var sid string
		var seq int64
		if err := s.pool.QueryRow(ctx, `SELECT s.id, st.seq FROM steps st JOIN sessions s ON s.pk = st.session_pk WHERE st.pk = $1`, pk).Scan(&sid, &seq); err != nil {
			t.Fatal(err)
		}
		r, err := s.Search(ctx, store.SearchQuery{Q: `path:"` + name + `"`, Session: sid, Limit: store.MaxSearchLimit})
		if err != nil || !slices.ContainsFunc(r.Hits, func(h store.SearchHit) bool { return h.Seq == seq }) {
			t.Errorf("Search(path:%q) in %s = %+v, %v; want step %d", name, sid, r.Hits, err, seq)
		}
	}
}

// A store from before migration 014 gets the tool of each of its steps of
// type other when opened: the column holds, for every such step of the
// real samples, the tool_name its batch gave it, and tool: finds it.
func TestOpenFillsToolNames(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, b := range storetest.AgentSamples(t) {
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		for _, st := range b.Steps {
			if st.Type == store.TypeOther {
				want[b.Session.ID+"/"+strconv.FormatInt(st.Seq, 10)] = st.Payload.ToolName
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the samples have no step of type other")
	}
	names := func() map[string]string {
		got := map[string]string{}
		rows, _ := s.pool.Query(ctx, `SELECT s.id || '/' || st.seq, st.tool_name FROM steps st JOIN sessions s ON s.pk = st.session_pk
			WHERE st.tool_name IS NOT NULL`)
		var key, name string
		if _, err := pgx.ForEachRow(rows, []any{&key, &name}, func() error { got[key] = name; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := names(); !maps.Equal(got, want) {
		t.Fatalf("tool_name as Apply wrote it = %v; want the batches' %v", got, want)
	}
	// The store as migration 013 left it.
	s = reopened(t, s, dsn, `DROP INDEX steps_tools; ALTER TABLE steps DROP COLUMN tool_name;
		DELETE FROM schema_migrations WHERE name = 'migrations/014_step_tools.sql'`)
	if got := names(); !maps.Equal(got, want) {
		t.Errorf("tool_name after migrating = %v; want the batches' %v", got, want)
	}
	for key, tool := range want {
		sid, seq, _ := strings.Cut(key, "/")
		r, err := s.Search(ctx, store.SearchQuery{Q: `tool:"` + tool + `"`, Session: sid, Limit: store.MaxSearchLimit})
		if err != nil || !slices.ContainsFunc(r.Hits, func(h store.SearchHit) bool { return strconv.FormatInt(h.Seq, 10) == seq }) {
			t.Errorf("Search(tool:%q) in %s = %+v, %v; want step %s", tool, sid, r.Hits, err, seq)
		}
	}
}

// A store from before migration 015 gets its notes' folded texts when
// opened: note: then finds a note whatever the case of its letters.
func TestOpenFoldsNotes(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b := storetest.AgentSamples(t)[0]
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	const text = "Échec: the İSTANBUL test"
	if _, err := s.AddNote(ctx, b.Session.ID, store.NoteInput{Seq: b.Steps[0].Seq, Author: "ann", Text: text}); err != nil {
		t.Fatal(err)
	}
	// The store as migration 014 left it.
	s = reopened(t, s, dsn, `ALTER TABLE notes DROP COLUMN folded;
		DELETE FROM schema_migrations WHERE name = 'migrations/015_notes_folded.sql'`)
	for _, q := range []string{"note:échec", "note:istanbul", `note:"ÉCHEC: THE"`} {
		r, err := s.Search(ctx, store.SearchQuery{Q: q})
		if err != nil || len(r.Hits) != 1 || r.Hits[0].Seq != b.Steps[0].Seq || len(r.Hits[0].Notes) != 1 || r.Hits[0].Notes[0].Text != text {
			t.Errorf("after migrating, Search(%s) = %+v, %v; want step %d with its note", q, r.Hits, err, b.Steps[0].Seq)
		}
	}
}

// textByKey is the rows of a query of two columns, a key and a text.
func textByKey(t *testing.T, s *Store, query string) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	rows, _ := s.pool.Query(context.Background(), query)
	var k int64
	var text string
	if _, err := pgx.ForEachRow(rows, []any{&k, &text}, func() error { out[k] = text; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// reopened runs sql on s's database and opens it again, closing s: a
// store an earlier build left, opened by this one.
func reopened(t *testing.T, s *Store, dsn, sql string) *Store {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
