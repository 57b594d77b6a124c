package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
)

// mustTallies is step_tallies, or with counted true the same groups
// counted from the steps themselves, as sorted rows.
func mustTallies(t *testing.T, s *Store, counted bool) []string {
	t.Helper()
	sql := `SELECT format('%s %s %s %s %s %s', session_pk, type, failed, reference_only, steps, flags) FROM step_tallies`
	if counted {
		sql = `SELECT format('%s %s %s %s %s %s', session_pk, type, outcome = 'failed', content_status = 'reference_only',
			count(*), sum(flag_count)) FROM steps GROUP BY session_pk, type, outcome, content_status`
	}
	rows, _ := s.pool.Query(context.Background(), sql)
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// The counts Apply keeps (step_tallies) are the steps' own after every
// kind of write: new steps, a re-send, steps rewritten into another group
// (failed, reference-only, flagged, another type) and back, new steps of
// a stored session, and a deleted session.
func TestStepTalliesFollowSteps(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	check := func(after string) {
		t.Helper()
		got, want := mustTallies(t, s, false), mustTallies(t, s, true)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("after %s: step_tallies\n%v\nwant the steps' own counts\n%v", after, got, want)
		}
	}
	mustApply(t, s, gen("a", 0, 60))
	check("a new session")
	mustApply(t, s, gen("b", 0, 30))
	mustApply(t, s, gen("a", 0, 60))
	check("a re-send")

	b := gen("a", 0, 60)
	first := map[string]int{} // the first step of each type
	for i, st := range b.Steps {
		if _, ok := first[st.Type]; !ok {
			first[st.Type] = i
		}
	}
	if len(first) < 3 {
		t.Fatalf("the batch has steps of %d types; want 3 or more", len(first))
	}
	cmd, msg := &b.Steps[first[store.TypeCommand]], b.Steps[first[store.TypeMessage]]
	cmd.Type, cmd.Payload, cmd.Flags = msg.Type, msg.Payload, []store.Flag{} // another type, without its flags
	b.Steps[1].Outcome = "failed"
	b.Steps[2].ContentStatus = store.ContentReferenceOnly
	b.Steps[4].Flags = append(b.Steps[4].Flags, store.Flag{Kind: "dangerous_command", Severity: "danger", Reason: "test"})
	mustApply(t, s, b)
	check("steps rewritten into other groups")

	mustApply(t, s, gen("a", 1, 60))
	check("new steps of a stored session")
	b.Steps[1].Outcome, b.Steps[2].ContentStatus = "ok", store.ContentInline
	mustApply(t, s, b)
	check("steps rewritten back")

	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	check("a deleted session")
}

// Migration 008 counts the steps of a database made before it.
func TestStepTalliesMigration(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := mustOpenDSN(t, dsn)
	mustApply(t, s, gen("a", 0, 60))
	mustApply(t, s, gen("b", 0, 30))
	// As a database of migration 007 would be: no tallies.
	if _, err := s.pool.Exec(ctx, `DROP TABLE step_tallies; DELETE FROM schema_migrations WHERE name LIKE '%/008_step_tallies.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpenDSN(t, dsn)
	if got, want := mustTallies(t, s, false), mustTallies(t, s, true); len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("after migration 008: step_tallies\n%v\nwant the steps' own counts\n%v", got, want)
	}
}
