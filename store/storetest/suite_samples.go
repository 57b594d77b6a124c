package storetest

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/store"
)

// samplesDir is ../shared/samples beside the repository: real transcripts
// of public repositories. It skips the test when they are not there.
func samplesDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no samples at %s: %v", dir, err)
	}
	return dir
}

// searchable is a word of a command that search finds whole.
var searchable = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]{5,}`)

// Real sessions, as the adapters read them from sample transcripts and
// push them batch by batch, read back with the summary and report of
// their steps, and a word of each command finds its step.
func testSamples(t *testing.T, s store.Backend) {
	dir := samplesDir(t)
	for _, tc := range []struct {
		agent adapters.Agent
		path  string
	}{
		{claudecode.Agent, "claude-code/agentlogs_crud.jsonl"},
		{claudecode.Agent, "claude-code/spotter/tool_heavy.jsonl"},
		{codex.Agent, "codex/agentlogs_crud_rollout.jsonl"},
	} {
		for id, sess := range adapterstest.ParseRoots(t, tc.agent, filepath.Join(dir, tc.path)) {
			t.Run(tc.path, func(t *testing.T) {
				var batches []*store.Batch
				err := sess.Each(func(b *store.Batch) error {
					mustApply(t, s, b)
					batches = append(batches, b)
					return nil
				})
				if err != nil {
					t.Fatalf("session %s: %v", id, err)
				}
				steps, turns := mergeSteps(batches...), mergeTurns(batches...)
				segments := map[int64]bool{}
				for _, b := range batches {
					for _, g := range b.Segments {
						segments[g.Index] = true
					}
				}
				d := mustDetail(t, s, id)
				if want := wantSummary(steps, len(turns), len(segments)); !reflect.DeepEqual(d.Summary, want) {
					t.Errorf("Detail(%s).Summary = %+v; want %+v", id, d.Summary, want)
				}
				if want := wantReport(steps, d.Turns); !reflect.DeepEqual(d.Report, want) {
					t.Errorf("Detail(%s).Report =\n%+v\nwant\n%+v", id, d.Report, want)
				}
				if len(d.Steps) != len(steps) {
					t.Fatalf("Detail(%s) = %d steps; want %d", id, len(d.Steps), len(steps))
				}
				for i := range steps {
					if len(store.FindImages(steps[i].Payload.Raw)) == 0 && !sameJSON(t, d.Steps[i], steps[i]) {
						t.Errorf("Detail(%s).Steps[%d] =\n%s\nwant\n%s", id, i, mustJSON(t, d.Steps[i]), mustJSON(t, steps[i]))
					}
				}
				// A search gives the session the title the list does.
				r := mustSearch(t, s, store.SearchQuery{Q: "agent:" + tc.agent.Kind, Session: id, Limit: 1})
				if len(r.Hits) != 1 || r.Hits[0].Title != d.Summary.Title {
					t.Errorf("Search(agent:%s in %s) = %+v; want a hit titled %q, as the summary", tc.agent.Kind, id, r.Hits, d.Summary.Title)
				}
				found := 0
				for _, st := range steps {
					if st.Type != store.TypeCommand || st.Payload.Command == nil {
						continue
					}
					word := searchable.FindString(*st.Payload.Command)
					if word == "" {
						continue
					}
					q := word + " type:command agent:" + tc.agent.Kind
					r := mustSearch(t, s, store.SearchQuery{Q: q, Limit: store.MaxSearchLimit})
					if !slices.Contains(hitKeys(r), (hitKey{id, st.Seq})) {
						t.Errorf("Search(%q) = %v; want step %d of %s among them", q, hitKeys(r), st.Seq, id)
					}
					found++
				}
				if found == 0 {
					t.Errorf("session %s has no command with a word to search", id)
				}
			})
		}
	}
}
