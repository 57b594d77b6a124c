package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeywordHitsInBlocks checks the keyword pass scan makes, block by block
// with two passes over each, against a search for every keyword at every
// offset: texts of keyword parts and whole keywords in any case, many
// across the blocks' and their halves' borders, and short ones read in
// one pass.
func TestKeywordHitsInBlocks(t *testing.T) {
	k := compiled.keywords
	r := rand.New(rand.NewPCG(7, 9))
	texts := []string{"", "sk-", strings.Repeat("token=", 3), benchText(3*scanBlock+123, 10)}
	for _, size := range []int{4*k.maxLen - 1, 8*k.maxLen + 1, scanBlock - 1, scanBlock + 5, 2*scanBlock + 77} {
		var b strings.Builder
		for b.Len() < size {
			w := k.words[r.IntN(len(k.words))]
			switch r.IntN(4) {
			case 0:
				w = strings.ToUpper(w)
			case 1:
				w = w[:r.IntN(len(w))] // a part, which ends no keyword
			case 2:
				w = string(rune('a' + r.IntN(26)))
			}
			b.WriteString(w)
		}
		texts = append(texts, b.String()[:size])
	}
	// The longest keyword ending at each offset near where the first
	// block's first pass ends, and near the next block.
	longest := slices.MaxFunc(k.words, func(a, b string) int { return len(a) - len(b) })
	half := (scanBlock + k.maxLen) / 2
	for _, last := range []int{half - 2, half - 1, half, half + 1, half + 2, scanBlock - 1, scanBlock, scanBlock + 1} {
		text := []byte(strings.Repeat("x", 2*scanBlock))
		copy(text[last+1-len(longest):], longest)
		texts = append(texts, string(text))
	}
	type end struct{ at, kw int }
	for _, text := range texts {
		var want, got []end
		for i := range len(text) {
			for kw, w := range k.words {
				if at := i + 1 - len(w); at >= 0 && strings.EqualFold(text[at:i+1], w) {
					want = append(want, end{i, kw})
				}
			}
		}
		var h blockHits
		row := int32(0)
		for start := 0; start < len(text); start += scanBlock {
			row = k.find(text, start, min(start+scanBlock, len(text)), row, &h)
			for _, x := range h.all {
				for _, kw := range k.out[x.row/int32(k.width)] {
					got = append(got, end{x.at, kw})
				}
			}
		}
		cmp := func(a, b end) int {
			if a.at != b.at {
				return a.at - b.at
			}
			return a.kw - b.kw
		}
		slices.SortFunc(want, cmp)
		if !slices.IsSortedFunc(got, func(a, b end) int { return a.at - b.at }) {
			t.Errorf("hits of a %d-byte text are not in order", len(text))
		}
		slices.SortFunc(got, cmp)
		if !slices.Equal(got, want) {
			t.Errorf("a %d-byte text: %d keyword hits; want %d", len(text), len(got), len(want))
		}
	}
}
