package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/postgres/pgtest"
	"github.com/agentreview/service/store/storetest"
	"github.com/jackc/pgx/v5"
)

// Templates of the scale store: scaleTemplates sessions made by
// storetest.Batch and written through Apply, of 250, 350, ... steps
// (4,800 in all), each with contents of its own.
const scaleTemplates = 8

func scaleTemplateSteps(t int) int { return 250 + 100*t }

// scaleVaried is the template word that each copy renames to
// scaleVaried+(generation mod scaleVariants): a word of one template in
// scaleVariants, so a query for timeout7 hits about one generation in
// 1,000 of the store (the rare word), where error hits most sessions.
const (
	scaleVaried   = "timeout"
	scaleVariants = 1000
)

// BenchmarkScale is search and list on a store of PG_BENCH_STEPS steps
// (default 100,000), reported as p50 and p99 latency. The store is built
// by buildScale: the templates through Apply, then copies made in SQL.
// With PG_BENCH_DSN the store is that database, kept for the next run and
// grown to PG_BENCH_STEPS when it holds fewer; without it, a database of
// the test's own (pgtest.DSN).
func BenchmarkScale(b *testing.B) {
	s, dsn := scaleStore(b)
	ctx := context.Background()
	markOldest(b, s)
	var steps, sessions, dbSize, gin, docs, text int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM sessions),
		  pg_database_size(current_database()), pg_relation_size('search_docs_doc'), pg_total_relation_size('search_docs'),
		  (SELECT sum(coalesce(octet_length(payload), 0) + coalesce(octet_length(stdout), 0) + coalesce(octet_length(stderr), 0)
		     + coalesce(octet_length(text), 0) + coalesce(octet_length(old_string), 0) + coalesce(octet_length(new_string), 0)) FROM steps)`).
		Scan(&steps, &sessions, &dbSize, &gin, &docs, &text)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d steps in %d sessions; database %.2f GB; GIN index %.2f GB, search_docs with its indexes %.2f GB, for %.2f GB of step text",
		steps, sessions, float64(dbSize)/1e9, float64(gin)/1e9, float64(docs)/1e9, float64(text)/1e9)

	// The list page deep in keyset paging: the cursor of the session
	// two thirds down the list, as a client paging 50 at a time reaches it.
	var deepNS int64
	var deepID string
	err = s.pool.QueryRow(ctx, `SELECT started_ns, id FROM sessions ORDER BY started_ns DESC, id COLLATE "C" OFFSET $1 LIMIT 1`,
		sessions*2/3).Scan(&deepNS, &deepID)
	if err != nil {
		b.Fatal(err)
	}
	deep := store.ListCursor(deepNS, deepID)
	rare := fmt.Sprintf("%s%d", scaleVaried, 7%scaleVariants)
	for _, q := range []struct{ name, q string }{
		{"search/word-common", "error"},
		{"search/word-rare", rare},
		// more than rareHits rows, all in the oldest sessions
		{"search/word-old", scaleOld},
		{"search/phrase+2filters", `"fix config" type:message owner:user7`},
		{"search/prefix", "handl*"},
		// Filters alone: many hits, few, none.
		{"search/filter", "type:command"},
		{"search/filter-few", "flag:dangerous_command"},
		{"search/filter-none", "path:no/such/dir"},
		{"search/filter-tool", "tool:TodoWrite"},
		{"search/filter-tool-none", "tool:NoSuchTool"},
		{"search/filter-command-none", `command:"no such command"`},
	} {
		b.Run(q.name, func(b *testing.B) {
			var hits int
			timed(b, nil, func() {
				r, err := s.Search(ctx, store.SearchQuery{Q: q.q})
				if err != nil {
					b.Fatalf("Search(%q) = %v", q.q, err)
				}
				hits = len(r.Hits)
			})
			b.ReportMetric(float64(hits), "hits")
		})
	}
	// "cold" is the first list of a process (a new Store), which counts
	// the steps of every listed session; the others read what the store
	// remembers of each session by change stamp after the first.
	for _, l := range []struct {
		name string
		q    store.ListQuery
		cold bool
	}{
		{"list/first-page", store.ListQuery{Limit: 50}, false},
		{"list/first-page-cold", store.ListQuery{Limit: 50}, true},
		{"list/deep-page", store.ListQuery{Limit: 50, After: deep}, false},
		{"list/deep-page-cold", store.ListQuery{Limit: 50, After: deep}, true},
		{"list/owner-first-page", store.ListQuery{Limit: 50, Owner: "user7"}, false},
		{"list/unpaged", store.ListQuery{}, false},
		{"list/unpaged-cold", store.ListQuery{}, true},
	} {
		b.Run(l.name, func(b *testing.B) {
			var n int
			shared := s
			s := s
			var fresh func()
			if l.cold {
				fresh = func() {
					if s != shared {
						s.Close() // the one before: a process at a time
					}
					s = mustOpenDSN(b, dsn)
				}
			}
			timed(b, fresh, func() {
				r, err := s.List(ctx, l.q)
				if err != nil {
					b.Fatalf("List(%+v) = %v", l.q, err)
				}
				n = len(r.Sessions)
			})
			b.ReportMetric(float64(n), "sessions")
		})
	}
}

// scaleOld is a word markOldest adds to the scale store's oldest sessions.
const scaleOld = "oldword"

// markOldest adds scaleOld to the output of every step of the scale
// store's 24 oldest sessions (three generations, 14,400 steps: more than
// rareHits), and to their tsvectors, unless it is there: a word whose
// rows are all in old sessions, which a walk of the sessions newest
// first reaches last.
func markOldest(b *testing.B, s *Store) {
	ctx := context.Background()
	var marked bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM search_docs WHERE doc @@ $1::tsquery)", scaleOld).Scan(&marked); err != nil || marked {
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		for _, sql := range []string{
			"CREATE TEMP TABLE oldest ON COMMIT DROP AS SELECT pk FROM sessions ORDER BY started_ns, pk LIMIT 24",
			"UPDATE steps SET stdout = coalesce(stdout, '') || ' ' || $1 WHERE session_pk IN (SELECT pk FROM oldest)",
			"UPDATE search_docs SET doc = doc || $1::tsvector WHERE rid > 0 AND session_pk IN (SELECT pk FROM oldest)",
		} {
			args := []any{scaleOld}
			if !strings.Contains(sql, "$1") {
				args = nil
			}
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		_, err = s.pool.Exec(ctx, "ANALYZE search_docs")
	}
	if err != nil {
		b.Fatal(err)
	}
}

// timed runs f b.N times, each after setup when there is one (not
// timed), and reports the p50 and p99 of f's durations.
func timed(b *testing.B, setup, f func()) {
	var times []time.Duration
	for b.Loop() {
		if setup != nil {
			b.StopTimer()
			setup()
			b.StartTimer()
		}
		start := time.Now()
		f()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Microseconds())/1000, "p99-ms")
}

// scaleStore is the store of the scale benchmarks and its URL:
// PG_BENCH_DSN's database (kept for the next run) or a new one, grown by
// buildScale to PG_BENCH_STEPS steps (default 100,000).
func scaleStore(b *testing.B) (*Store, string) {
	target := 100_000
	if n, err := strconv.Atoi(os.Getenv("PG_BENCH_STEPS")); err == nil && n > 0 {
		target = n
	}
	dsn := os.Getenv("PG_BENCH_DSN")
	if dsn == "" {
		dsn = pgtest.DSN(b)
	}
	s := mustOpenDSN(b, dsn)
	buildScale(b, s, target)
	return s, dsn
}

// buildScale grows s to at least target steps. The templates (sessions
// tpl-0 .. tpl-7) are written through Apply once; then each generation g
// (1, 2, ...) copies every template session in SQL into a new session
// with its own id (tpl-N-gG), pks (the template's plus g times the largest
// template pk), owner (user0 .. user49), start (ten minutes apart, older
// with each generation) and the word scaleVaried renamed in its text and
// its search words. Generations are committed a chunk at a time, so an
// interrupted build resumes; the GIN index of search_docs is dropped
// while rows are copied and built again at the end, and foreign-key
// triggers are off for the copy (its rows point at rows it copied).
func buildScale(b *testing.B, s *Store, target int) {
	ctx := context.Background()
	var have int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE id LIKE 'tpl-%' AND id NOT LIKE '%-g%'`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == 0 {
		for t := range scaleTemplates {
			mustApply(b, s, storetest.Batch(fmt.Sprintf("tpl-%d", t), 0, scaleTemplateSteps(t)))
		}
	}
	var sessPK, stepPK, tplSteps, gens int64
	err := s.pool.QueryRow(ctx, `SELECT max(s.pk), max(st.pk), count(st.pk) FROM sessions s JOIN steps st ON st.session_pk = s.pk
		WHERE s.id LIKE 'tpl-%' AND s.id NOT LIKE '%-g%'`).Scan(&sessPK, &stepPK, &tplSteps)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(pk), 0) / $1 - 1 FROM sessions`, sessPK).Scan(&gens); err != nil {
		b.Fatal(err)
	}
	want := (int64(target)+tplSteps-1)/tplSteps - 1 // generations besides the templates
	if gens >= want {
		return
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	exec := func(sql string, args ...any) {
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`SET session_replication_role = replica`)
	exec(`SET maintenance_work_mem = '2GB'`)
	exec(`DROP INDEX IF EXISTS search_docs_doc`)
	start := time.Now()
	const chunk = 20 // generations per transaction: ~96,000 steps
	for g0 := gens + 1; g0 <= want; g0 += chunk {
		g1 := min(g0+chunk-1, want)
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, sql := range scaleCopy {
			args := pgx.NamedArgs{"g0": g0, "g1": g1, "sess": sessPK, "step": stepPK}
			if _, err := tx.Exec(ctx, sql, args); err != nil {
				b.Fatalf("copy generations %d-%d: %v\n%s", g0, g1, err, sql)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "scale: %d of %d generations (%d steps) in %v\n", g1, want, (g1+1)*tplSteps, time.Since(start).Round(time.Second))
	}
	copied := time.Since(start)
	exec(`CREATE INDEX search_docs_doc ON search_docs USING gin (doc)`)
	indexed := time.Since(start) - copied
	exec(`SELECT setval(pg_get_serial_sequence('sessions', 'pk'), (SELECT max(pk) FROM sessions))`)
	exec(`SELECT setval(pg_get_serial_sequence('steps', 'pk'), (SELECT max(pk) FROM steps))`)
	exec(`UPDATE clock SET last = greatest(last, (SELECT max(updated_at) FROM sessions))`)
	exec(`VACUUM ANALYZE`)
	b.Logf("built %d generations: copies %v, GIN index %v, vacuum analyze %v", want-gens, copied.Round(time.Second),
		indexed.Round(time.Second), (time.Since(start) - copied - indexed).Round(time.Second))
	fmt.Fprintf(os.Stderr, "scale: built %d generations: copies %v, GIN index %v, vacuum analyze %v\n", want-gens, copied.Round(time.Second),
		indexed.Round(time.Second), (time.Since(start) - copied - indexed).Round(time.Second))
}

// scaleCopy copies the template sessions into generations @g0..@g1 (@sess is
// the largest template session pk, @step the largest template step pk), one
// statement per table, as buildScale describes.
var scaleCopy = []string{
	`INSERT INTO sessions (pk, id, agent_kind, agent_version, agent_format_version, workspace_root, workspace_repo,
	   started_at, started_ns, ended_at, source, metrics, owner_id, captured_on, verdict_state, verdict_note, verdict_reviewer, updated_at)
	 OVERRIDING SYSTEM VALUE
	 SELECT s.pk + g*@sess, s.id || '-g' || g, s.agent_kind, s.agent_version, s.agent_format_version, s.workspace_root, s.workspace_repo,
	   to_char(to_timestamp(n.ns / 1e9) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), n.ns, s.ended_at, s.source, s.metrics,
	   'user' || (g % 50), s.captured_on, s.verdict_state, s.verdict_note, s.verdict_reviewer, s.updated_at
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN sessions s
	   CROSS JOIN LATERAL (SELECT s.started_ns - (g*@sess + s.pk) * 600000000000 AS ns) n
	 WHERE s.pk <= @sess`,
	`INSERT INTO segments (session_pk, idx, start_reason, started_at, ended_at, source_files)
	 SELECT x.session_pk + g*@sess, x.idx, x.start_reason, x.started_at, x.ended_at, x.source_files
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN segments x WHERE x.session_pk <= @sess`,
	`INSERT INTO actors (session_pk, id, parent_id, type, label)
	 SELECT x.session_pk + g*@sess, x.id, x.parent_id, x.type, x.label
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN actors x WHERE x.session_pk <= @sess`,
	`INSERT INTO turns (session_pk, id, segment_index, actor_id, idx, prompt_id, mode, started_at, updated_at)
	 SELECT x.session_pk + g*@sess, x.id, x.segment_index, x.actor_id, x.idx, x.prompt_id, x.mode, x.started_at, x.updated_at
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN turns x WHERE x.session_pk <= @sess`,
	`INSERT INTO steps (pk, session_pk, id, seq, segment_index, turn_id, actor_id, at, type, decision, outcome, content_status,
	   role, flag_count, error, channels, flags, updated_at, payload, stdout, stderr, text, old_string, new_string,
	   command_files, tool_name)
	 OVERRIDING SYSTEM VALUE
	 SELECT x.pk + g*@step, x.session_pk + g*@sess, x.id, x.seq, x.segment_index, x.turn_id, x.actor_id, x.at, x.type, x.decision,
	   x.outcome, x.content_status, x.role, x.flag_count, x.error, x.channels, x.flags, x.updated_at,
	   replace(x.payload, '` + scaleVaried + `', v.word), replace(x.stdout, '` + scaleVaried + `', v.word),
	   replace(x.stderr, '` + scaleVaried + `', v.word), replace(x.text, '` + scaleVaried + `', v.word),
	   replace(x.old_string, '` + scaleVaried + `', v.word), replace(x.new_string, '` + scaleVaried + `', v.word),
	   x.command_files, x.tool_name
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN steps x
	   CROSS JOIN LATERAL (SELECT '` + scaleVaried + `' || (g % ` + strconv.Itoa(scaleVariants) + `) AS word) v
	 WHERE x.session_pk <= @sess`,
	// A step's words with scaleVaried renamed, positions kept: the
	// tsvector written out as text and read back.
	`INSERT INTO search_docs (rid, session_pk, doc, exact)
	 SELECT CASE WHEN d.rid > 0 THEN d.rid + g*@step ELSE d.rid - g*@sess END, d.session_pk + g*@sess,
	   CASE WHEN d.rid > 0 AND d.doc @@ '` + scaleVaried + `'::tsquery THEN
	     (SELECT string_agg('''' || replace(replace(CASE WHEN u.lexeme = '` + scaleVaried + `' THEN v.word ELSE u.lexeme END, '\', '\\'), '''', '''''')
	        || '''' || CASE WHEN cardinality(u.positions) > 0 THEN ':' || array_to_string(u.positions, ',') ELSE '' END, ' ')
	      FROM unnest(d.doc) u)::tsvector
	   ELSE d.doc END, d.exact
	 FROM generate_series(@g0::bigint, @g1::bigint) g CROSS JOIN search_docs d
	   CROSS JOIN LATERAL (SELECT '` + scaleVaried + `' || (g % ` + strconv.Itoa(scaleVariants) + `) AS word) v
	 WHERE d.session_pk <= @sess`,
}
