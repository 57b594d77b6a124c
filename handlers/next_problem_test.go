package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestNextProblemRoute: /session/problem names the session's next (after=)
// or previous (before=) failed or flagged step, shown on the page or not,
// going round at either end; nothing for a session without one; 404 for
// one not stored and 400 without a seq.
func TestNextProblemRoute(t *testing.T) {
	s := newTestService(t)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := withProblems(longTurn("np", 400, at), []int{2, 60, 380}, []int{150, 390})
	s.mustPush(x, http.StatusCreated)
	problems := problemSeqs(x) // from the batch, in seq order
	steps := x["steps"].(arr)
	ask := func(query string) (int, *int) {
		t.Helper()
		res := s.get("/session/problem?" + query)
		var a struct{ Seq *int }
		if res.Code == http.StatusOK {
			if err := json.Unmarshal(res.Body.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v in %q", query, err, res.Body)
			}
		}
		return res.Code, a.Seq
	}
	last := steps[len(steps)-1].(obj)["seq"].(int)
	for seq := -1; seq <= last+1; seq++ {
		i, _ := slices.BinarySearch(problems, seq+1)
		want := problems[i%len(problems)] // round to the first after the last
		if code, got := ask(fmt.Sprintf("id=np&after=%d", seq)); code != http.StatusOK || got == nil || *got != want {
			t.Fatalf("after=%d: %d %v; want step %d", seq, code, got, want)
		}
		j, _ := slices.BinarySearch(problems, seq)
		want = problems[(j+len(problems)-1)%len(problems)] // round to the last before the first
		if code, got := ask(fmt.Sprintf("id=np&before=%d", seq)); code != http.StatusOK || got == nil || *got != want {
			t.Fatalf("before=%d: %d %v; want step %d", seq, code, got, want)
		}
	}

	s.mustPush(longTurn("calm", 3, at), http.StatusCreated)
	if code, got := ask("id=calm&after=1"); code != http.StatusOK || got != nil {
		t.Errorf("a session without a problem: %d %v; want 200 and no step", code, got)
	}
	for query, want := range map[string]int{
		"id=nope&after=1":          http.StatusNotFound,
		"id=np":                    http.StatusBadRequest,
		"id=np&after=x":            http.StatusBadRequest,
		"id=np&after=1&before=300": http.StatusBadRequest,
	} {
		if code, _ := ask(query); code != want {
			t.Errorf("%s: %d; want %d", query, code, want)
		}
	}
}
