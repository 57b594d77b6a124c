package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// TestSessionDetailUsage: the session detail JSON carries usage with the
// names the API documents, and leaves it out for a session without any.
func TestSessionDetailUsage(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("plain"), http.StatusCreated)
	b, err := store.ParseBatch(mustJSON(t, newBatch("used")))
	if err != nil {
		t.Fatal(err)
	}
	b.Usage = []store.UsageRecord{{ID: "msg_1", At: "2026-01-01T00:00:00Z", Model: "claude-sonnet-4-5", ActorID: "used-root", TurnID: "used-t1",
		Tokens: pricing.Tokens{Input: 1000, Output: 2000, CacheRead: 3000, CacheCreation: 4000, CacheCreation1h: 2500}, Source: store.UsageFromFile}}
	if _, err := s.store.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply = %v", err)
	}

	var plain map[string]json.RawMessage
	if rec := s.get("/api/sessions/plain"); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &plain) != nil {
		t.Fatalf("GET plain = %d %s", rec.Code, rec.Body)
	}
	if _, ok := plain["usage"]; ok {
		t.Errorf("session without usage has usage %s; want it left out", plain["usage"])
	}

	rec := s.get("/api/sessions/used")
	var d struct {
		Usage struct {
			Tokens struct {
				Input         int64 `json:"input"`
				Output        int64 `json:"output"`
				CacheRead     int64 `json:"cache_read"`
				CacheCreation int64 `json:"cache_creation"`
				Hour          int64 `json:"cache_creation_1h"`
			} `json:"tokens"`
			APIRequests int64 `json:"api_requests"`
			Models      []struct {
				Model            string   `json:"model"`
				APIRequests      int64    `json:"api_requests"`
				EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			} `json:"models"`
			EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			Pricing          struct {
				Source string `json:"source"`
				AsOf   string `json:"as_of"`
			} `json:"pricing"`
		} `json:"usage"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil {
		t.Fatalf("GET used = %d %s", rec.Code, rec.Body)
	}
	u := d.Usage
	if u.Tokens.Input != 1000 || u.Tokens.Output != 2000 || u.Tokens.CacheRead != 3000 || u.Tokens.CacheCreation != 4000 || u.APIRequests != 1 {
		t.Errorf("usage = %+v; want the record's tokens, 1 request", u)
	}
	if len(u.Models) != 1 || u.Models[0].Model != "claude-sonnet-4-5" || u.Models[0].EstimatedCostUSD == nil || u.EstimatedCostUSD == nil || u.Pricing.Source == "" || u.Pricing.AsOf == "" {
		t.Errorf("usage = %s; want one priced model and the pricing source", rec.Body)
	}
	// The hour's cache writes: in the JSON, in the estimate (at twice the
	// input price, $6 a million for Sonnet 4.5, the rest at $3.75), and
	// on the page, under the cache write count.
	want := (1000*3 + 2000*15 + 3000*0.3 + 1500*3.75 + 2500*6) / 1e6
	if u.Tokens.Hour != 2500 || u.EstimatedCostUSD == nil || math.Abs(*u.EstimatedCostUSD-want) > 1e-6 {
		t.Errorf("usage = %s; want 2,500 of the cache writes for an hour and an estimate of %v", rec.Body, want)
	}
	page := s.get("/session?id=used").Body.String()
	if !strings.Contains(page, `data-label="Cache write" title="2,500 of them written for an hour">4,000<`) {
		t.Errorf("the session page does not show the hour's cache writes under the cache write count")
	}
}

// TestSessionSummaryAddsUpUsage: the summary of a session whose agent
// reported no totals (no metrics) shows its responses' requests and tokens
// added up, says so, and keeps the cost "not recorded" with the estimate
// beside it; a session with metrics shows them as reported, and one with
// neither shows nothing made up. The session list's Cost column says the
// same, with the usage page's rule for a cost the responses reported: the
// estimate covers only the requests without one (the summary's, as the
// session's usage in the API, estimates every request beside it). Under
// the tokens, the input read from and written to the cache, reported or
// added up, when there is any; each turn's header has its own cost, as
// the summary's usage.
func TestSessionSummaryAddsUpUsage(t *testing.T) {
	s := newTestService(t)
	recs := []store.UsageRecord{
		{ID: "1", At: "2026-03-02T12:00:00Z", Model: "claude-sonnet-4-5", Tokens: pricing.Tokens{Input: 1200, Output: 340, CacheRead: 5000}},
		{ID: "2", At: "2026-03-02T12:01:00Z", Model: "claude-sonnet-4-5", Tokens: pricing.Tokens{Input: 800, Output: 1160, CacheCreation: 700}},
	}
	// The totals a session reports, with input read from and written to
	// the cache.
	reportedTokens := newBatch("x")["session"].(obj)["metrics"].(obj)["tokens"].(obj)
	reportedTokens["cache_read"], reportedTokens["cache_creation"] = 9000, 250
	apply := func(sid string, metrics bool, usage []store.UsageRecord) {
		v := newBatch(sid)
		if !metrics {
			delete(v["session"].(obj), "metrics")
		} else {
			v["session"].(obj)["metrics"].(obj)["tokens"] = reportedTokens
		}
		mustApplyBatchUsage(t, s, v, usage)
	}
	apply("added", false, recs)
	apply("reported", true, recs)
	apply("bare", false, nil)
	paid := slices.Clone(recs)
	paidUSD := 0.0
	for i, usd := range []float64{0.0125, 0.031} {
		paid[i].CostUSD = &usd
		paidUSD += usd
	}
	apply("paid", false, paid)
	// The first request reported its cost, the second not: the second is
	// estimated, the two costs apart.
	mixed := slices.Clone(recs)
	mixed[0].CostUSD = paid[0].CostUSD
	apply("mixed", false, mixed)
	// A cost reported alone (Crush): metrics of no request and no token.
	costOnly := newBatch("cost-only")
	costOnly["session"].(obj)["metrics"] = obj{"cost_usd": 1.25, "api_requests": 0,
		"tokens": obj{"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0}}
	if b, err := store.ParseBatch(mustJSON(t, costOnly)); err != nil {
		t.Fatal(err)
	} else if _, err := s.store.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}

	var sum pricing.Tokens
	estimate := 0.0
	for _, r := range recs {
		sum.Add(r.Tokens)
		at, _ := time.Parse(time.RFC3339, r.At)
		usd, ok := pricing.Default().Estimate(r.Model, at, r.Tokens)
		if !ok {
			t.Fatalf("no price for %s", r.Model)
		}
		estimate += usd
	}
	at, _ := time.Parse(time.RFC3339, recs[1].At)
	second, _ := pricing.Default().Estimate(recs[1].Model, at, recs[1].Tokens)
	mixedCost := fmt.Sprintf("$%.2f reported ≈ $%.2f estimated", *paid[0].CostUSD, second)
	metrics := newBatch("x")["session"].(obj)["metrics"].(obj)
	tokens := reportedTokens
	estimated := fmt.Sprintf("≈ $%.2f estimated", estimate)
	// The line of cached input under the tokens, and its title.
	cache := func(read, written int64) [2]string {
		if read+written == 0 {
			return [2]string{}
		}
		return [2]string{fmt.Sprintf("+ %s cached", views.Number(read+written)),
			fmt.Sprintf("%s read from the cache, %s written to it", views.Number(read), views.Number(written))}
	}
	reportedCache := cache(int64(tokens["cache_read"].(int)), int64(tokens["cache_creation"].(int)))
	for _, c := range []struct {
		sid, cost, costUsage, listUsage, requests, tokens, from string
		cache                                                   [2]string
		turnCost                                                string // the one turn's, in its header
	}{
		{"added", "not recorded", estimated, estimated, fmt.Sprint(len(recs)),
			views.Number(sum.Input) + " / " + views.Number(sum.Output), "from the agent's files", cache(sum.CacheRead, sum.CacheCreation), estimated},
		{"reported", fmt.Sprintf("$%.2f", metrics["cost_usd"]), "", "", fmt.Sprint(metrics["api_requests"]),
			fmt.Sprintf("%v / %v", tokens["input"], tokens["output"]), "", reportedCache, estimated},
		{"bare", "not recorded", "", "", "not recorded", "not recorded", "", [2]string{}, ""},
		{"cost-only", "$1.25", "", "", "not recorded", "not recorded", "", [2]string{}, ""},
		// Every request reported its cost: nothing to estimate, the page as
		// the list (and the usage report).
		{"paid", "not recorded", fmt.Sprintf("$%.2f reported", paidUSD), fmt.Sprintf("$%.2f reported", paidUSD), fmt.Sprint(len(recs)),
			views.Number(sum.Input) + " / " + views.Number(sum.Output), "from the agent's files", cache(sum.CacheRead, sum.CacheCreation),
			fmt.Sprintf("$%.2f reported", paidUSD)},
		{"mixed", "not recorded", mixedCost, mixedCost, fmt.Sprint(len(recs)),
			views.Number(sum.Input) + " / " + views.Number(sum.Output), "from the agent's files", cache(sum.CacheRead, sum.CacheCreation), mixedCost},
	} {
		row := mustDocument(t, s, "/").Find(`[data-testid="session-row"][data-session-id="` + c.sid + `"]`)
		usage := strings.Join(strings.Fields(row.Find(`[data-testid="cost-usage"]`).Text()), " ")
		row.Find(`[data-testid="cost-usage"]`).Remove()
		if got := strings.TrimSpace(row.Find(`[data-testid="cost"]`).Text()); got != c.cost || usage != c.listUsage {
			t.Errorf("%s: list cost %q, from the usage %q; want %q, %q", c.sid, got, usage, c.cost, c.listUsage)
		}

		rec := s.get("/session?id=" + c.sid)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
		if rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET /session?id=%s = %d, %v", c.sid, rec.Code, err)
		}
		text := func(sel string) string { return strings.TrimSpace(doc.Find(sel).Text()) }
		from := doc.Find(`#summary .added-up.muted`).Map(func(_ int, d *goquery.Selection) string { return d.Text() })
		wantFrom := []string{}
		if c.from != "" {
			wantFrom = []string{c.from, c.from} // under the requests and under the tokens
		}
		if got := text(`[data-testid="summary-cost"]`); got != c.cost {
			t.Errorf("%s: cost %q; want %q", c.sid, got, c.cost)
		}
		if got := strings.Join(strings.Fields(text(`[data-testid="summary-cost-usage"]`)), " "); got != c.costUsage {
			t.Errorf("%s: cost from the usage %q; want %q", c.sid, got, c.costUsage)
		}
		if got := text(`[data-testid="summary-requests"]`); got != c.requests {
			t.Errorf("%s: API requests %q; want %q", c.sid, got, c.requests)
		}
		if got := text(`[data-testid="summary-tokens"]`); got != c.tokens {
			t.Errorf("%s: tokens %q; want %q", c.sid, got, c.tokens)
		}
		if got := strings.Join(strings.Fields(text(`[data-testid="turn-cost"]`)), " "); got != c.turnCost {
			t.Errorf("%s: the turn's cost %q; want %q", c.sid, got, c.turnCost)
		}
		line := doc.Find(`[data-testid="summary-cache"]`)
		if got := [2]string{strings.TrimSpace(line.Text()), line.AttrOr("title", "")}; got != c.cache {
			t.Errorf("%s: cached input %q; want %q", c.sid, got, c.cache)
		}
		if !slices.Equal(from, wantFrom) {
			t.Errorf("%s: where the counts come from %q; want %q", c.sid, from, wantFrom)
		}
	}
}

// mustApplyUsage stores session sid of agent kind and workspace root with
// the usage records recs.
func mustApplyUsage(t *testing.T, s *testService, sid, agent, root string, recs ...store.UsageRecord) {
	t.Helper()
	v := newBatch(sid)
	hdr := v["session"].(obj)
	hdr["agent"].(obj)["kind"] = agent
	hdr["workspace"].(obj)["root"] = root
	mustApplyBatchUsage(t, s, v, recs)
}

// mustApplyBatchUsage stores the batch v with the usage records recs, each
// of its session's root actor and first turn.
func mustApplyBatchUsage(t *testing.T, s *testService, v obj, recs []store.UsageRecord) {
	t.Helper()
	sid := v["session"].(obj)["id"].(string)
	b, err := store.ParseBatch(mustJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.ActorID, r.TurnID, r.Source = sid+"-root", sid+"-t1", store.UsageFromFile
		b.Usage = append(b.Usage, r)
	}
	if _, err := s.store.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply(%s) = %v", sid, err)
	}
}

// mustUsageFixture stores three sessions with usage on two days, two agents,
// two projects and three models (one without a price).
func mustUsageFixture(t *testing.T, s *testService) {
	t.Helper()
	for _, f := range usageFixture() {
		mustApplyUsage(t, s, f.sid, f.agent, f.root, f.records...)
	}
}

// usageFixture is the sessions and usage records of mustUsageFixture.
func usageFixture() []struct {
	sid, agent, root string
	records          []store.UsageRecord
} {
	tok := func(in, out int64) pricing.Tokens { return pricing.Tokens{Input: in, Output: out, CacheRead: 10 * in} }
	return []struct {
		sid, agent, root string
		records          []store.UsageRecord
	}{
		{"ua", "claude-code", "/src/alpha", []store.UsageRecord{
			{ID: "1", At: "2026-03-02T12:00:00Z", Model: "claude-sonnet-4-5", Tokens: tok(1000, 200)},
			{ID: "2", At: "2026-03-03T12:00:00Z", Model: "claude-opus-4-1", Tokens: tok(500, 50)}}},
		{"ub", "codex", "/src/beta", []store.UsageRecord{
			{ID: "1", At: "2026-03-03T12:00:00Z", Model: "gpt-5", Tokens: tok(3000, 300)},
			{ID: "2", At: "2026-03-03T13:00:00Z", Model: "no-such-model", Tokens: tok(7, 1)}}},
		{"uc", "claude-code", "/src/beta", []store.UsageRecord{
			{ID: "1", At: "2026-03-05T12:00:00Z", Model: "claude-sonnet-4-5", Tokens: tok(100, 10)}}},
	}
}

// TestUsageRankedByCost: sessions by cost, most first, each its records
// priced from the price table, in the API, the usage page's top sessions
// (whose links switch between the two orders) and the dev server's page;
// the other tables keep their order by tokens.
func TestUsageRankedByCost(t *testing.T) {
	s := newTestService(t)
	mustUsageFixture(t, s)
	cost := map[string]float64{}
	var byCost []string
	for _, f := range usageFixture() {
		for _, r := range f.records {
			at, _ := time.Parse(time.RFC3339, r.At)
			usd, _ := pricing.Default().Estimate(r.Model, at, r.Tokens)
			cost[f.sid] += usd
		}
		byCost = append(byCost, f.sid)
	}
	slices.SortFunc(byCost, func(a, b string) int { return cmp.Compare(cost[b], cost[a]) })
	var tokens, costs UsageReport
	if json.Unmarshal(s.get("/api/usage?group=session").Body.Bytes(), &tokens) != nil ||
		json.Unmarshal(s.get("/api/usage?group=session&sort=cost&titles=1").Body.Bytes(), &costs) != nil {
		t.Fatal("GET /api/usage?group=session: not JSON")
	}
	keys := func(rows []store.UsageRow) (out []string) {
		for _, r := range rows {
			out = append(out, r.Key)
		}
		return out
	}
	if slices.Equal(keys(tokens.Rows), byCost) {
		t.Fatalf("the fixture's sessions rank %q by tokens and by cost; want them apart", byCost)
	}
	if got := keys(costs.Rows); !slices.Equal(got, byCost) || costs.Sort != store.UsageSortCost || costs.Rows[0].Title == "" || costs.Rows[1].Title != "" {
		t.Errorf("GET /api/usage?group=session&sort=cost&titles=1 = %q (sort %q, titles %q, %q); want %q, the first titled", got, costs.Sort, costs.Rows[0].Title, costs.Rows[1].Title, byCost)
	}
	if body := s.get("/api/usage?group=session&sort=tokens").Body.String(); !strings.Contains(body, `"sort":"tokens"`) ||
		!strings.Contains(body, `"rows":[{"key":"`+tokens.Rows[0].Key+`"`) {
		t.Errorf("GET /api/usage?group=session&sort=tokens = %s; want the order by tokens", body)
	}

	sessions := func(doc *goquery.Document) []string {
		return doc.Find(`[data-testid="usage-sessions"] [data-testid="usage-row"]`).Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-key", "") })
	}
	rows := func(doc *goquery.Document, chart string) []string {
		return doc.Find(`[data-testid="usage-chart-` + chart + `"] [data-testid="usage-row"]`).Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-key", "") })
	}
	page := mustDocument(t, s, "/usage?since=2026-03-01&until=2026-03-31")
	if got := sessions(page); !slices.Equal(got, keys(tokens.Rows)) || page.Find(`[data-testid="usage-sessions"] h2`).Text() != "Top sessions by tokens" {
		t.Errorf("the usage page's sessions = %q, %q; want by tokens %q", got, page.Find(`[data-testid="usage-sessions"] h2`).Text(), keys(tokens.Rows))
	}
	link := page.Find(`[data-testid="usage-sessions-by-cost"]`)
	if href := link.AttrOr("href", ""); href != "/usage?since=2026-03-01&sort=cost&until=2026-03-31#usage-sessions" || link.AttrOr("aria-current", "") != "" ||
		page.Find(`[data-testid="usage-sessions-by-tokens"]`).AttrOr("aria-current", "") != "page" {
		t.Errorf("the link to sessions by cost = %q (aria-current %q); want the page with sort=cost, the one by tokens current", href, link.AttrOr("aria-current", ""))
	}
	ranked := mustDocument(t, s, strings.TrimSuffix(link.AttrOr("href", ""), "#usage-sessions"))
	if got := sessions(ranked); !slices.Equal(got, byCost) || ranked.Find(`[data-testid="usage-sessions"] h2`).Text() != "Top sessions by cost" ||
		ranked.Find(`[data-testid="usage-sessions-by-cost"]`).AttrOr("aria-current", "") != "page" {
		t.Errorf("the usage page by cost: sessions %q, %q; want %q, the link by cost current", got, ranked.Find(`[data-testid="usage-sessions"] h2`).Text(), byCost)
	}
	for _, chart := range []string{"model", "agent", "project", "day"} {
		if got, want := rows(ranked, chart), rows(page, chart); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("the %s chart by cost = %q; want it as by tokens, %q", chart, got, want)
		}
	}
	if got := ranked.Find(`[data-testid="usage-session-title"]`).First().Text(); !strings.HasPrefix(firstUserPrompt(newBatch(byCost[0])), got) || got == "" {
		t.Errorf("the first session by cost is titled %q; want %s's first prompt", got, byCost[0])
	}
	if back := ranked.Find(`[data-testid="usage-sessions-by-tokens"]`).AttrOr("href", ""); back != "/usage?since=2026-03-01&until=2026-03-31#usage-sessions" {
		t.Errorf("the link back to sessions by tokens = %q", back)
	}
	rec := s.get("/usage?sort=price")
	if want := `The parameter sort=&#34;price&#34; is not valid: give one of tokens, cost.`; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("GET /usage?sort=price = %d; want 400 saying %s", rec.Code, want)
	}
}

// TestUsagePageSaysWhenUsageIsRecorded: a period without usage (the last
// 30 days, after an import of older sessions) says on which days usage was
// recorded, for the agent asked for, and links to them with the form's
// other values; a store without usage says nothing more.
func TestUsagePageSaysWhenUsageIsRecorded(t *testing.T) {
	s := newTestService(t)
	recorded := func(path string) (text, href string) {
		t.Helper()
		rec := s.get(path)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
		if rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET %s = %d, %v", path, rec.Code, err)
		}
		empty := doc.Find(`[data-testid="usage-empty"]`)
		if empty.Length() != 1 {
			t.Fatalf("GET %s: no usage-empty; want the period empty", path)
		}
		return strings.Join(strings.Fields(empty.Text()), " "), doc.Find(`[data-testid="usage-recorded"]`).AttrOr("href", "")
	}
	if text, href := recorded("/usage"); text != "No usage recorded in this period." || href != "" {
		t.Errorf("empty store: %q, link %q; want the period empty and no link", text, href)
	}

	mustUsageFixture(t, s)
	day := func(at string) string {
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		return ts.In(time.Local).Format(time.DateOnly) // the report's days are local
	}
	// The fixture's records: the first and last of all, and codex's.
	first, last, codex := day("2026-03-02T12:00:00Z"), day("2026-03-05T12:00:00Z"), day("2026-03-03T12:00:00Z")
	for _, c := range []struct{ path, text, href string }{
		{"/usage", "Usage is recorded from " + first + " to " + last + ": show that period.",
			"/usage?since=" + first + "&until=" + last},
		{"/usage?agent=codex&stack=agent&since=2026-06-01&until=2026-06-30", "Usage is recorded on " + codex + ": show that period.",
			"/usage?agent=codex&since=" + codex + "&stack=agent&until=" + codex},
	} {
		text, href := recorded(c.path)
		if want := "No usage recorded in this period. " + c.text; text != want || href != c.href {
			t.Errorf("GET %s: %q, link %q; want %q, %q", c.path, text, href, want, c.href)
		}
		if rec := s.get(href); !strings.Contains(rec.Body.String(), `data-testid="usage-chart-day"`) || strings.Contains(rec.Body.String(), `data-testid="usage-empty"`) {
			t.Errorf("GET %s (the link) = %d; want the recorded days' chart", href, rec.Code)
		}
	}
}

// TestUsageAPI: GET /api/usage answers every group with the store's
// report and its total, and honours since, until and agent.
func TestUsageAPI(t *testing.T) {
	s := newTestService(t)
	mustUsageFixture(t, s)
	for _, c := range []struct {
		query string
		keys  []string
		input int64
	}{
		{"", []string{"2026-03-02", "2026-03-03", "2026-03-05"}, 4607},
		{"?group=day", []string{"2026-03-02", "2026-03-03", "2026-03-05"}, 4607},
		{"?group=week", []string{"2026-03-02"}, 4607},
		{"?group=month", []string{"2026-03"}, 4607},
		{"?group=model", []string{"gpt-5", "claude-sonnet-4-5", "claude-opus-4-1", "no-such-model"}, 4607},
		{"?group=agent", []string{"codex", "claude-code"}, 4607},
		{"?group=project", []string{"/src/beta", "/src/alpha"}, 4607},
		{"?group=session", []string{"ub", "ua", "uc"}, 4607},
		// The 5-hour blocks start at each first record's hour: 13:00 is in 12:00's.
		{"?group=block", []string{"2026-03-02T12:00:00Z", "2026-03-03T12:00:00Z", "2026-03-05T12:00:00Z"}, 4607},
		{"?group=day&since=2026-03-03&until=2026-03-03", []string{"2026-03-03"}, 3507},
		{"?group=day&since=2026-03-04", []string{"2026-03-05"}, 100},
		{"?group=day&until=2026-03-02", []string{"2026-03-02"}, 1000},
		{"?group=model&agent=claude-code", []string{"claude-sonnet-4-5", "claude-opus-4-1"}, 1600},
		{"?group=day&agent=nobody", nil, 0},
		{"?group=agent&model=claude-sonnet-4-5", []string{"claude-code"}, 1100},
	} {
		rec := s.get("/api/usage" + c.query)
		var rep UsageReport
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &rep) != nil {
			t.Fatalf("GET /api/usage%s = %d %s", c.query, rec.Code, rec.Body)
		}
		var keys []string
		var input int64
		for _, r := range rep.Rows {
			keys = append(keys, r.Key)
			input += r.Tokens.Input
		}
		if !slices.Equal(keys, c.keys) || input != c.input || rep.Total.Tokens.Input != c.input || rep.Pricing.AsOf == "" {
			t.Errorf("GET /api/usage%s = keys %v, input %d, total %d; want %v, %d", c.query, keys, input, rep.Total.Tokens.Input, c.keys, c.input)
		}
	}
	// A report of nothing lists no rows, whatever its group.
	for _, group := range store.UsageGroups {
		if body := s.get("/api/usage?agent=nobody&group=" + group).Body.String(); !strings.Contains(body, `"rows":[]`) {
			t.Errorf("GET /api/usage?agent=nobody&group=%s = %s; want an empty list of rows", group, body)
		}
	}
	// session= keeps those sessions' rows, as the whole report has them;
	// an id not stored adds nothing.
	var all, some UsageReport
	if json.Unmarshal(s.get("/api/usage?group=session").Body.Bytes(), &all) != nil ||
		json.Unmarshal(s.get("/api/usage?group=session&session=uc&session=ua&session=none").Body.Bytes(), &some) != nil {
		t.Fatal("GET /api/usage?group=session: not JSON")
	}
	want := slices.DeleteFunc(slices.Clone(all.Rows), func(r store.UsageRow) bool { return r.Key == "ub" })
	if len(all.Rows) != 3 || !reflect.DeepEqual(some.Rows, want) {
		t.Errorf("GET /api/usage?group=session&session=uc&session=ua = %+v; want %+v", some.Rows, want)
	}
	// project= keeps the sessions of that workspace, as the list names
	// each session's, and adds up to that project's row of the report by
	// project.
	var projects UsageReport
	if json.Unmarshal(s.get("/api/usage?group=project").Body.Bytes(), &projects) != nil {
		t.Fatal("GET /api/usage?group=project: not JSON")
	}
	rootOf := workspaceRoots(t, s)
	for _, p := range projects.Rows {
		var one UsageReport
		if json.Unmarshal(s.get("/api/usage?group=session&project="+url.QueryEscape(p.Key)).Body.Bytes(), &one) != nil {
			t.Fatal("GET /api/usage?project=: not JSON")
		}
		want := slices.DeleteFunc(slices.Clone(all.Rows), func(r store.UsageRow) bool { return rootOf[r.Key] != p.Key })
		if one.Project != p.Key || len(want) == 0 || !reflect.DeepEqual(one.Rows, want) || one.Total.Tokens != p.Tokens {
			t.Errorf("GET /api/usage?group=session&project=%s = %+v; want the rows %+v, adding up to %+v", p.Key, one, want, p.Tokens)
		}
	}
	if body := s.get("/api/usage?project=/src").Body.String(); !strings.Contains(body, `"rows":[]`) {
		t.Errorf("GET /api/usage?project=/src = %s; want no rows (a folder above the projects is not one)", body)
	}
	// breakdown= splits each day by model or agent as the report of that
	// day alone by it does, and the total as the whole report by it.
	for _, by := range store.UsageBreakdowns {
		var days, whole UsageReport
		if json.Unmarshal(s.get("/api/usage?group=day&breakdown="+by).Body.Bytes(), &days) != nil ||
			json.Unmarshal(s.get("/api/usage?group="+by).Body.Bytes(), &whole) != nil {
			t.Fatal("GET /api/usage?breakdown=: not JSON")
		}
		if days.Breakdown != by || len(days.Rows) != 3 || !reflect.DeepEqual(days.Total.Breakdown, whole.Rows) {
			t.Errorf("GET /api/usage?group=day&breakdown=%s = %+v, total's breakdown %+v; want 3 days, the total's as group=%s %+v", by, days, days.Total.Breakdown, by, whole.Rows)
		}
		for _, d := range days.Rows {
			var one UsageReport
			if json.Unmarshal(s.get("/api/usage?group="+by+"&since="+d.Key+"&until="+d.Key).Body.Bytes(), &one) != nil || !reflect.DeepEqual(d.Breakdown, one.Rows) {
				t.Errorf("day %s split by %s = %+v; want %+v as the report of that day by %s", d.Key, by, d.Breakdown, one.Rows, by)
			}
		}
	}
	var rep UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=model").Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if last := rep.Rows[len(rep.Rows)-1]; last.EstimatedCostUSD != nil || !slices.Equal(last.Unpriced, []string{"no-such-model"}) {
		t.Errorf("no-such-model row = %+v; want no estimate and the model listed as unpriced", last)
	}
}

// TestUsageAPIBadParameters: a bad parameter is 400 with a JSON error
// naming it.
func TestUsageAPIBadParameters(t *testing.T) {
	s := newTestService(t)
	for _, c := range []struct{ query, want string }{
		{"?group=year", `query parameter group="year" is not valid: give one of day, week, month, session, model, agent, project, block`},
		{"?since=yesterday", `query parameter since="yesterday" is not valid: give a day as YYYY-MM-DD or YYYYMMDD`},
		{"?until=2026-13-01", `query parameter until="2026-13-01" is not valid: give a day as YYYY-MM-DD or YYYYMMDD`},
		{"?since=2026-03-05&until=2026-03-01", `query parameter since="2026-03-05" is after until="2026-03-01"`},
		{"?agent=" + strings.Repeat("a", 201), "query parameter agent is longer than 200 bytes"},
		{"?model=" + strings.Repeat("m", 201), "query parameter model is longer than 200 bytes"},
		{"?project=/" + strings.Repeat("p", 4096), "query parameter project is longer than 4096 bytes"},
		{"?group=session&titles=201", `query parameter titles="201" is not valid: give 0 to 200`},
		{"?group=session&titles=-1", `query parameter titles="-1" is not valid: give 0 to 200`},
		{"?group=session" + strings.Repeat("&session=s", 101), "query parameter session is given 101 times: give at most 100"},
		{"?group=day&breakdown=project", `query parameter breakdown="project" is not valid: give one of model, agent`},
		{"?group=session&sort=price", `query parameter sort="price" is not valid: give one of tokens, cost`},
		{"?sort=cost", `query parameter sort="cost" is not valid with group=day: its rows are in the order of time`},
		{"?group=block&sort=tokens", `query parameter sort="tokens" is not valid with group=block: its rows are in the order of time`},
	} {
		rec := s.get("/api/usage" + c.query)
		var body errorBody
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error != c.want {
			t.Errorf("GET /api/usage%.40s = %d %s; want 400 %q", c.query, rec.Code, rec.Body, c.want)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("GET /api/usage%.40s Content-Type = %q; want JSON", c.query, ct)
		}
	}
}

// TestUsagePage: /usage shows the last 30 days by default, and a bad
// parameter is a 400 page saying which.
func TestUsagePage(t *testing.T) {
	s := newTestService(t)
	mustUsageFixture(t, s)
	rec := s.get("/usage")
	today := time.Now().Format(time.DateOnly)
	since := time.Now().AddDate(0, 0, -29).Format(time.DateOnly)
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, `value="`+since+`"`) || !strings.Contains(body, `value="`+today+`"`) ||
		!strings.Contains(body, `data-testid="usage-empty"`) {
		t.Errorf("GET /usage = %d; want 200 from %s to %s, with no usage in it", rec.Code, since, today)
	}
	rec = s.get("/usage?since=2026-03-01&until=2026-03-31")
	if body := rec.Body.String(); rec.Code != http.StatusOK || strings.Contains(body, `data-testid="usage-empty"`) || !strings.Contains(body, `data-testid="usage-chart-day"`) {
		t.Errorf("GET /usage in March = %d; want 200 with the day chart", rec.Code)
	}
	// The top sessions show their titles (the first line of the first
	// prompt), their ids under them; the API gives them when asked.
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	titles := doc.Find(`[data-testid="usage-session-title"]`).Map(func(_ int, a *goquery.Selection) string { return a.AttrOr("href", "") + " " + a.Text() })
	var want []string
	for _, sid := range []string{"ub", "ua", "uc"} { // most tokens first
		first, _, _ := strings.Cut(firstUserPrompt(newBatch(sid)), "\n")
		want = append(want, "/session?id="+sid+" "+first)
	}
	if !slices.Equal(titles, want) {
		t.Errorf("top sessions' titles = %q; want %q", titles, want)
	}
	// A day of two or more models has a line for each under its row, with
	// the tokens and cost of the API's breakdown of that day.
	var split UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=day&breakdown=model&since=2026-03-01&until=2026-03-31").Body.Bytes(), &split); err != nil {
		t.Fatal(err)
	}
	var wantParts, gotParts []string
	for _, d := range split.Rows {
		row := doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-row"][data-key="` + d.Key + `"]`)
		got := row.NextUntil(`[data-testid="usage-row"]`).Map(func(_ int, tr *goquery.Selection) string {
			return strings.Join(strings.Fields(tr.AttrOr("data-key", "")+" "+tr.Find(`[data-field="total"]`).Text()+" "+tr.Find(`[data-field="cost"]`).Text()), " ")
		})
		gotParts = append(gotParts, d.Key+": "+strings.Join(got, "; "))
		var parts []string
		if len(d.Breakdown) > 1 {
			for _, part := range d.Breakdown {
				line := part.Key + " " + views.Thousands(part.Tokens.Total())
				if part.ReportedCostUSD != nil {
					line += fmt.Sprintf(" $%.2f reported", *part.ReportedCostUSD)
				}
				if part.EstimatedCostUSD != nil {
					line += fmt.Sprintf(" ≈ $%.2f estimated", *part.EstimatedCostUSD)
				}
				for _, m := range part.Unpriced {
					line += " no price for " + m
				}
				parts = append(parts, line)
			}
		}
		wantParts = append(wantParts, d.Key+": "+strings.Join(parts, "; "))
	}
	if !slices.ContainsFunc(split.Rows, func(r store.UsageRow) bool { return len(r.Breakdown) > 1 }) || !slices.Equal(gotParts, wantParts) {
		t.Errorf("the days' lines by model = %q; want %q", gotParts, wantParts)
	}
	// Each model's bar takes the colour of its series in the day chart's
	// legend (most tokens first, as the model chart's rows).
	var models UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=model&since=2026-03-01&until=2026-03-31").Body.Bytes(), &models); err != nil {
		t.Fatal(err)
	}
	legend := doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-legend"] li`).Map(func(_ int, li *goquery.Selection) string {
		return li.Text() + " " + strings.TrimPrefix(li.Find(".usage-swatch").AttrOr("class", ""), "usage-swatch usage-k")
	})
	bars := doc.Find(`[data-testid="usage-chart-model"] .usage-rows rect`).Map(func(_ int, r *goquery.Selection) string {
		return strings.TrimPrefix(r.AttrOr("class", ""), "usage-bar usage-s")
	})
	var wantLegend, wantBars []string
	for j, r := range models.Rows {
		wantLegend, wantBars = append(wantLegend, fmt.Sprintf("%s %d", r.Key, j)), append(wantBars, fmt.Sprint(j))
	}
	if !slices.Equal(legend, wantLegend) || !slices.Equal(bars, wantBars) {
		t.Errorf("day chart's legend %q, model bars' colours %q; want %q and %q", legend, bars, wantLegend, wantBars)
	}
	// Under the day chart: its first and last day, and the day with the
	// most tokens (the columns have no labels of their own).
	var days UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=day&since=2026-03-01&until=2026-03-31").Body.Bytes(), &days); err != nil || len(days.Rows) < 2 {
		t.Fatalf("GET /api/usage?group=day = %+v, %v; want two days or more", days.Rows, err)
	}
	peak := days.Rows[0]
	for _, r := range days.Rows {
		if r.Tokens.Input+r.Tokens.Output+r.Tokens.CacheRead+r.Tokens.CacheCreation > peak.Tokens.Input+peak.Tokens.Output+peak.Tokens.CacheRead+peak.Tokens.CacheCreation {
			peak = r
		}
	}
	axis := doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-axis"] span`).Map(func(_ int, e *goquery.Selection) string { return e.Text() })
	wantPeak := "Most tokens: " + views.Thousands(peak.Tokens.Input+peak.Tokens.Output+peak.Tokens.CacheRead+peak.Tokens.CacheCreation) + " on " + peak.Key
	if want := []string{days.Rows[0].Key, days.Rows[len(days.Rows)-1].Key}; !slices.Equal(axis, want) ||
		doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-peak"]`).Text() != wantPeak {
		t.Errorf("day chart's axis %q, peak %q; want %q and %q", axis, doc.Find(`[data-testid="usage-peak"]`).Text(), want, wantPeak)
	}
	// The 5-hour blocks, newest first, by their hours in local time.
	var blocks UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=block&since=2026-03-01&until=2026-03-31").Body.Bytes(), &blocks); err != nil || len(blocks.Rows) < 2 {
		t.Fatalf("GET /api/usage?group=block = %+v, %v; want two blocks or more", blocks.Rows, err)
	}
	var wantBlocks []string
	for _, r := range slices.Backward(blocks.Rows) {
		start, err := time.Parse(time.RFC3339, r.Key)
		if err != nil {
			t.Fatalf("block %q: %v", r.Key, err)
		}
		wantBlocks = append(wantBlocks, start.Local().Format("2006-01-02 15:04")+"–"+start.Add(5*time.Hour).Local().Format("15:04"))
	}
	if got := doc.Find(`[data-testid="usage-chart-block"] [data-testid="usage-row"]`).Map(func(_ int, r *goquery.Selection) string {
		return r.AttrOr("data-key", "")
	}); !slices.Equal(got, wantBlocks) {
		t.Errorf("block chart's rows %q; want %q", got, wantBlocks)
	}
	var rep UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=session&titles=1").Body.Bytes(), &rep); err != nil || len(rep.Rows) != 3 ||
		rep.Rows[0].Title == "" || rep.Rows[1].Title != "" {
		t.Errorf("GET /api/usage?group=session&titles=1 = %+v, %v; want the first row titled alone", rep.Rows, err)
	}
	// The Agent field offers the period's agents; each agent's row links
	// to the page for it alone, with the form's other values.
	var agents UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=agent&since=2026-03-01&until=2026-03-31").Body.Bytes(), &agents); err != nil || len(agents.Rows) < 2 {
		t.Fatalf("GET /api/usage?group=agent = %+v, %v; want two agents", agents.Rows, err)
	}
	offered := doc.Find(`#usage-agents option`).Map(func(_ int, o *goquery.Selection) string { return o.AttrOr("value", "") })
	links := doc.Find(`[data-testid="usage-chart-agent"] [data-testid="usage-row"] th a`).Map(func(_ int, a *goquery.Selection) string { return a.AttrOr("href", "") })
	var wantOffered, wantLinks []string
	for _, r := range agents.Rows {
		wantOffered = append(wantOffered, r.Key)
		wantLinks = append(wantLinks, "/usage?"+url.Values{"agent": {r.Key}, "since": {"2026-03-01"}, "until": {"2026-03-31"}}.Encode())
	}
	if !slices.Equal(offered, wantOffered) || !slices.Equal(links, wantLinks) {
		t.Errorf("agents offered %q, linked %q; want %q and %q", offered, links, wantOffered, wantLinks)
	}
	one := mustDocument(t, s, links[0])
	if got := one.Find(`[data-testid="usage-chart-agent"] [data-testid="usage-row"]`).Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-key", "") }); !slices.Equal(got, wantOffered[:1]) ||
		one.Find(`[data-testid="usage-agent"]`).AttrOr("value", "") != wantOffered[0] {
		t.Errorf("%s: agents %q; want %s alone, in the field too", links[0], got, wantOffered[0])
	}
	if doc.Find(`[data-testid="usage-project-shown"]`).Length() != 0 {
		t.Error("the page of every project names one")
	}
	// So does the Project field, for the projects of the chart; the page
	// of one project has its row of the report by project as its total.
	var projects UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=project&since=2026-03-01&until=2026-03-31").Body.Bytes(), &projects); err != nil || len(projects.Rows) < 2 {
		t.Fatalf("GET /api/usage?group=project = %+v, %v; want two projects", projects.Rows, err)
	}
	offered = doc.Find(`#usage-projects option`).Map(func(_ int, o *goquery.Selection) string { return o.AttrOr("value", "") })
	links = doc.Find(`[data-testid="usage-chart-project"] [data-testid="usage-row"] th a`).Map(func(_ int, a *goquery.Selection) string { return a.AttrOr("href", "") })
	wantOffered, wantLinks = nil, nil
	for _, r := range projects.Rows {
		wantOffered = append(wantOffered, r.Key)
		wantLinks = append(wantLinks, "/usage?"+url.Values{"project": {r.Key}, "since": {"2026-03-01"}, "until": {"2026-03-31"}}.Encode())
	}
	if !slices.Equal(offered, wantOffered) || !slices.Equal(links, wantLinks) {
		t.Errorf("projects offered %q, linked %q; want %q and %q", offered, links, wantOffered, wantLinks)
	}
	for i, link := range links {
		one := mustDocument(t, s, link)
		got := one.Find(`[data-testid="usage-chart-project"] [data-testid="usage-row"]`).Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-key", "") })
		input := one.Find(`[data-testid="usage-total-input"]`).Text()
		if !slices.Equal(got, wantOffered[i:i+1]) || one.Find(`[data-testid="usage-project"]`).AttrOr("value", "") != wantOffered[i] || input != views.Thousands(projects.Rows[i].Tokens.Input) {
			t.Errorf("%s: projects %q, input %s; want %s alone, in the field too, its %d input tokens", link, got, input, wantOffered[i], projects.Rows[i].Tokens.Input)
		}
		// The page names its project whole (the field may cut it) and
		// links back to every project's.
		shown := one.Find(`[data-testid="usage-project-shown"]`)
		if shown.Find("code").Text() != wantOffered[i] || shown.Find(`a`).AttrOr("href", "") != "/usage?since=2026-03-01&until=2026-03-31" {
			t.Errorf("%s: names %q, links %q; want %s and the page of every project", link, shown.Find("code").Text(), shown.Find("a").AttrOr("href", ""), wantOffered[i])
		}
	}
	rec = s.get("/usage?since=2026-03-01&until=2026-03-31&stack=agent")
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, `data-series="codex" data-tokens="33378"`) {
		t.Errorf("GET /usage stacked by agent = %d; want codex's 33,378 tokens stacked on its day", rec.Code)
	}
	if rec = s.get("/usage?stack=day"); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `stack=&#34;day&#34; is not valid: give model or agent`) {
		t.Errorf("GET /usage?stack=day = %d; want 400 saying stack is not valid", rec.Code)
	}
	rec = s.get("/usage?since=tomorrow")
	if want := `The parameter since=&#34;tomorrow&#34; is not valid: give a day as YYYY-MM-DD or YYYYMMDD.`; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("GET /usage?since=tomorrow = %d %s; want 400 saying %s", rec.Code, rec.Body, want)
	}
}

// firstUserPrompt is the text of a batch's first user message.
func firstUserPrompt(b obj) string {
	for _, st := range b["steps"].([]any) {
		if p := st.(obj)["payload"].(obj); st.(obj)["type"] == "message" && p["role"] == "user" {
			return p["text"].(string)
		}
	}
	return ""
}

// TestUsagePageCountsSessionTotals: sessions without usage records whose
// agents report totals (a push's metrics; Crush's cost alone) count on the
// usage page and in GET /api/usage, on the day they started, as the model
// store.SessionTotalsModel, which the page explains; a period that holds
// only a cost reported that way is not empty.
func TestUsagePageCountsSessionTotals(t *testing.T) {
	s := newTestService(t)
	var tokens pricing.Tokens
	var requests int64
	var cost float64
	for _, c := range []struct {
		sid     string
		metrics obj // nil: the batch's own
	}{
		{"pushed", nil},
		{"cost-only", obj{"cost_usd": 0.75, "api_requests": 0, "tokens": obj{"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0}}},
	} {
		v := newBatch(c.sid)
		hdr := v["session"].(obj)
		hdr["started_at"] = "2026-04-10T10:00:00Z"
		if c.metrics != nil {
			hdr["metrics"] = c.metrics
		}
		b, err := store.ParseBatch(mustJSON(t, v))
		if err != nil {
			t.Fatal(err)
		}
		m := b.Session.Metrics
		tokens.Add(pricing.Tokens{Input: m.Tokens.Input, Output: m.Tokens.Output, CacheRead: m.Tokens.CacheRead, CacheCreation: m.Tokens.CacheCreation})
		requests += m.APIRequests
		cost += m.CostUSD
		s.mustApply(v)
	}
	const period = "since=2026-04-01&until=2026-04-30"
	var rep UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=model&"+period).Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != store.SessionTotalsModel || rep.Rows[0].Tokens != tokens ||
		rep.Rows[0].APIRequests != requests || rep.Rows[0].ReportedCostUSD == nil || math.Abs(*rep.Rows[0].ReportedCostUSD-cost) > 1e-9 {
		t.Errorf("GET /api/usage?group=model = %+v; want one row %q of %+v, %d requests, $%v reported", rep.Rows, store.SessionTotalsModel, tokens, requests, cost)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(s.get("/usage?" + period).Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if note := doc.Find(`[data-testid="usage-session-totals"]`).Text(); !strings.Contains(note, store.SessionTotalsModel) {
		t.Errorf("usage page's note on session totals = %q; want it to name %q", note, store.SessionTotalsModel)
	}
	if want := fmt.Sprintf("$%.2f reported", cost); strings.TrimSpace(doc.Find(`[data-testid="usage-total-cost"]`).Text()) != want {
		t.Errorf("usage page's total cost = %q; want %q", doc.Find(`[data-testid="usage-total-cost"]`).Text(), want)
	}

	// A period with the cost-only session alone: its cost, no empty note.
	if err := s.store.Delete(context.Background(), "pushed"); err != nil {
		t.Fatal(err)
	}
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(s.get("/usage?" + period).Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Find(`[data-testid="usage-empty"]`).Length() != 0 || !strings.Contains(doc.Find(`[data-testid="usage-total-cost"]`).Text(), "$0.75") {
		t.Errorf("usage page of a cost reported alone: empty %d, cost %q; want $0.75 and not empty",
			doc.Find(`[data-testid="usage-empty"]`).Length(), doc.Find(`[data-testid="usage-total-cost"]`).Text())
	}
}

// TestUsagePageBoundsADaysLines: a day of more models than the chart
// stacks shows a line for each of the first views.UsageSeriesCount (most
// tokens first) and counts the rest, so the page stays bounded however
// many models a day had.
func TestUsagePageBoundsADaysLines(t *testing.T) {
	s := newTestService(t)
	var recs []store.UsageRecord
	const models = views.UsageSeriesCount + 2
	for i := range models {
		recs = append(recs, store.UsageRecord{ID: fmt.Sprint(i), At: "2026-03-10T12:00:00Z", Model: fmt.Sprintf("model-%d", i),
			Tokens: pricing.Tokens{Input: int64(100 * (i + 1)), Output: 1}})
	}
	mustApplyUsage(t, s, "many", "claude-code", "/src/many", recs...)
	doc := mustDocument(t, s, "/usage?since=2026-03-10&until=2026-03-10")
	got := doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-part"]`).Map(func(_ int, tr *goquery.Selection) string { return tr.AttrOr("data-key", "") })
	var want []string
	for i := models - 1; i >= models-views.UsageSeriesCount; i-- { // most tokens first
		want = append(want, fmt.Sprintf("model-%d", i))
	}
	more := doc.Find(`[data-testid="usage-chart-day"] [data-testid="usage-more-parts"]`).Text()
	if !slices.Equal(got, want) || strings.TrimSpace(more) != fmt.Sprintf("and %d more", models-views.UsageSeriesCount) {
		t.Errorf("the day's lines = %q, then %q; want %q and the other %d counted", got, more, want, models-views.UsageSeriesCount)
	}
}

// TestSessionLinksItsWorkspaceUsage: a session's page links to the usage
// page of its workspace, which, when the last 30 days have none, offers
// the days the project has; an export links to neither.
func TestSessionLinksItsWorkspaceUsage(t *testing.T) {
	s := newTestService(t)
	mustUsageFixture(t, s)
	var projects UsageReport
	if err := json.Unmarshal(s.get("/api/usage?group=project").Body.Bytes(), &projects); err != nil || len(projects.Rows) == 0 {
		t.Fatalf("GET /api/usage?group=project = %+v, %v", projects.Rows, err)
	}
	rootOf := workspaceRoots(t, s)
	for id, root := range rootOf {
		doc := mustDocument(t, s, "/session?id="+url.QueryEscape(id))
		href := doc.Find(`[data-testid="summary-workspace-usage"]`).AttrOr("href", "")
		want := "/usage?" + url.Values{"project": {root}}.Encode()
		if href != want {
			t.Fatalf("session %s links its workspace's usage at %q; want %q", id, href, want)
		}
		page := mustDocument(t, s, href)
		field := page.Find(`[data-testid="usage-project"]`).AttrOr("value", "")
		recorded := page.Find(`[data-testid="usage-recorded"]`).AttrOr("href", "")
		if field != root || !strings.Contains(recorded, url.Values{"project": {root}}.Encode()) {
			t.Errorf("%s: project field %q, recorded period %q; want the session's workspace %s in both", href, field, recorded, root)
		}
		// That period's total is the project's row of the report by project.
		total := mustDocument(t, s, recorded).Find(`[data-testid="usage-total-input"]`).Text()
		i := slices.IndexFunc(projects.Rows, func(r store.UsageRow) bool { return r.Key == root })
		if i < 0 || total != views.Thousands(projects.Rows[i].Tokens.Input) {
			t.Errorf("%s: input %s; want the project's row of the report by project, %+v", recorded, total, projects.Rows)
		}
		if rec := s.get("/api/sessions/" + id + "/export"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), root) || strings.Contains(rec.Body.String(), "/usage?") {
			t.Errorf("export of %s = %d; want its workspace shown, linking to no usage page", id, rec.Code)
		}
	}
}

// workspaceRoots are the stored sessions' workspace roots by id, as the
// list gives them.
func workspaceRoots(t *testing.T, s *testService) map[string]string {
	t.Helper()
	var list struct {
		Sessions []struct {
			ID        string
			Workspace struct{ Root string }
		}
	}
	if err := json.Unmarshal(s.get("/api/sessions").Body.Bytes(), &list); err != nil || len(list.Sessions) == 0 {
		t.Fatalf("GET /api/sessions: %d sessions, %v", len(list.Sessions), err)
	}
	roots := map[string]string{}
	for _, se := range list.Sessions {
		roots[se.ID] = se.Workspace.Root
	}
	return roots
}
