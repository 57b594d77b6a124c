package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// What a tsvector holds (PostgreSQL's ts_type.h): positions up to
// 16,383, at most 256 of them per word, words shorter than 2,047 bytes,
// and about 1 MB in all.
const (
	maxTSPosition  = 16383
	maxTSPositions = 256
	maxTSWordBytes = 2046
	maxTSBytes     = 900_000 // below the 1 MB limit, with room for its headers
)

// indexWrite indexes what a write changed, in the write's own transaction:
// the steps of b that it stamped (steps.updated_at = stamp), docs[i] what
// b.Steps[i] indexes, and the session's own row. Apply calls it once per
// batch that changed something.
func indexWrite(ctx context.Context, tx pgx.Tx, sessionPK int64, b *store.Batch, docs []store.StepDoc, stamp int64) error {
	rows, _ := tx.Query(ctx, `SELECT id, pk FROM steps WHERE session_pk = $1 AND updated_at = $2`, sessionPK, stamp)
	changed, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		ID string
		PK int64
	}])
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	pks := make(map[string]int64, len(changed))
	for _, c := range changed {
		pks[c.ID] = c.PK
	}
	var rids []int64
	var vectors []*string
	var exact []bool
	add := func(rid int64, text string) {
		v, ex := tsvectorOf(text)
		rids, vectors, exact = append(rids, rid), append(vectors, v), append(exact, ex)
	}
	for i := range b.Steps {
		pk, ok := pks[b.Steps[i].ID]
		if !ok {
			continue
		}
		add(pk, docs[i].SearchText())
	}
	var agent, root string
	var repo *string
	err = tx.QueryRow(ctx, `SELECT agent_kind, workspace_root, workspace_repo FROM sessions WHERE pk = $1`, sessionPK).Scan(&agent, &root, &repo)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	add(-sessionPK, store.SessionSearchText(agent, root, repo))
	_, err = tx.Exec(ctx, `INSERT INTO search_docs (rid, session_pk, doc, exact)
		SELECT rid, $1, doc::tsvector, exact FROM unnest($2::bigint[], $3::text[], $4::boolean[]) AS u (rid, doc, exact)
		ON CONFLICT (rid) DO UPDATE SET doc = excluded.doc, exact = excluded.exact`, sessionPK, rids, vectors, exact)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// tsvectorOf is the tsvector (as text) of an indexed text: its words
// (store.SearchTokens) with their positions, from 1, when they fit
// (exact); the words alone when not; nil when not even those fit.
func tsvectorOf(text string) (doc *string, exact bool) {
	tokens := store.SearchTokens(text)
	positions := map[string][]int{}
	var order []string
	size := 0
	fits := true
	for i, t := range tokens {
		if len(t.Term) > maxTSWordBytes {
			return nil, false
		}
		if _, ok := positions[t.Term]; !ok {
			order = append(order, t.Term)
			size += len(t.Term) + 8
		}
		positions[t.Term] = append(positions[t.Term], i+1)
		size += 2
		fits = fits && i+1 <= maxTSPosition && len(positions[t.Term]) <= maxTSPositions
	}
	var b strings.Builder
	for _, term := range order {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tsLexeme(term))
		if !fits {
			continue
		}
		for i, p := range positions[term] {
			if i == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	if b.Len() > maxTSBytes || (fits && size > maxTSBytes) {
		return nil, false
	}
	s := b.String()
	return &s, fits
}

// tsLexeme quotes a word for tsvector and tsquery input (a word has no
// quote or backslash, being letters and digits, but a quoted one would
// still be read right).
func tsLexeme(term string) string {
	if strings.ContainsAny(term, `'\`) {
		term = lexemeEscaper.Replace(term)
	}
	return "'" + term + "'"
}

var lexemeEscaper = strings.NewReplacer(`'`, `''`, `\`, `\\`)
