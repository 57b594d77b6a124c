package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

const samplesDir = "../../../shared/samples"

// rawUsage is a count made straight from an agent's files: tokens and API
// requests, each response once with its final counts.
type rawUsage struct {
	tokens   pricing.Tokens
	requests int64
}

func (u *rawUsage) add(in, out, read, write int64) {
	u.tokens.Add(pricing.Tokens{Input: in, Output: out, CacheRead: read, CacheCreation: write})
	u.requests++
}

// TestUsageSamplesToTheToken imports every agent's samples with the import
// command and checks that the stored usage, summed over the agent's
// sessions, equals a count made from the raw files here.
func TestUsageSamplesToTheToken(t *testing.T) {
	if _, err := os.Stat(samplesDir); err != nil {
		t.Skipf("no samples at %s: %v", samplesDir, err)
	}
	tests := []struct {
		agent, dir string
		count      func(t *testing.T, root string) rawUsage
	}{
		{"claude-code", "claude-code", rawClaudeCode},
		{"codex", "codex", rawCodex},
		{"cline", "cline/tasks", rawCline},
		{"gemini-cli", "gemini", rawGemini},
		{"copilot-cli", "copilot-cli", rawCopilot},
		{"opencode", "opencode", rawOpencode},
		{"qwen-code", "qwen-code", rawQwen},
		{"aider", "aider", rawAider},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			withHome(t)
			root := filepath.Join(samplesDir, tt.dir)
			db := filepath.Join(t.TempDir(), "s.db")
			// opencode reads export files, Qwen Code recordings outside a
			// chats folder, only when they are named.
			named, _ := filepath.Glob(filepath.Join(root, "*_export.json"))
			if tt.agent == "qwen-code" {
				named, _ = filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
			}
			runImportCmd(t, append(append([]string{tt.agent, root}, named...), "--db", db)...)
			want := tt.count(t, root)
			if want.requests == 0 {
				t.Fatalf("the raw %s samples report no usage; this test would prove nothing", tt.agent)
			}
			got := storedUsage(t, db, tt.agent)
			if got != want {
				t.Errorf("stored usage = %+v; the raw files report %+v", got, want)
			}
		})
	}
}

// storedUsage sums the usage of the agent's stored sessions (session detail).
func storedUsage(t *testing.T, db, agent string) rawUsage {
	t.Helper()
	return storedUsageOf(t, db, func(s store.SessionOverview) bool { return s.Agent.Kind == agent })
}

// storedUsageOf sums the usage of the stored sessions keep holds (session
// detail).
func storedUsageOf(t *testing.T, db string, keep func(store.SessionOverview) bool) rawUsage {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var u rawUsage
	for _, s := range l.Sessions {
		if !keep(s) {
			continue
		}
		d, err := st.Detail(ctx, s.ID, store.DetailQuery{NoSteps: true})
		if err != nil {
			t.Fatal(err)
		}
		if d.Usage != nil {
			u.tokens.Add(d.Usage.Tokens)
			u.requests += d.Usage.APIRequests
		}
	}
	return u
}

// walk calls fn with each file under root whose name ends with one of exts.
func walk(t *testing.T, root string, fn func(path string), exts ...string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, e := range exts {
			if strings.HasSuffix(p, e) {
				fn(p)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lines calls fn with each line of a JSONL file that decodes into v (reset
// before each line).
func lines[T any](t *testing.T, path string, fn func(v *T)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v T
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			fn(&v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// rawClaudeCode: assistant lines with message.usage (not <synthetic>); a
// response written over several lines repeats its message id, and its last
// line carries the final counts. Ids are counted once per session.
func rawClaudeCode(t *testing.T, root string) rawUsage {
	type usage struct{ Input, Output, Read, Write, Hour int64 }
	final := map[string]usage{}
	walk(t, root, func(path string) {
		type rec struct {
			Type, SessionID, RequestID, UUID string
			Message                          struct {
				ID, Model string
				Usage     *struct {
					Input int64 `json:"input_tokens"`
					Out   int64 `json:"output_tokens"`
					Read  int64 `json:"cache_read_input_tokens"`
					Write int64 `json:"cache_creation_input_tokens"`
					// Of Write, written for an hour.
					Cache struct {
						Hour int64 `json:"ephemeral_1h_input_tokens"`
					} `json:"cache_creation"`
				}
			}
		}
		lines(t, path, func(r *rec) {
			m := r.Message
			if r.Type != "assistant" || m.Usage == nil || m.Model == "<synthetic>" {
				return
			}
			id := m.ID
			if id == "" {
				id = r.RequestID
			}
			if id == "" {
				id = r.UUID
			}
			final[r.SessionID+"/"+id] = usage{m.Usage.Input, m.Usage.Out, m.Usage.Read, m.Usage.Write, m.Usage.Cache.Hour}
		})
	}, ".jsonl")
	var u rawUsage
	for _, f := range final {
		u.add(f.Input, f.Output, f.Read, f.Write)
		u.tokens.CacheCreation1h += f.Hour
	}
	if u.tokens.CacheCreation1h == 0 {
		t.Errorf("no response of %s writes the cache for an hour: the samples no longer test it", root)
	}
	return u
}

// rawCodex: token_count events; an event repeating the previous total is
// the same request. last_token_usage is the request's; input_tokens
// include the cached ones.
func rawCodex(t *testing.T, root string) rawUsage {
	var u rawUsage
	walk(t, root, func(path string) {
		type counts struct {
			Input  int64 `json:"input_tokens"`
			Cached int64 `json:"cached_input_tokens"`
			Output int64 `json:"output_tokens"`
		}
		type rec struct {
			Payload struct {
				Type string
				Info *struct {
					Total counts `json:"total_token_usage"`
					Last  counts `json:"last_token_usage"`
				}
			}
		}
		last := ""
		lines(t, path, func(r *rec) {
			if r.Payload.Type != "token_count" || r.Payload.Info == nil {
				return
			}
			if k := fmt.Sprint(r.Payload.Info.Total); k != last {
				last = k
				l := r.Payload.Info.Last
				u.add(l.Input-l.Cached, l.Output, l.Cached, 0)
			}
		})
	}, ".jsonl")
	return u
}

// rawCline: the assistant replies' metrics in api_conversation_history.json
// (the samples have no ui_messages.json).
func rawCline(t *testing.T, root string) rawUsage {
	var u rawUsage
	walk(t, root, func(path string) {
		if filepath.Base(path) != "api_conversation_history.json" {
			return
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), "ui_messages.json")); err == nil {
			t.Fatalf("%s: a task with ui_messages.json; count its api_req_started instead", path)
		}
		var msgs []struct {
			Role    string
			Metrics struct {
				Tokens *struct{ Prompt, Completion, Cached int64 }
			}
		}
		readJSON(t, path, &msgs)
		for _, m := range msgs {
			if m.Role == "assistant" && m.Metrics.Tokens != nil {
				k := m.Metrics.Tokens
				u.add(k.Prompt, k.Completion, k.Cached, 0)
			}
		}
	}, ".json")
	return u
}

// rawGemini: gemini replies' tokens, by message id (the JSONL log writes a
// message again when it changes; the last version counts); input counts
// the cached tokens too, thoughts are billed as output and a built-in
// tool's prompt as input, each counted apart from the others.
func rawGemini(t *testing.T, root string) rawUsage {
	type tokens struct{ Input, Output, Cached, Thoughts, Tool int64 }
	type msg struct {
		ID, Type string
		Tokens   *tokens
	}
	var u rawUsage
	walk(t, root, func(path string) {
		final := map[string]tokens{}
		note := func(m *msg) {
			if m.Type == "gemini" && m.Tokens != nil && m.ID != "" {
				final[m.ID] = *m.Tokens
			}
		}
		if strings.HasSuffix(path, ".jsonl") {
			lines(t, path, note)
		} else {
			var doc struct{ Messages []msg }
			readJSON(t, path, &doc)
			for i := range doc.Messages {
				note(&doc.Messages[i])
			}
		}
		for _, k := range final {
			u.add(k.Input-k.Cached+k.Tool, k.Output+k.Thoughts, k.Cached, 0)
		}
	}, ".jsonl", ".json")
	return u
}

// rawCopilot: the last session.shutdown's totals per model (Copilot CLI
// writes no usage per request); its input counts the cached tokens too.
func rawCopilot(t *testing.T, root string) rawUsage {
	var u rawUsage
	walk(t, root, func(path string) {
		type rec struct {
			Type string
			Data struct {
				ModelMetrics map[string]struct {
					Requests struct{ Count int64 }
					Usage    struct{ InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64 }
				}
			}
		}
		var last *rec
		lines(t, path, func(r *rec) {
			if r.Type == "session.shutdown" && len(r.Data.ModelMetrics) > 0 {
				last = r
			}
		})
		if last == nil {
			return
		}
		for _, m := range last.Data.ModelMetrics {
			k := m.Usage
			u.tokens.Add(pricing.Tokens{Input: k.InputTokens - k.CacheReadTokens - k.CacheWriteTokens, Output: k.OutputTokens, CacheRead: k.CacheReadTokens, CacheCreation: k.CacheWriteTokens})
			u.requests += max(m.Requests.Count, 1)
		}
	}, ".jsonl")
	return u
}

// rawOpencode: each assistant message's tokens (input without the cache),
// from the exports' messages and the storage's message files, once per
// message id (the storage sample holds a session an export holds too).
func rawOpencode(t *testing.T, root string) rawUsage {
	type info struct {
		ID, Role string
		Cost     *float64
		Tokens   *struct {
			Input, Output int64
			Cache         struct{ Read, Write int64 }
		}
	}
	var u rawUsage
	seen := map[string]bool{}
	count := func(in info) {
		if in.Role != "assistant" || in.Cost == nil && in.Tokens == nil || seen[in.ID] {
			return
		}
		seen[in.ID] = true
		if k := in.Tokens; k != nil {
			u.add(k.Input, k.Output, k.Cache.Read, k.Cache.Write)
		} else {
			u.requests++
		}
	}
	walk(t, root, func(path string) {
		switch {
		case strings.Contains(path, string(filepath.Separator)+"message"+string(filepath.Separator)):
			var in info
			readJSON(t, path, &in)
			count(in)
		case strings.HasSuffix(path, "_export.json"):
			var doc struct{ Messages []struct{ Info info } }
			readJSON(t, path, &doc)
			for _, m := range doc.Messages {
				count(m.Info)
			}
		}
	}, ".json")
	return u
}

// TestImportFillsUsageOfOldStore: a store made before usage was kept gets
// it from the next import, even for files unchanged since they were
// imported (the migration makes the import read them again, once).
func TestImportFillsUsageOfOldStore(t *testing.T) {
	withHome(t)
	root := filepath.Join(samplesDir, "codex")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no samples at %s: %v", root, err)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "codex", root, "--db", db)
	want := storedUsage(t, db, "codex")

	// Make it a store of before migration 007: no usage table, the
	// migration not applied, every file recorded as imported.
	conn, err := sqlite.OpenConn(db)
	if err != nil {
		t.Fatal(err)
	}
	// user_version 6: migrations 001-006 applied; 007 and those after it
	// run again (008 rebuilds the search index from scratch; 021 adds
	// steps.command_files, 024 steps.tool_name, 025 notes.folded).
	err = sqlitex.ExecScript(conn, "DROP TABLE usage_hours; DROP TABLE usage_records; "+
		"DROP INDEX steps_paths; ALTER TABLE steps DROP COLUMN command_files; "+
		"DROP INDEX steps_tools; ALTER TABLE steps DROP COLUMN tool_name; ALTER TABLE notes DROP COLUMN folded; PRAGMA user_version = 6;")
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}

	out := runImportCmd(t, "codex", root, "--db", db)
	if got := storedUsage(t, db, "codex"); got != want || want.requests == 0 {
		t.Errorf("usage after importing into the old store = %+v (import said %q); want %+v", got, out, want)
	}
	// Once: the next import skips the unchanged files again.
	if out := runImportCmd(t, "codex", root, "--db", db); !strings.Contains(out, "0 steps") {
		t.Errorf("the import after that printed %q; want the unchanged files skipped", out)
	}
}

// TestImportCorrectsUsageOfOldRules: a store whose Copilot CLI and Gemini
// CLI usage was taken by the rules before migration 022 (a wrong count here
// stands for it), and whose Claude Code usage has no hour's cache writes
// (before migration 023), has those agents' files read again by the next
// import, once, which sets the usage to what the raw files say; other
// agents' unchanged files are still skipped.
func TestImportCorrectsUsageOfOldRules(t *testing.T) {
	withHome(t)
	if _, err := os.Stat(samplesDir); err != nil {
		t.Skipf("no samples at %s: %v", samplesDir, err)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	agents := []struct {
		agent, dir string
		count      func(t *testing.T, root string) rawUsage
		again      bool // read again after the migration
	}{
		{"copilot-cli", "copilot-cli", rawCopilot, true},
		{"gemini-cli", "gemini", rawGemini, true},
		{"claude-code", "claude-code", rawClaudeCode, true},
		{"codex", "codex", rawCodex, false},
	}
	for _, a := range agents {
		runImportCmd(t, a.agent, filepath.Join(samplesDir, a.dir), "--db", db)
	}
	conn, err := sqlite.OpenConn(db)
	if err != nil {
		t.Fatal(err)
	}
	// user_version 21: migrations 022 to 025 run again (023 adds the hour's
	// cache writes, so they go first; its index is made again; 024 adds
	// steps.tool_name, 025 notes.folded).
	err = sqlitex.ExecScript(conn, "UPDATE usage_records SET input = input + 1000; DROP INDEX usage_hours_by_time; "+
		"ALTER TABLE usage_records DROP COLUMN cache_creation_1h; ALTER TABLE usage_hours DROP COLUMN cache_creation_1h; "+
		"CREATE INDEX usage_hours_by_time ON usage_hours (hour_ns); "+
		"DROP INDEX steps_tools; ALTER TABLE steps DROP COLUMN tool_name; ALTER TABLE notes DROP COLUMN folded; PRAGMA user_version = 21;")
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		root := filepath.Join(samplesDir, a.dir)
		out := runImportCmd(t, a.agent, root, "--db", db)
		if skipped := strings.Contains(out, "0 updated"); skipped == a.again {
			t.Errorf("import %s after the migration printed %q; want its files read again: %v", a.agent, out, a.again)
		}
		if !a.again {
			continue
		}
		if got, want := storedUsage(t, db, a.agent), a.count(t, root); got != want {
			t.Errorf("%s usage after the import = %+v; the raw files say %+v", a.agent, got, want)
		}
		if out := runImportCmd(t, a.agent, root, "--db", db); !strings.Contains(out, "0 steps") || !strings.Contains(out, "0 updated") {
			t.Errorf("the %s import after that printed %q; want the unchanged files skipped", a.agent, out)
		}
	}
}

// rawQwen: each assistant record's usageMetadata, once per record uuid;
// input is the prompt count less the cached tokens, which it includes;
// output the candidates, and the thoughts when the total counts them apart.
func rawQwen(t *testing.T, root string) rawUsage {
	type usage struct {
		PromptTokenCount, CandidatesTokenCount, CachedContentTokenCount, ThoughtsTokenCount, TotalTokenCount int64
	}
	type rec struct {
		UUID, Type    string
		UsageMetadata *usage
	}
	var u rawUsage
	seen := map[string]bool{}
	walk(t, root, func(path string) {
		lines(t, path, func(r *rec) {
			if r.Type == "assistant" && r.UsageMetadata != nil && !seen[r.UUID] {
				seen[r.UUID] = true
				m := r.UsageMetadata
				out := m.CandidatesTokenCount
				if m.TotalTokenCount == m.PromptTokenCount+out+m.ThoughtsTokenCount {
					out += m.ThoughtsTokenCount
				}
				u.add(m.PromptTokenCount-m.CachedContentTokenCount, out, m.CachedContentTokenCount, 0)
			}
		})
	}, ".jsonl")
	return u
}

// rawAider: each "Tokens: N sent, M received." line of Aider's output
// after the first run of a history starts (a cut-off start belongs to no
// session): N input, M output.
func rawAider(t *testing.T, root string) rawUsage {
	var u rawUsage
	walk(t, root, func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inRun := false
		for _, line := range strings.Split(string(b), "\n") {
			inRun = inRun || strings.HasPrefix(line, "# aider chat started at ")
			var sent, received string
			if _, err := fmt.Sscanf(line, "> Tokens: %s sent, %s received.", &sent, &received); err != nil || !inRun {
				continue
			}
			num := func(s string) int64 {
				var n int64
				fmt.Sscan(strings.ReplaceAll(s, ",", ""), &n)
				return n
			}
			u.add(num(sent), num(received), 0, 0)
		}
	}, ".aider.chat.history.md")
	return u
}

// TestUsageCountsSessionTotals imports the real Crush sample, whose
// sessions record a cost alone (no usage per response), and checks that
// `service usage session --json` counts each one's cost as Crush's
// sessions table holds it, under the model store.SessionTotalsModel, and
// that the total adds them up.
func TestUsageCountsSessionTotals(t *testing.T) {
	sample := filepath.Join(samplesDir, "crush", "dbos-transact-golang", ".crush")
	if _, err := os.Stat(sample); err != nil {
		t.Skipf("no Crush sample at %s: %v", sample, err)
	}
	withHome(t)
	dir := filepath.Join(t.TempDir(), ".crush")
	copyTree(t, sample, dir, "crush.db", "crush.db-wal")
	// The raw count: each top-level session's cost (a subagent's is in its
	// parent's), read from the copy before the import reads it.
	conn, err := sqlite.OpenConn(filepath.Join(dir, "crush.db"), sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	var sum float64
	err = sqlitex.Execute(conn, `SELECT id, cost FROM sessions WHERE coalesce(parent_session_id, '') = '' AND id NOT LIKE 'title-%'`,
		&sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			want[st.ColumnText(0)] = st.ColumnFloat(1)
			sum += st.ColumnFloat(1)
			return nil
		}})
	conn.Close()
	if err != nil || len(want) == 0 {
		t.Fatalf("read the sample's sessions: %d, %v", len(want), err)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "crush", dir, "--db", db)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"usage", "session", "--agent", "crush", "--json", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage = %v; stderr %s", err, errOut.String())
	}
	var rep struct {
		Rows  []store.UsageRow
		Total store.UsageRow
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("usage --json printed %s: %v", out.String(), err)
	}
	near := func(p *float64, v float64) bool { return p != nil && math.Abs(*p-v) < 1e-9 }
	if len(rep.Rows) != len(want) {
		t.Fatalf("usage rows = %+v; want one for each of %v", rep.Rows, want)
	}
	for _, r := range rep.Rows {
		if cost, ok := want[r.Key]; !ok || !near(r.ReportedCostUSD, cost) || !slices.Equal(r.Models, []string{store.SessionTotalsModel}) {
			t.Errorf("usage row %s = %+v (cost %v); want cost %v of the model %q", r.Key, r, costText(r.ReportedCostUSD), cost, store.SessionTotalsModel)
		}
	}
	if !near(rep.Total.ReportedCostUSD, sum) || rep.Total.EstimatedCostUSD != nil {
		t.Errorf("usage total cost = %v reported, %v estimated; want %v reported", costText(rep.Total.ReportedCostUSD), costText(rep.Total.EstimatedCostUSD), sum)
	}
}

// costText is a cost for a message: its value, or none.
func costText(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
