// Package redact finds secrets in text (tokens, keys, passwords, private key
// blocks) and masks them with stable placeholders for an exported report.
//
// One keyword pass over the whole text finds where a secret could start; a
// rule's regular expression only runs there, so clean text costs one cheap pass.
package redact

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentreview/service/internal/term"
)

// Match is one secret found in a text: byte offsets of the secret value itself.
type Match struct {
	Rule       string
	Confidence Confidence
	Start, End int
}

// lineSpan and blockSpan bound how far past its keyword a match may run: to
// the end of the line (at most lineSpan), or for blocks (private keys) blockSpan.
const (
	lineSpan  = 64 << 10
	blockSpan = 64 << 10
)

// compiled is the rule set with its keyword matcher, built once.
var compiled = newEngine(rules)

type engine struct {
	rules    []rule
	res      []*regexp.Regexp // rule patterns, anchored at the keyword hit
	keywords *keywordMatcher
	owners   [][]int // keyword index -> rules it gates
}

func newEngine(rs []rule) *engine {
	e := &engine{rules: rs}
	index := map[string]int{}
	var words []string
	for ri, r := range rs {
		e.res = append(e.res, regexp.MustCompile(`^(?:`+r.pattern+`)`))
		for _, w := range r.keywords {
			k, ok := index[w]
			if !ok {
				k = len(words)
				index[w] = k
				words = append(words, w)
				e.owners = append(e.owners, nil)
			}
			e.owners[k] = append(e.owners[k], ri)
		}
	}
	e.keywords = newKeywordMatcher(words)
	return e
}

// Scan returns every secret in text, ordered by Start and non-overlapping.
// When two matches overlap, the definite one wins, then the longer one.
//
// Command output written for a terminal is read as the terminal shows it
// (term.Shown): a token printed in colour, ESC [ 1 m ghp_…, starts where
// the code ends, not glued to its "1m", and a token a colour code splits
// is one, its match running over the code.
func Scan(text string) []Match {
	shown, cuts := term.Shown(text)
	ms := compiled.scan(shown)
	if cuts != nil {
		for i := range ms {
			ms[i].Start, ms[i].End = cuts.Before(ms[i].Start), cuts.Before(ms[i].End-1)+1
		}
	}
	return ms
}

// FirstDefinite reports the first definite rule matching anywhere in text; it
// is used to re-check the final bytes of a rendered report.
func FirstDefinite(text string) (rule string, ok bool) {
	for _, m := range Scan(text) {
		if m.Confidence == Definite {
			return m.Rule, true
		}
	}
	return "", false
}

// SecretFlagReason reports whether text holds a definite secret and, if so, a
// reason naming the rules found, such as "output contains a secret (github-token)".
func SecretFlagReason(text string) (reason string, ok bool) {
	var names []string
	for _, m := range Scan(text) {
		if m.Confidence == Definite && !slices.Contains(names, m.Rule) {
			names = append(names, m.Rule)
		}
	}
	if names == nil {
		return "", false
	}
	return "output contains a secret (" + strings.Join(names, ", ") + ")", true
}

// found is a raw match before overlaps are resolved; order is the rule's index.
type found struct {
	Match
	order int
}

// longMatch is the length from which a rule's match, secret or not, makes
// the rule skip its own keywords inside it; see scan.
const longMatch = 1 << 10

// scan runs the keyword pass and, at each hit, tries the patterns of the
// rules that keyword gates. Text without keywords never reaches a pattern.
func (e *engine) scan(text string) []Match {
	var all []found
	// skipTo[ri] ends the last match of rule ri that was a secret (masked
	// whole anyway) or long: hits inside it are not tried again, or text like
	// "token=token=token=…" would rescan the same value once per hit.
	var skipTo []int
	lineEnd := -1 // end of the line holding the latest hit
	k := e.keywords
	var hits blockHits
	row := int32(0)
	for start := 0; start < len(text); start += scanBlock {
		row = k.find(text, start, min(start+scanBlock, len(text)), row, &hits)
		for _, h := range hits.all {
			i := h.at
			for _, kw := range k.out[h.row/int32(k.width)] {
				word := k.words[kw]
				at := i + 1 - len(word)
				if k.exact[kw] && text[at:i+1] != word {
					continue
				}
				if at >= lineEnd {
					lineEnd = len(text)
					if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
						lineEnd = i + j
					}
				}
				if skipTo == nil {
					skipTo = make([]int, len(e.rules))
				}
				for _, ri := range e.owners[kw] {
					if at < skipTo[ri] {
						continue
					}
					f, end, ok := e.try(text, at, lineEnd, ri)
					if ok {
						all = append(all, f)
					}
					if ok || end-at >= longMatch {
						skipTo[ri] = end
					}
				}
			}
		}
	}
	return resolve(all)
}

// scanBlock is how much text the keyword pass reads between two rounds of
// trying patterns, so the hits it holds stay bounded whatever the text.
const scanBlock = 16 << 10

// hit is a position where a keyword ends, with the matcher's row there.
type hit struct {
	at  int
	row int32
}

// blockHits holds a block's hits, in order, once find returns (all), and
// the second pass's while it runs (second); both are reused block to block.
type blockHits struct {
	all, second []hit
}

// find sets h.all to the keyword hits of text[start:end], in order, and
// returns the row at end; row is the row at start.
//
// The automaton's next row depends on the one before, so one pass waits on
// each lookup. find runs two passes at once instead, over the two halves of
// the block. A row depends on the last maxLen bytes at most, so the second
// pass, started from row 0 maxLen-1 bytes before the first pass ends, has
// the true rows from there on; its hits before that are the first pass's.
func (k *keywordMatcher) find(text string, start, end int, row int32, h *blockHits) int32 {
	delta, class, final := k.delta, &k.class, k.finalFrom
	h.all, h.second = h.all[:0], h.second[:0]
	n := (end - start + k.maxLen) / 2 // each pass's length: 2n >= end-start+maxLen-1
	if n < 4*k.maxLen {
		for i := start; i < end; i++ {
			row = int32(delta[row+int32(class[text[i]])])
			if row >= final {
				h.all = append(h.all, hit{i, row})
			}
		}
		return row
	}
	a, b := text[start:start+n], text[end-n:end]
	rb := int32(0)
	for i := 0; i < n; i++ {
		if i, row, rb = k.run2(a, b, i, row, rb); i == n {
			break
		}
		if row >= final {
			h.all = append(h.all, hit{start + i, row})
		}
		if rb >= final && end-n+i >= start+n {
			h.second = append(h.second, hit{end - n + i, rb})
		}
	}
	h.all = append(h.all, h.second...)
	return rb
}

// run2 steps both passes of find from byte i of a and b (of equal length)
// until either reaches a keyword's end, returning there (or len(a)) and the
// two rows. Not inlined, so its rows stay in registers.
//
//go:noinline
func (k *keywordMatcher) run2(a, b string, i int, ra, rb int32) (int, int32, int32) {
	delta, class, final := k.delta, &k.class, k.finalFrom
	b = b[:len(a)]
	for ; i < len(a); i++ {
		ra = int32(delta[ra+int32(class[a[i]])])
		rb = int32(delta[rb+int32(class[b[i]])])
		if ra >= final || rb >= final {
			return i, ra, rb
		}
	}
	return i, ra, rb
}

// try matches rule ri anchored at offset at. It returns the match's end (or
// at when the pattern does not match) and whether it holds a secret.
func (e *engine) try(text string, at, lineEnd, ri int) (f found, end int, ok bool) {
	r := &e.rules[ri]
	if r.guard != nil && !r.guard(text, at) {
		return found{}, at, false
	}
	limit := min(lineEnd, at+lineSpan)
	if r.block {
		limit = min(len(text), at+blockSpan)
	}
	loc := e.res[ri].FindStringSubmatchIndex(text[at:limit])
	if loc == nil {
		return found{}, at, false
	}
	end = at + loc[1]
	start, stop := valueBounds(loc)
	if start < 0 || start == stop {
		return found{}, end, false
	}
	v := stripPlaceholders(text[at+start : at+stop])
	if isPlaceholder(v) || (r.valid != nil && !r.valid(v)) {
		return found{}, end, false
	}
	return found{Match{r.id, r.confidence, at + start, at + stop}, ri}, end, true
}

// valueBounds picks the secret out of a submatch index: the first group that
// took part, or the whole match for patterns without groups.
func valueBounds(loc []int) (start, end int) {
	if len(loc) == 2 {
		return loc[0], loc[1]
	}
	for g := 2; g < len(loc); g += 2 {
		if loc[g] >= 0 {
			return loc[g], loc[g+1]
		}
	}
	return -1, -1
}

// resolve drops overlapping matches, keeping definite over candidate, then the
// longer, then the earlier, then the higher-priority rule; the rest are
// returned ordered by Start.
func resolve(all []found) []Match {
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b found) int {
		if a.Confidence != b.Confidence {
			if a.Confidence == Definite {
				return -1
			}
			return 1
		}
		if la, lb := a.End-a.Start, b.End-b.Start; la != lb {
			return lb - la
		}
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.order - b.order
	})
	var kept []Match // sorted by Start
	for _, f := range all {
		i, _ := slices.BinarySearchFunc(kept, f.Start, func(m Match, start int) int { return m.Start - start })
		if i > 0 && kept[i-1].End > f.Start || i < len(kept) && kept[i].Start < f.End {
			continue
		}
		kept = slices.Insert(kept, i, f.Match)
	}
	return kept
}

// keywordMatcher finds every keyword in one pass over the text: an
// Aho-Corasick automaton over ASCII-folded bytes, with bytes that occur in no
// keyword collapsed into one class so the table stays small.
type keywordMatcher struct {
	words  []string
	maxLen int    // the longest keyword's length
	exact  []bool // keyword has upper case, so the folded hit is re-checked
	class  [256]uint8
	width  int
	// delta maps a state's row offset + class to the next state's row
	// offset; 16 bits keep the table in a core's first-level cache.
	delta []uint16
	// finalFrom is the first row offset of the states where keywords end.
	finalFrom int32
	out       [][]int // state number (row offset / width) -> keywords ending there
}

func newKeywordMatcher(words []string) *keywordMatcher {
	k := &keywordMatcher{words: words, exact: make([]bool, len(words)), width: 1}
	for i, w := range words {
		lw := strings.ToLower(w)
		k.exact[i] = lw != w
		k.maxLen = max(k.maxLen, len(w))
		for j := 0; j < len(lw); j++ {
			c := lw[j]
			if k.class[c] != 0 {
				continue
			}
			k.class[c] = uint8(k.width)
			if 'a' <= c && c <= 'z' {
				k.class[c-'a'+'A'] = uint8(k.width)
			}
			k.width++
		}
	}
	// Build the trie; -1 marks a missing edge until the failure links fill it.
	newState := func() []int32 {
		row := make([]int32, k.width)
		for c := range row {
			row[c] = -1
		}
		return row
	}
	trie := [][]int32{newState()}
	out := [][]int{nil}
	for i, w := range words {
		s := int32(0)
		for j := 0; j < len(w); j++ {
			c := k.class[w[j]]
			if trie[s][c] < 0 {
				trie[s][c] = int32(len(trie))
				trie = append(trie, newState())
				out = append(out, nil)
			}
			s = trie[s][c]
		}
		out[s] = append(out[s], i)
	}
	// Breadth-first, so a state's failure target is complete before the state.
	fail := make([]int32, len(trie))
	var queue []int32
	for c := range trie[0] {
		if s := trie[0][c]; s < 0 {
			trie[0][c] = 0
		} else {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		out[r] = append(out[r], out[fail[r]]...)
		for c, s := range trie[r] {
			if s < 0 {
				trie[r][c] = trie[fail[r]][c]
				continue
			}
			fail[s] = trie[fail[r]][c]
			queue = append(queue, s)
		}
	}
	// Number states so that those where a keyword ends come last, and store
	// row offsets rather than state numbers: the hot loop then needs neither
	// a multiplication nor a second table to know whether it has a hit.
	id := make([]int32, len(trie))
	var order []int
	for pass := range 2 {
		for s := range trie {
			if (len(out[s]) > 0) == (pass == 1) {
				id[s] = int32(len(order))
				order = append(order, s)
			}
		}
		if pass == 0 {
			k.finalFrom = int32(len(order) * k.width)
		}
	}
	if len(trie)*k.width > 1<<16 {
		panic("redact: too many keywords for the matcher's 16-bit rows")
	}
	k.delta = make([]uint16, 0, len(trie)*k.width)
	k.out = make([][]int, len(trie))
	for n, s := range order {
		for _, next := range trie[s] {
			k.delta = append(k.delta, uint16(id[next]*int32(k.width)))
		}
		k.out[n] = out[s]
	}
	return k
}
