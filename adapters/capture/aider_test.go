package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
)

// aiderSample is a real chat history (Aider's own), its start cut off,
// then three runs.
const aiderSample = "../aider/testdata/aider-ai/chat-history_lines_1-247.aider.chat.history.md"

// aiderRuns is the sessions of the history at path, in file order, each
// with the step count its run parses to.
func aiderRuns(t *testing.T, path string) (ids []string, steps []int) {
	t.Helper()
	units, problems := aider.Discover([]string{path})
	if len(problems) > 0 {
		t.Fatalf("Discover(%s): %v", path, problems)
	}
	for _, u := range units {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
		steps = append(steps, aider.Parse(u, []adapters.File{{Path: path, Body: f}}).Steps)
		f.Close()
	}
	return ids, steps
}

// TestAiderHistoryFollowedLive: capture follows the repository of a chat
// history imported before (AiderRepositories): a new run Aider appends is
// stored as a new session and grows as the run goes on, each step count
// the run's own; a history in a folder under the repository, which was
// never imported, is not followed (only a root's top is watched).
func TestAiderHistoryFollowedLive(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(aiderSample)
	if err != nil {
		t.Fatal(err)
	}
	// From its first run on: the sample's start was cut off mid-run.
	text := string(b[strings.Index(string(b), "# aider chat started at "):])
	third := 0
	for range 2 {
		third += 1 + strings.Index(text[third+1:], "# aider chat started at ")
	}
	run3 := strings.SplitAfter(text[third:], "\n")
	half := third + len(strings.Join(run3[:len(run3)/2], ""))

	repo := t.TempDir()
	history := filepath.Join(repo, aider.HistoryFile)
	save(t, history, []byte(text[:third]))
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	sum, err := (&adapters.Importer{Store: h.st}).Run(ctx, aider.Agent, []string{repo})
	if err != nil || sum.New != 2 {
		t.Fatalf("import of the first two runs: %+v, %v; want 2 new sessions", sum, err)
	}
	h.c = &Capture{Store: h.st, Follow: map[string]func() []string{aider.Kind: AiderRepositories(ctx, h.st)}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)
	if got := AiderRepositories(ctx, h.st)(); len(got) != 1 || got[0] != repo {
		t.Fatalf("AiderRepositories = %v; want [%s]", got, repo)
	}

	// A history one folder down, never imported: not followed.
	nested := filepath.Join(repo, "sub", aider.HistoryFile)
	if err := os.MkdirAll(filepath.Dir(nested), 0o700); err != nil {
		t.Fatal(err)
	}
	save(t, nested, []byte(text[third:]))
	nestedIDs, _ := aiderRuns(t, nested)

	for _, upTo := range []int{half, len(text)} {
		f, err := os.OpenFile(history, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		written, _ := os.ReadFile(history)
		if _, err := f.WriteString(text[len(written):upTo]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		ids, steps := aiderRuns(t, history)
		if len(ids) != 3 || steps[2] == 0 {
			t.Fatalf("the history holds %d runs, the last of %v steps; want 3 runs and steps in the last", len(ids), steps)
		}
		waitFor(t, 10*time.Second, func() (bool, string) {
			n := stepCount(t, h, ids[2])
			return n == steps[2], fmt.Sprintf("the new run's session has %d steps stored; want its %d (%d bytes of the history written)", n, steps[2], upTo)
		})
	}
	for _, id := range nestedIDs {
		if n := stepCount(t, h, id); n != -1 {
			t.Errorf("the history one folder down, never imported, was captured (%s, %d steps)", id, n)
		}
	}
}

// TestAiderFollowedInAnotherAgentsWorkspace: a repository where another
// agent ran (a real Claude Code transcript, its cwd moved to the
// repository) is followed for Aider's history without any import of
// Aider: a history already there is read when capture starts, a run
// appended later is stored as it is written.
func TestAiderFollowedInAnotherAgentsWorkspace(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	transcript, err := os.ReadFile("../../../shared/samples/claude-code/agentlogs_crud.jsonl")
	if err != nil {
		t.Skipf("no Claude Code sample: %v", err)
	}
	cwd, _ := json.Marshal(repo)
	transcript = bytes.ReplaceAll(transcript, []byte(`"/Users/philipp/dev/vibeinsights/fixtures/claudecode"`), cwd)
	projects := filepath.Join(t.TempDir(), "projects", "-repo")
	if err := os.MkdirAll(projects, 0o700); err != nil {
		t.Fatal(err)
	}
	save(t, filepath.Join(projects, "crud.jsonl"), transcript)
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	follow := AiderRepositories(ctx, h.st)
	if got := follow(); len(got) != 0 {
		t.Fatalf("AiderRepositories of an empty store = %v; want none", got)
	}
	if sum, err := (&adapters.Importer{Store: h.st}).Run(ctx, claudecode.Agent, []string{filepath.Dir(projects)}); err != nil || sum.New != 1 {
		t.Fatalf("import of the Claude Code transcript: %+v, %v; want 1 new session", sum, err)
	}
	// Looked up again since the store changed.
	if got := follow(); !slices.Equal(got, []string{repo}) {
		t.Fatalf("AiderRepositories = %v; want the transcript's workspace [%s]", got, repo)
	}

	b, err := os.ReadFile(aiderSample)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b[strings.Index(string(b), "# aider chat started at "):])
	second := 1 + strings.Index(text[1:], "# aider chat started at ")
	history := filepath.Join(repo, aider.HistoryFile)
	save(t, history, []byte(text[:second]))
	h.c = &Capture{Store: h.st, Follow: map[string]func() []string{aider.Kind: AiderRepositories(ctx, h.st)}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)
	for _, upTo := range []int{second, len(text)} {
		if upTo > second {
			f, err := os.OpenFile(history, os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(text[second:upTo]); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		ids, steps := aiderRuns(t, history)
		waitFor(t, 10*time.Second, func() (bool, string) {
			for i, id := range ids {
				if n := stepCount(t, h, id); n != steps[i] {
					return false, fmt.Sprintf("run %d of the history (%s) has %d steps stored; want its %d (%d bytes written)", i, id, n, steps[i], upTo)
				}
			}
			return true, ""
		})
	}
}
