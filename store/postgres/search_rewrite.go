package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreview/service/store"
)

// rewriteSpan is how many step pks one transaction of rewriteSearchDocs
// looks through: a transaction holds the write lock, so it is short
// (about 0.15 s) whether many or none of its steps are rewritten.
const rewriteSpan = 20_000

// textMayBeJSONInAString finds the steps whose search text version 3
// changed (store.SearchTextVersion): those with a JSON string value, in
// the payload, the error or the flags, that begins, after white space, with
// { or [, in any of the ways JSON writes those characters. A key that
// begins so matches too, which only rewrites a step's words unchanged.
const textMayBeJSONInAString = `(?:"(?:\s|\\[tnr]|\\u00(?:09|0[aA]|0[dD]|20))*(?:\[|\{|\\u00(?:5[bB]|7[bB])))`

// rewriteSearchDocs brings a store's words to this build's text rule
// (store.SearchTextVersion): the words of each step whose text may have
// changed are made again from its stored columns, rewriteSpan pks at a
// time, each span in a transaction that holds the write lock (stampLock),
// so no write comes between its read and its update; then those of the
// sessions whose own row may have (version 4: a workspace written in a
// script without spaces, store.SplitRunesPattern). Version 5 moved a
// step's working folder to the end of its text: the steps whose payload
// names a cwd (a raw's own cwd too, which only rewrites them unchanged).
// Version 6 reads text without its control sequences: the steps with an
// ESC in a column, or one written \u001b in the JSON ones.
// migrate runs it under its lock, so two processes starting together
// rewrite once.
func rewriteSearchDocs(ctx context.Context, conn *pgxpool.Conn) error {
	var version int
	var last int64
	err := conn.QueryRow(ctx, `SELECT version, (SELECT coalesce(max(pk), 0) FROM steps) FROM search_text_version`).Scan(&version, &last)
	if err != nil {
		return fmt.Errorf("search text version: %w", err)
	}
	if version >= store.SearchTextVersion {
		return nil
	}
	var pk int64
	var d store.StepDoc
	steps := []any{&pk, &d.Payload, &d.Role, &d.Text, &d.Stdout, &d.Stderr, &d.OldString, &d.NewString, &d.Err, &d.Flags}
	for lo := int64(0); lo < last; lo += rewriteSpan {
		err := rewriteWords(ctx, conn, `SELECT pk, payload, role, text, stdout, stderr, old_string, new_string, error, flags
			FROM steps WHERE pk > $1 AND pk <= $2
			  AND ($3 AND (payload ~ $4 OR flags ~ $4 OR error ~ $4)
			    OR $5 AND (payload ~ $6 OR flags ~ $6 OR error ~ $6 OR role ~ $6 OR text ~ $6 OR stdout ~ $6 OR stderr ~ $6
			      OR old_string ~ $6 OR new_string ~ $6)
			    OR $7 AND strpos(payload, '"cwd"') > 0
			    OR $8 AND (payload ~* '\\u001b' OR flags ~* '\\u001b' OR error ~* '\\u001b'
			      OR strpos(concat(role, text, stdout, stderr, old_string, new_string), chr(27)) > 0))`,
			[]any{lo, lo + rewriteSpan, version < 3, textMayBeJSONInAString, version < 4, store.SplitRunesPattern(), version < 5,
				version < 6},
			steps, func() (int64, string) { return pk, d.SearchText() })
		if err != nil {
			return fmt.Errorf("rewrite the search words: %w", err)
		}
	}
	if version < 4 {
		var agent, root string
		var repo *string
		err := rewriteWords(ctx, conn, `SELECT pk, agent_kind, workspace_root, workspace_repo FROM sessions
			WHERE workspace_root ~ $1 OR workspace_repo ~ $1`, []any{store.SplitRunesPattern()},
			[]any{&pk, &agent, &root, &repo}, func() (int64, string) { return -pk, store.SessionSearchText(agent, root, repo) })
		if err != nil {
			return fmt.Errorf("rewrite the search words of sessions: %w", err)
		}
	}
	_, err = conn.Exec(ctx, `UPDATE search_text_version SET version = $1`, store.SearchTextVersion)
	return err
}

// rewriteWords makes again the words of the rows query finds, in one
// transaction that holds the write lock (stampLock), so no write comes
// between its read and its update: each row, scanned into dest, gives row
// its search_docs rid and indexed text.
func rewriteWords(ctx context.Context, conn *pgxpool.Conn, query string, args, dest []any, row func() (rid int64, text string)) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, stampLock); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, query, args...)
		var rids []int64
		var docs []*string
		var exact []bool
		var vs tsvectors
		_, err := pgx.ForEachRow(rows, dest, func() error {
			rid, text := row()
			doc, ex := vs.of(text)
			rids, docs, exact = append(rids, rid), append(docs, doc), append(exact, ex)
			return nil
		})
		if err != nil || len(rids) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE search_docs SET doc = u.doc::tsvector, exact = u.exact
			FROM unnest($1::bigint[], $2::text[], $3::boolean[]) AS u (rid, doc, exact) WHERE search_docs.rid = u.rid`, rids, docs, exact)
		return err
	})
}
