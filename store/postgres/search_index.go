package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"

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
	var vs tsvectors
	add := func(rid int64, text string) {
		v, ex := vs.of(text)
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

// tsvectors makes the tsvector (as text) of one indexed text after
// another (of), keeping its slices and map from one to the next: a push
// makes one for each of its steps.
type tsvectors struct {
	tokens []store.SearchToken
	next   []int32 // for each token, the next of the same word; -1 after its last
	words  []tsWord
	index  map[string]int32 // a word's place in words
}

// tsWord is a word of a text and where its tokens are.
type tsWord struct {
	term        string
	first, last int32 // its first and last token; next chains the rest
	n           int
}

// of is the tsvector of text: its words (store.SearchTokens) with their
// positions, from 1, when they fit (exact); the words alone when not;
// nil when not even those fit. Each word is held once, its positions
// chained through next, and the text is written into one buffer sized
// for it: a map of position slices, a string per word and per number made
// 26 KB of garbage a step and were 40% of a 5,000-step push's Go CPU
// (docs/performance.md, "PostgreSQL's words of a push").
func (m *tsvectors) of(text string) (doc *string, exact bool) {
	m.tokens = store.AppendSearchTokens(m.tokens[:0], text)
	tokens := m.tokens
	m.next = slices.Grow(m.next[:0], len(tokens))[:len(tokens)]
	next := m.next
	if m.index == nil {
		m.index = map[string]int32{}
	}
	clear(m.index)
	words := m.words[:0]
	defer func() { m.words = words }()
	size, fits := 0, true // size: of the text with positions, as PostgreSQL counts it
	for i, t := range tokens {
		if len(t.Term) > maxTSWordBytes {
			return nil, false
		}
		next[i] = -1
		k, seen := m.index[t.Term]
		if !seen {
			k = int32(len(words))
			m.index[t.Term] = k
			words = append(words, tsWord{term: t.Term, first: int32(i), last: int32(i)})
			size += len(t.Term) + 8
		} else {
			next[words[k].last], words[k].last = int32(i), int32(i)
		}
		words[k].n++
		size += 2
		fits = fits && i+1 <= maxTSPosition && words[k].n <= maxTSPositions
	}
	if fits && size > maxTSBytes {
		return nil, false
	}
	room := len(words) * 4 // a space and quotes a word
	for _, w := range words {
		room += len(w.term)
	}
	if fits {
		room += len(tokens) * 6 // a separator and up to five digits a position
	}
	b := make([]byte, 0, min(room, maxTSBytes+1))
	for j, w := range words {
		if j > 0 {
			b = append(b, ' ')
		}
		b = appendLexeme(b, w.term)
		for p, sep := w.first, byte(':'); fits && p >= 0; p, sep = next[p], ',' {
			b = strconv.AppendInt(append(b, sep), int64(p)+1, 10)
		}
		if len(b) > maxTSBytes {
			return nil, false
		}
	}
	s := string(b)
	return &s, fits
}

// tsLexeme quotes a word for tsvector and tsquery input (a word has no
// quote or backslash, being letters and digits, but a quoted one would
// still be read right).
func tsLexeme(term string) string { return string(appendLexeme(nil, term)) }

// appendLexeme appends term quoted as tsLexeme quotes it.
func appendLexeme(b []byte, term string) []byte {
	b = append(b, '\'')
	for i := 0; i < len(term); i++ {
		if c := term[i]; c == '\'' || c == '\\' {
			b = append(b, c)
		}
		b = append(b, term[i])
	}
	return append(b, '\'')
}
