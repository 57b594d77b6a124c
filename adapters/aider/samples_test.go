package aider

import (
	"context"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// rawHistory is what a history says, read apart from the adapter with a
// plain scan of its lines.
type rawHistory struct {
	runs        int // "# aider chat started at" lines
	bannerTurns int // runs whose first line is Aider's output, before any prompt
	cutStart    bool
	prompts     int // stretches of consecutive #### lines
	applied     int // "> Applied edit to" lines
	commits     int // "> Commit <sha>" lines
	blocks      map[string]int
	tokens      int // "> Tokens:" lines
	sent, recvd int64
	cost        float64
}

var (
	rawTokens = regexp.MustCompile(`^> Tokens: ([\d,]+) sent, ([\d,]+) received\. Cost: \$([\d.]+) request, \$[\d.]+ session\.  $`)
	rawCommit = regexp.MustCompile(`^> Commit [0-9a-f]{7} `)
)

func scanHistory(t *testing.T, path string) rawHistory {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	r := rawHistory{blocks: map[string]int{}}
	inRun, lastPrompt, first := false, false, false
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "# aider chat started at ") {
			r.runs++
			inRun, lastPrompt, first = true, false, true
			continue
		}
		if !inRun {
			r.cutStart = r.cutStart || strings.TrimSpace(l) != ""
			continue
		}
		if first && strings.TrimSpace(l) != "" {
			first = false
			if strings.HasPrefix(l, ">") {
				r.bannerTurns++
			}
		}
		prompt := strings.HasPrefix(l, "####")
		if prompt && !lastPrompt {
			r.prompts++
		}
		lastPrompt = prompt
		switch m := rawTokens.FindStringSubmatch(l); {
		case m != nil:
			r.tokens++
			r.sent += num(m[1])
			r.recvd += num(m[2])
			c, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				t.Fatal(err)
			}
			r.cost += c
		case strings.HasPrefix(l, "> Applied edit to "):
			r.applied++
		case rawCommit.MatchString(l):
			r.commits++
		case l == "<<<<<<< SEARCH":
			if fate := blockFate(lines, i); fate != "" {
				r.blocks[fate]++
			}
		}
	}
	return r
}

// blockFate is what became of the SEARCH/REPLACE block starting at
// lines[i]: "" when it is not complete before Aider's or the user's next
// line, else ok when the output after the reply says "Applied edit to" its
// file, failed when it says the block failed to match in its file,
// unknown when the user spoke first (the reply was cut).
func blockFate(lines []string, i int) string {
	end, div := -1, -1
	for j := i + 1; j < len(lines) && end < 0; j++ {
		l := lines[j]
		switch {
		case strings.HasPrefix(l, "####") || isOutput(l) || strings.HasPrefix(l, "# aider chat"):
			return ""
		case l == "=======" && div < 0:
			div = j
		case l == ">>>>>>> REPLACE" && div > 0:
			end = j
		}
	}
	if end < 0 {
		return ""
	}
	file := lines[i-1]
	if strings.HasPrefix(file, "```") {
		file = lines[i-2]
	}
	for j := end + 1; j < len(lines); j++ {
		l := lines[j]
		if strings.HasPrefix(l, "####") || strings.HasPrefix(l, "# aider chat") {
			return "unknown"
		}
		if !isOutput(l) {
			continue // the reply's text (a ">>>>>>> REPLACE" too)
		}
		fate := "unknown"
		for ; j < len(lines) && isOutput(lines[j]); j++ {
			switch strings.TrimSpace(lines[j]) {
			case "> Applied edit to " + file:
				fate = "ok"
			case "> ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in " + file:
				fate = "failed"
			}
		}
		return fate
	}
	return "unknown"
}

// isOutput reports whether a line is Aider's output: "> " and the text.
func isOutput(l string) bool { return l == ">" || strings.HasPrefix(l, "> ") }

// TestSamplesImport imports each real history through the import runner
// into a store and compares the sessions, prompts, edits, commits and the
// usage stored with counts taken from the raw file.
func TestSamplesImport(t *testing.T) {
	ctx := context.Background()
	paths, _ := filepath.Glob("testdata/aider-ai/*.md")
	if len(paths) != 2 {
		t.Fatalf("samples = %v; want the 2 excerpts", paths)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw := scanHistory(t, path)
			if raw.runs == 0 || raw.prompts == 0 || raw.applied == 0 || raw.blocks["ok"] == 0 || raw.tokens == 0 {
				t.Fatalf("scan of %s found %+v; the sample or the scan is wrong", path, raw)
			}
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			im := &adapters.Importer{Store: st}
			sum, err := im.Run(ctx, Agent, []string{path})
			if err != nil || sum.New != raw.runs || sum.Sessions != raw.runs {
				t.Fatalf("Run = %s, %v; want %d new sessions", sum, err, raw.runs)
			}
			wantProblems := 0
			if raw.cutStart {
				wantProblems = 1 // the lines before the first run
			}
			if len(sum.Problems) != wantProblems {
				t.Errorf("problems = %v; want %d", sum.Problems, wantProblems)
			}
			list, err := st.List(ctx, store.ListQuery{})
			if err != nil || len(list.Sessions) != raw.runs {
				t.Fatalf("List = %d sessions, %v; want %d", len(list.Sessions), err, raw.runs)
			}
			var prompts, turns, commits int
			var usage store.Usage
			var cost float64
			edits := map[string]int{}
			applied := map[string]bool{} // reply (the step before its edits) and file
			for _, row := range list.Sessions {
				d, err := st.Detail(ctx, row.ID, store.DetailQuery{})
				if err != nil {
					t.Fatal(err)
				}
				if d.Metrics != nil {
					t.Errorf("session %s metrics = %+v; want none (Aider reports no session tokens)", row.ID, d.Metrics)
				}
				turns += len(d.Turns)
				before := ""
				for _, s := range d.Steps {
					switch {
					case s.Type == store.TypeMessage && s.Payload.Role == "user":
						prompts++
					case s.Type == store.TypeEdit:
						edits[s.Outcome]++
						if s.Outcome == adapters.OutcomeOK {
							applied[before+"\x00"+s.Payload.Path] = true
						}
					case s.Type == store.TypeOther && s.Payload.ToolName == "git commit":
						commits++
					}
					if s.Type != store.TypeEdit {
						before = s.ID
					}
				}
				if u := d.Usage; u != nil {
					usage.Tokens.Input += u.Tokens.Input
					usage.Tokens.Output += u.Tokens.Output
					usage.APIRequests += u.APIRequests
					if u.ReportedCostUSD != nil {
						cost += *u.ReportedCostUSD
					}
				}
			}
			if prompts != raw.prompts || turns != raw.prompts+raw.bannerTurns {
				t.Errorf("stored %d prompts, %d turns; the raw file has %d prompts and %d runs opening with Aider's banner", prompts, turns, raw.prompts, raw.bannerTurns)
			}
			if !maps.Equal(edits, raw.blocks) {
				t.Errorf("stored edits by outcome %v; the raw file's blocks %v", edits, raw.blocks)
			}
			if len(applied) != raw.applied {
				t.Errorf("stored ok edits of %d replies and files; the raw file has %d Applied edit lines", len(applied), raw.applied)
			}
			if commits != raw.commits {
				t.Errorf("stored %d commits; the raw file has %d", commits, raw.commits)
			}
			if usage.APIRequests != int64(raw.tokens) || usage.Tokens.Input != raw.sent || usage.Tokens.Output != raw.recvd || math.Abs(cost-raw.cost) > 1e-9 {
				t.Errorf("stored usage %d requests, %d/%d tokens, $%v; the raw file reports %d, %d/%d, $%v",
					usage.APIRequests, usage.Tokens.Input, usage.Tokens.Output, cost, raw.tokens, raw.sent, raw.recvd, raw.cost)
			}
			again, err := im.Run(ctx, Agent, []string{path})
			if err != nil || again.Unchanged != raw.runs || again.Steps != 0 {
				t.Errorf("second Run = %s, %v; want every session unchanged", again, err)
			}
		})
	}
}
