package store_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/agentreview/service/store"
)

// TestApplyGroupIsolatesSessions writes five sessions in one group: two
// good ones, one whose second batch takes a seq its first batch holds, one
// that fails validation and one deleted before. The good ones are written
// with their files; the others leave nothing behind, not even the first
// batch of the one that failed half way, and get Apply's errors.
func TestApplyGroupIsolatesSessions(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustApply(t, s, newBatch("gone"))
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete(gone) = %v", err)
	}
	taken := step("b", 2, "read")
	taken["id"] = "b-new"
	invalid := mustParse(t, newBatch("d"))
	invalid.Steps[0].Type = "nonsense"
	file := func(name string) []store.ImportedFile {
		return []store.ImportedFile{{Path: "/x/" + name + ".jsonl", Size: 1, ModTime: 2}}
	}
	group := []store.SessionWrite{
		{Batches: []*store.Batch{mustParse(t, newBatch("a"))}, Files: file("a")},
		{Batches: []*store.Batch{mustParse(t, newBatch("b")), mustParse(t, stepsBatch("b", taken))}, Files: file("b")},
		{Batches: []*store.Batch{mustParse(t, newBatch("c")), mustParse(t, stepsBatch("c", step("c", 6, "read")))}, Files: file("c")},
		{Batches: []*store.Batch{invalid}, Files: file("d")},
		{Batches: []*store.Batch{mustParse(t, newBatch("gone"))}, Files: file("gone")},
	}
	res, err := s.ApplyGroup(ctx, "claude-code", group)
	if err != nil {
		t.Fatalf("ApplyGroup = %v; want no error of the group", err)
	}
	var (
		conflict *store.ConflictError
		inv      *store.InvalidError
		deleted  *store.DeletedError
	)
	if res[0].Err != nil || len(res[0].Results) != 1 || !res[0].Results[0].Created || res[0].Results[0].StepsWritten != 5 {
		t.Errorf("ApplyGroup result of a = %+v; want one batch, created, 5 steps", res[0])
	}
	if !errors.As(res[1].Err, &conflict) || res[1].Results != nil {
		t.Errorf("ApplyGroup result of b = %+v; want *ConflictError and no results", res[1])
	}
	if res[2].Err != nil || len(res[2].Results) != 2 || res[2].Results[1].StepsWritten != 1 {
		t.Errorf("ApplyGroup result of c = %+v; want two batches, the second writing 1 step", res[2])
	}
	if !errors.As(res[3].Err, &inv) {
		t.Errorf("ApplyGroup result of d = %+v; want *InvalidError", res[3])
	}
	if !errors.As(res[4].Err, &deleted) {
		t.Errorf("ApplyGroup result of gone = %+v; want *DeletedError", res[4])
	}
	for sid, want := range map[string]int{"a": 5, "b": 0, "c": 6, "d": 0, "gone": 0} {
		seqs, err := s.StepSeqs(ctx, sid)
		if err != nil || len(seqs) != want {
			t.Errorf("StepSeqs(%s) = %d steps, %v; want %d", sid, len(seqs), err, want)
		}
	}
	if _, err := s.Detail(ctx, "b", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Detail(b) = %v; want ErrNotFound (its first batch rolled back)", err)
	}
	files, err := s.ImportedFiles(ctx, "claude-code")
	if got := slices.Sorted(maps.Keys(files)); err != nil || !slices.Equal(got, []string{"/x/a.jsonl", "/x/c.jsonl"}) {
		t.Errorf("ImportedFiles = %v, %v; want the files of a and c alone", got, err)
	}
}
