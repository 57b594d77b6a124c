package store

import (
	"slices"
	"testing"
)

// FuzzStepWindow checks the window of one turn against its steps: every
// step is kept or in exactly one gap, each gap names the kept steps about
// it and counts the steps between, the turn's first (unless the read
// starts after a step), its last steps, the steps from an anchor and the
// steps around a link are kept, and nothing else beyond them.
func FuzzStepWindow(f *testing.F) {
	f.Add(uint16(1234), uint8(200), uint16(600), uint16(0), uint8(3), false)
	f.Add(uint16(20), uint8(5), uint16(0), uint16(12), uint8(1), false)
	f.Add(uint16(700), uint8(50), uint16(650), uint16(100), uint8(7), true)
	f.Fuzz(func(t *testing.T, n uint16, steps uint8, around, from uint16, stride uint8, after bool) {
		if steps == 0 || n > 5000 {
			return
		}
		q := DetailQuery{Steps: int(steps)}
		base := int64(0) // the first seq a session may have
		if after {
			base, q.StepsAfter = 10, new(int64(5))
		}
		s := make([]int64, n)
		for i := range s {
			s[i] = base + int64(i)*(1+int64(stride)) // seqs with holes (other turns' steps)
		}
		if around > 0 && int(around) < len(s) {
			q.Around = s[around]
		}
		if from > 0 && int(from) < len(s) {
			q.From = []int64{s[from]}
		}
		in := slices.Clone(s)
		if stride%2 == 1 {
			slices.Reverse(in) // as a backend's read may give them
		}
		keep, gaps := q.StepWindow([]Turn{{ID: "t"}}, map[string][]int64{"t": in})
		kept := map[int64]bool{}
		for _, seq := range keep {
			kept[seq] = true
		}
		if !slices.IsSorted(keep) || len(kept) != len(keep) || slices.ContainsFunc(keep, func(seq int64) bool { return !slices.Contains(s, seq) }) {
			t.Fatalf("kept %v: not the turn's steps once each, in order", keep)
		}
		must := func(i int, why string) {
			if i >= 0 && i < len(s) && !kept[s[i]] {
				t.Fatalf("step %d (%s) not kept", s[i], why)
			}
		}
		if len(s) > 0 && !after {
			must(0, "the turn's first")
		}
		first := len(s) - int(steps)
		if q.From != nil {
			first = int(from)
		}
		for i := max(0, first); i < len(s); i++ {
			must(i, "the last or from an anchor")
		}
		for i := int(around) - AroundSteps; q.Around > 0 && i <= int(around)+AroundSteps; i++ {
			must(i, "around the link")
		}
		limit := 1 + len(s) - max(0, first)
		if q.Around > 0 {
			limit += 2*AroundSteps + 1
		}
		if len(keep) > limit {
			t.Fatalf("kept %d steps; want at most %d", len(keep), limit)
		}
		left := 0
		lowest, _ := q.SeqBounds()
		prev := lowest
		for _, g := range gaps {
			i, j := slices.Index(s, g.Before), 0
			for j = i - 1; j >= 0 && !kept[s[j]]; j-- {
			}
			want := lowest
			if j >= 0 {
				want = s[j]
			}
			if g.TurnID != "t" || !kept[g.Before] || g.After != want || g.Steps != i-j-1 || g.Steps < 1 || g.After < prev {
				t.Fatalf("gap %+v of %v kept; want after %d, %d steps, in order", g, keep, want, i-j-1)
			}
			left, prev = left+g.Steps, g.Before
		}
		if left+len(keep) != len(s) {
			t.Fatalf("kept %d and left out %d of %d steps", len(keep), left, len(s))
		}
	})
}
