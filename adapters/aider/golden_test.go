package aider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// TestGolden parses each run of each history in testdata and compares its
// batches with testdata/golden/<history>_run<n>.json; -update rewrites
// them. adapterstest.GoldenUnits cannot be used as it is: a history holds
// many runs (many units of one file), and the session's workspace and
// edit paths are the history's folder on this machine, and its id hashes
// that path, so they are made relative first (relative).
func TestGolden(t *testing.T) {
	units, problems := Discover([]string{"testdata"})
	// The excerpt of lines 1-247 starts inside a run (SOURCES.md).
	if len(problems) != 1 || !strings.Contains(problems[0].String(), "chat-history_lines_1-247") {
		t.Fatalf("Discover(testdata) problems: %v; want the one of the excerpt's cut start", problems)
	}
	wd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, u := range units {
		if !adapterstest.Small(t, u.Paths) {
			continue
		}
		runs[u.Paths[0]]++
		name := fmt.Sprintf("%s_run%d", adapterstest.SampleName(t, u.Paths[0]), runs[u.Paths[0]])
		t.Run(name, func(t *testing.T) {
			s := adapterstest.ParseUnit(t, Agent, u)
			if s == nil || len(s.Batches) == 0 {
				t.Fatalf("Parse(%s) = no session; want one", u.ID)
			}
			if len(s.Problems) > 0 {
				t.Errorf("Parse(%s) problems: %v", u.ID, s.Problems)
			}
			var batches []*store.Batch
			if err := s.Each(func(b *store.Batch) error { batches = append(batches, b); return nil }); err != nil {
				t.Fatal(err)
			}
			relative(batches, wd, name)
			adapterstest.Golden(t, name, batches)
		})
	}
	if len(runs) != 3 {
		t.Errorf("golden files made for %d histories; want the 3 in testdata", len(runs))
	}
}

// relative makes what the batches say of this machine's folder wd
// relative to it: the workspace, the edits' paths, and the session id's
// hash of the history's path, which becomes a hash of the golden file's
// name (the id keeps its start time, and stays unique among the golden
// sessions, which storetest.SampleBatches stores together).
func relative(batches []*store.Batch, wd, name string) {
	rel := func(p string) string {
		if r, err := filepath.Rel(wd, p); err == nil && filepath.IsAbs(p) && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
		return p
	}
	sum := sha256.Sum256([]byte(name))
	id := func(s string) string {
		if i := strings.LastIndex(s, "-"); i > 0 {
			return s[:i] + "-" + hex.EncodeToString(sum[:6])
		}
		return s
	}
	for _, b := range batches {
		b.Session.ID = id(b.Session.ID)
		b.Session.Workspace.Root = rel(b.Session.Workspace.Root)
		for i := range b.Turns {
			b.Turns[i].SessionID = id(b.Turns[i].SessionID)
		}
		for i := range b.Steps {
			st := &b.Steps[i]
			st.SessionID = id(st.SessionID)
			if st.Type == store.TypeEdit {
				st.Payload.Path = rel(st.Payload.Path)
			}
		}
	}
}
