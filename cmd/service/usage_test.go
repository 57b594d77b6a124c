package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// TestUsageCommand: `service usage` prints the stored usage, its JSON the
// same numbers as the session details, estimated cost marked ≈.
func TestUsageCommand(t *testing.T) {
	withHome(t)
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "claude-code", filepath.Join(samplesDir, "claude-code"), "--db", db)
	want := storedUsage(t, db, "claude-code")

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"usage", "daily", "--json", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage --json = %v; %s", err, errOut.String())
	}
	var rep struct {
		Rows  []json.RawMessage
		Total struct {
			Tokens struct {
				Input, Output int64
				CacheRead     int64 `json:"cache_read"`
				CacheCreation int64 `json:"cache_creation"`
			}
			APIRequests      int64    `json:"api_requests"`
			EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			ReportedCostUSD  *float64 `json:"reported_cost_usd"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("usage --json printed %s: %v", out.String(), err)
	}
	tot := rep.Total
	if tot.Tokens.Input != want.tokens.Input || tot.Tokens.Output != want.tokens.Output || tot.Tokens.CacheRead != want.tokens.CacheRead ||
		tot.Tokens.CacheCreation != want.tokens.CacheCreation || tot.APIRequests != want.requests || len(rep.Rows) == 0 {
		t.Errorf("usage --json total = %+v over %d days; the sessions hold %+v", tot, len(rep.Rows), want)
	}
	if tot.EstimatedCostUSD == nil || tot.ReportedCostUSD != nil {
		t.Errorf("costs = estimated %v, reported %v; Claude Code files report no cost, so estimated only", tot.EstimatedCostUSD, tot.ReportedCostUSD)
	}

	out.Reset()
	if err := run(context.Background(), []string{"usage", "--db", db, "--since", "20260211", "--until", "2026-02-11"}, &out, &errOut); err != nil {
		t.Fatalf("usage = %v", err)
	}
	text := out.String()
	if !strings.Contains(text, "Cache Create") || !strings.Contains(text, "2026-02-11") || strings.Contains(text, "2025-10-10") || !strings.Contains(text, "≈ $") {
		t.Errorf("usage printed\n%s\nwant the one day in the period, costs marked ≈", text)
	}
	// Blocks of 5 hours: the same records, each block keyed by the UTC hour
	// it starts at, 5 hours or more after the one before; the table shows
	// each one's hours.
	out.Reset()
	if err := run(context.Background(), []string{"usage", "blocks", "--json", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage blocks --json = %v; %s", err, errOut.String())
	}
	type total struct {
		Tokens           pricing.Tokens
		APIRequests      int64    `json:"api_requests"`
		EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	}
	var blocks struct {
		Rows []struct {
			Key string `json:"key"`
		}
		Total total
	}
	if err := json.Unmarshal(out.Bytes(), &blocks); err != nil || len(blocks.Rows) == 0 {
		t.Fatalf("usage blocks --json printed %s: %v", out.String(), err)
	}
	var daily struct{ Total total }
	out.Reset()
	if err := run(context.Background(), []string{"usage", "--json", "--db", db}, &out, &errOut); err != nil || json.Unmarshal(out.Bytes(), &daily) != nil {
		t.Fatalf("usage --json = %v", err)
	}
	// Each row's estimate is rounded to a millionth of a dollar.
	if b, d := blocks.Total, daily.Total; b.Tokens != d.Tokens || b.APIRequests != d.APIRequests ||
		b.EstimatedCostUSD == nil || d.EstimatedCostUSD == nil || math.Abs(*b.EstimatedCostUSD-*d.EstimatedCostUSD) > 1e-5 {
		t.Errorf("blocks' total %+v; want the days' %+v", b, d)
	}
	out.Reset()
	if err := run(context.Background(), []string{"usage", "blocks", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage blocks = %v", err)
	}
	var end time.Time
	for _, r := range blocks.Rows {
		start, err := time.Parse(time.RFC3339, r.Key)
		if err != nil || start.Location() != time.UTC || !start.Equal(start.Truncate(time.Hour)) || start.Before(end) {
			t.Errorf("block %q: want a UTC hour at or after the last block's end %v", r.Key, end)
		}
		end = start.Add(store.UsageBlock)
		if label := start.Local().Format("2006-01-02 15:04") + "–" + end.Local().Format("15:04"); !strings.Contains(out.String(), label) {
			t.Errorf("usage blocks printed\n%s\nwant the block %s", out.String(), label)
		}
	}

	// --breakdown model: each day's lines are its models', and the
	// total's models add up as the sessions' own usage by model does.
	byModel := map[string]pricing.Tokens{}
	{
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.List(context.Background(), store.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Sessions {
			d, err := st.Detail(context.Background(), s.ID, store.DetailQuery{NoSteps: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.Usage == nil {
				continue
			}
			for _, m := range d.Usage.Models {
				tok := byModel[m.Model]
				tok.Add(m.Tokens)
				byModel[m.Model] = tok
			}
		}
		st.Close()
	}
	out.Reset()
	if err := run(context.Background(), []string{"usage", "--json", "--breakdown", "model", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage --json --breakdown model = %v", err)
	}
	var split struct {
		Breakdown string
		Rows      []store.UsageRow
		Total     store.UsageRow
	}
	if err := json.Unmarshal(out.Bytes(), &split); err != nil {
		t.Fatal(err)
	}
	got := map[string]pricing.Tokens{}
	for _, part := range split.Total.Breakdown {
		got[part.Key] = part.Tokens
	}
	if split.Breakdown != "model" || len(byModel) < 2 || !maps.Equal(got, byModel) {
		t.Errorf("usage --breakdown model: total by model %v; the sessions' usage by model is %v", got, byModel)
	}
	out.Reset()
	if err := run(context.Background(), []string{"usage", "--breakdown", "model", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage --breakdown model = %v", err)
	}
	for _, r := range split.Rows {
		for _, part := range r.Breakdown {
			if !strings.Contains(out.String(), "└ "+part.Key) || !strings.Contains(out.String(), thousands(part.Tokens.Total())) {
				t.Errorf("usage --breakdown model printed\n%s\nwant a line for %s on %s (%d tokens)", out.String(), part.Key, r.Key, part.Tokens.Total())
			}
		}
	}

	if err := run(context.Background(), []string{"usage", "--db", db, "--breakdown", "project"}, &out, &errOut); err == nil || err.Error() != `--breakdown "project": want one of model, agent` {
		t.Errorf("usage --breakdown project = %v; want it refused, naming the choices", err)
	}
	if err := run(context.Background(), []string{"usage", "--db", db, "--since", "yesterday"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "YYYY-MM-DD") {
		t.Errorf("usage --since yesterday = %v; want an error naming the format", err)
	}
}

// TestUsageTable: the table reads like ccusage's: the period and its
// models from the left, one model a line, the numbers and the cost from
// the right, each under its heading's end; the total names no model.
func TestUsageTable(t *testing.T) {
	cost := 1.5
	rows := []store.UsageRow{
		{Key: "2026-02-11", Models: []string{"claude-opus-4-6", "claude-sonnet-4-5-20250929"}, Tokens: pricing.Tokens{Input: 1234567, Output: 89}},
		{Key: "2026-02-12", Models: []string{store.SessionTotalsModel}, Tokens: pricing.Tokens{Input: 5}, ReportedCostUSD: &cost},
	}
	total := store.UsageTotal(rows)
	var out bytes.Buffer
	if err := printUsage(&out, "daily", "", rows, total, pricing.Default()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	head := lines[0]
	at := func(col string) int { return strings.Index(head, col) }
	want := []struct {
		line              int
		key, model, input string
		cost              string
	}{
		{1, "2026-02-11", "claude-opus-4-6", "1,234,567", "-"},
		{2, "", "claude-sonnet-4-5-20250929", "", ""},
		{3, "2026-02-12", store.SessionTotalsModel, "5", "$1.50"},
		{4, "Total", "", "1,234,572", "$1.50"},
	}
	for _, w := range want {
		l := lines[w.line]
		if got := strings.TrimSpace(l[:at("Models")]); got != w.key {
			t.Errorf("line %d key = %q; want %q:\n%s", w.line, got, w.key, out.String())
		}
		modelCell := strings.TrimSpace(l[at("Models"):min(len(l), at("Models")+len("claude-sonnet-4-5-20250929"))])
		if modelCell != w.model {
			t.Errorf("line %d model = %q; want %q:\n%s", w.line, modelCell, w.model, out.String())
		}
		end := at("Input") + len("Input")
		if got := strings.TrimSpace(l[min(len(l), end-len(w.input)):min(len(l), end)]); got != w.input || (w.input != "" && len(l) > end && l[end] != ' ') {
			t.Errorf("line %d input ends %q at the heading's end; want %q:\n%s", w.line, got, w.input, out.String())
		}
		if w.cost != "" && !strings.HasSuffix(l, w.cost) {
			t.Errorf("line %d = %q; want it to end with the cost %q", w.line, l, w.cost)
		}
	}
}

// TestUsageCommandProject: --project keeps the sessions of one workspace,
// named by its root folder, or relative to the folder the command runs in.
func TestUsageCommandProject(t *testing.T) {
	withHome(t)
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "claude-code", filepath.Join(samplesDir, "claude-code"), "--db", db)
	// One session more, in a folder here.
	here := t.TempDir()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	b := storetest.Batch("usage-here", 0, 3)
	b.Session.Workspace.Root = here
	b.Usage = []store.UsageRecord{{ID: "r1", At: b.Session.StartedAt, Model: "claude-sonnet-4-5", ActorID: "agent-root", Source: store.UsageFromFile,
		Tokens: pricing.Tokens{Input: 12, Output: 34, CacheRead: 560}}}
	if _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	l, err := st.List(ctx, store.ListQuery{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string]int{}
	for _, s := range l.Sessions {
		roots[s.Workspace.Root]++
	}
	if len(roots) < 3 || slices.Max(slices.Collect(maps.Values(roots))) < 2 {
		t.Fatalf("workspaces %v; want several, one of two sessions or more", roots)
	}
	total := func(args ...string) rawUsage {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, append([]string{"usage", "--json", "--db", db}, args...), &out, &errOut); err != nil {
			t.Fatalf("usage %v = %v; %s", args, err, errOut.String())
		}
		var rep struct{ Total store.UsageRow }
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("usage %v printed %s: %v", args, out.String(), err)
		}
		return rawUsage{tokens: rep.Total.Tokens, requests: rep.Total.APIRequests}
	}
	for root := range roots {
		want := storedUsageOf(t, db, func(s store.SessionOverview) bool { return s.Workspace.Root == root })
		if got := total("--project", root); got != want {
			t.Errorf("usage --project %s = %+v; its sessions hold %+v", root, got, want)
		}
	}
	want := storedUsageOf(t, db, func(s store.SessionOverview) bool { return s.Workspace.Root == here })
	t.Chdir(here)
	if got := total("--project", "."); got != want || want.requests != 1 {
		t.Errorf("usage --project . in %s = %+v; want its one session's %+v", here, got, want)
	}
}

// TestUsageCommandSort: the session report with --sort cost lists the
// sessions by their cost, most first (each priced request by request, as
// its page shows it), where by tokens they come in another order; a sort
// of another report, or by anything else, is refused.
func TestUsageCommandSort(t *testing.T) {
	withHome(t)
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "claude-code", filepath.Join(samplesDir, "claude-code"), "--db", db)
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]float64{}
	var byCost []string
	for _, s := range l.Sessions {
		d, err := st.Detail(ctx, s.ID, store.DetailQuery{NoSteps: true})
		if err != nil {
			t.Fatal(err)
		}
		if d.Usage != nil && d.Usage.EstimatedCostUSD != nil {
			cost[s.ID] = *d.Usage.EstimatedCostUSD
			byCost = append(byCost, s.ID)
		}
	}
	st.Close()
	slices.SortFunc(byCost, func(a, b string) int { return cmp.Compare(cost[b], cost[a]) })
	report := func(args ...string) (keys []string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, append([]string{"usage", "session", "--json", "--db", db}, args...), &out, &errOut); err != nil {
			t.Fatalf("usage session %v = %v; %s", args, err, errOut.String())
		}
		var rep struct{ Rows []store.UsageRow }
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("usage session %v printed %s: %v", args, out.String(), err)
		}
		for _, r := range rep.Rows {
			keys = append(keys, r.Key)
		}
		return keys
	}
	if len(byCost) < 3 || slices.Equal(report(), byCost) {
		t.Fatalf("the sample's %d priced sessions rank the same by tokens and by cost; want them apart", len(byCost))
	}
	if got := report("--sort", "cost"); !slices.Equal(got, byCost) {
		t.Errorf("usage session --sort cost = %q; want %q", got, byCost)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"session", "--sort", "price"}, `--sort "price": want one of tokens, cost`},
		{[]string{"daily", "--sort", "cost"}, "--sort orders the session report: the daily report is in the order of time"},
	} {
		var out, errOut bytes.Buffer
		if err := run(ctx, append([]string{"usage", "--db", db}, c.args...), &out, &errOut); err == nil || err.Error() != c.want {
			t.Errorf("usage %v = %v; want %q", c.args, err, c.want)
		}
	}
}

// TestUsageCommandTerminalSafe: the names an agent writes (a model's, a
// session's id) and the problems an import meets in its files reach the
// terminal without their control characters, so no escape sequence in a
// file can retitle or clear the terminal of whoever imports it.
func TestUsageCommandTerminalSafe(t *testing.T) {
	withHome(t)
	const evil = "evil\x1b]0;pwned\x07\x1b[2J"
	raw, err := os.ReadFile(filepath.Join(samplesDir, "claude-code", "agentlogs_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The real sample with every reply's model renamed, and a broken line
	// of control characters at its end.
	var lines [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if m, ok := rec["message"].(map[string]any); ok && m["model"] != nil {
			m["model"] = evil
		}
		b, _ := json.Marshal(rec)
		lines = append(lines, b)
	}
	lines = append(lines, []byte("{\"type\":\x1b[2J"+evil))
	// In a folder named so too (Claude Code names a project's folder after
	// the folder the agent ran in), which the import's problem names.
	dir := t.TempDir()
	project := filepath.Join(dir, "-home-"+evil)
	if err := os.Mkdir(project, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "evil.jsonl"), append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	printed := map[string]string{"import": runImportCmd(t, "claude-code", dir, "--db", db)}
	for _, report := range []string{"daily", "session"} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{"usage", report, "--breakdown", "model", "--db", db}, &out, &errOut); err != nil {
			t.Fatalf("usage %s = %v; %s", report, err, errOut.String())
		}
		printed["usage "+report] = out.String()
	}
	for cmd, out := range printed {
		if !strings.Contains(out, "evil") && cmd != "import" || !strings.Contains(out, "problem") && cmd == "import" {
			t.Errorf("%s printed %q; want the renamed model (or the broken line's problem)", cmd, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }); i >= 0 {
			t.Errorf("%s printed a control character %q at %d: %q", cmd, out[i], i, out)
		}
	}
}
