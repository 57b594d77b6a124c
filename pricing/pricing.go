// Package pricing estimates what tokens cost from a public price table
// embedded in the binary (prices.json, made from the MIT-licensed
// @pydantic/genai-prices npm package by extract.mjs; `just prices`
// refreshes it). An estimate is never a reported cost.
package pricing

import (
	_ "embed"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed prices.json
var pricesJSON []byte

// Tokens are the tokens of one API response. CacheCreation1h is the part
// of CacheCreation written to the cache for an hour rather than five
// minutes (Claude's ephemeral_1h_input_tokens), which costs more.
type Tokens struct {
	Input           int64 `json:"input"`
	Output          int64 `json:"output"`
	CacheRead       int64 `json:"cache_read"`
	CacheCreation   int64 `json:"cache_creation"`
	CacheCreation1h int64 `json:"cache_creation_1h,omitempty"`
}

// Add adds o's counts to t.
func (t *Tokens) Add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheCreation += o.CacheCreation
	t.CacheCreation1h += o.CacheCreation1h
}

// prompt is the request's prompt size, which a long-context price goes by.
func (t Tokens) prompt() int64 { return t.Input + t.CacheRead + t.CacheCreation }

// Total is every token counted once.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheRead + t.CacheCreation }

// Table is a price table: where it comes from, its date, and its models in
// the order they are matched (the agents' own providers first).
type Table struct {
	Source string  `json:"source"`
	AsOf   string  `json:"as_of"`
	Models []model `json:"models"`

	startsOnce sync.Once
	starts     []int64
}

type model struct {
	Provider string  `json:"provider"`
	ID       string  `json:"id"`
	Match    match   `json:"match"`
	Prices   []price `json:"prices"`
}

// match is genai-prices' rule for the model names a price applies to.
type match struct {
	StartsWith string  `json:"starts_with"`
	EndsWith   string  `json:"ends_with"`
	Contains   string  `json:"contains"`
	Equals     string  `json:"equals"`
	Regex      string  `json:"regex"`
	Or         []match `json:"or"`
	And        []match `json:"and"`
}

// price holds US dollars per million tokens, from the date Since on
// ("" for always).
type price struct {
	Since      string `json:"since"`
	Input      rate   `json:"input"`
	Output     rate   `json:"output"`
	CacheRead  rate   `json:"cache_read"`
	CacheWrite rate   `json:"cache_write"`
}

// rate is a price per million tokens, with the long-context tiers: from
// Start prompt tokens on, the whole request costs the tier's price.
type rate struct {
	Base  float64
	Tiers []struct {
		Start int64   `json:"start"`
		Price float64 `json:"price"`
	}
}

func (r *rate) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var v struct {
			Base  float64 `json:"base"`
			Tiers []struct {
				Start int64   `json:"start"`
				Price float64 `json:"price"`
			} `json:"tiers"`
		}
		err := json.Unmarshal(b, &v)
		r.Base, r.Tiers = v.Base, v.Tiers
		return err
	}
	return json.Unmarshal(b, &r.Base)
}

func (r rate) at(prompt int64) float64 {
	p := r.Base
	for _, t := range r.Tiers {
		if prompt >= t.Start {
			p = t.Price
		}
	}
	return p
}

var (
	defaultOnce  sync.Once
	defaultTable *Table
	regexps      sync.Map // pattern -> *regexp.Regexp (nil when Go cannot compile it)
)

// Default is the embedded table.
func Default() *Table {
	defaultOnce.Do(func() {
		defaultTable = &Table{}
		if err := json.Unmarshal(pricesJSON, defaultTable); err != nil {
			panic("pricing: embedded prices.json: " + err.Error())
		}
	})
	return defaultTable
}

// Estimate is the cost in US dollars of one API response of the model at
// time at, and false when the table has no price for the model.
func (t *Table) Estimate(modelName string, at time.Time, tok Tokens) (float64, bool) {
	return t.estimate(modelName, at, tok, tok.prompt())
}

// TierStarts are the prompt sizes where some model's long-context price
// starts, ascending.
func (t *Table) TierStarts() []int64 {
	t.startsOnce.Do(func() {
		for _, m := range t.Models {
			for _, p := range m.Prices {
				for _, r := range []rate{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
					for _, tr := range r.Tiers {
						if !slices.Contains(t.starts, tr.Start) {
							t.starts = append(t.starts, tr.Start)
						}
					}
				}
			}
		}
		slices.Sort(t.starts)
	})
	return t.starts
}

func (t *Table) estimate(modelName string, at time.Time, tok Tokens, prompt int64) (float64, bool) {
	p, ok := t.find(modelName, at)
	if !ok {
		return 0, false
	}
	return p.cost(tok, prompt), true
}

// HourWriteRule says how an estimate prices what the table has no price
// for (hourWriteTimesInput), for the notes that name the table.
const HourWriteRule = "cache writes of an hour at twice the input price"

// hourWriteTimesInput is what a token written to the cache for an hour
// costs, as a multiple of the input price: Anthropic's rule (its prompt
// caching prices: five minutes 1.25 times the input, an hour 2 times). The
// price table has the five-minute price only.
const hourWriteTimesInput = 2

// cost is what the tokens of one request cost at this price, in dollars.
func (p *price) cost(tok Tokens, prompt int64) float64 {
	hour := min(max(tok.CacheCreation1h, 0), tok.CacheCreation)
	usd := float64(tok.Input)*p.Input.at(prompt) + float64(tok.Output)*p.Output.at(prompt) +
		float64(tok.CacheRead)*p.CacheRead.at(prompt) + float64(tok.CacheCreation-hour)*p.CacheWrite.at(prompt) +
		float64(hour)*hourWriteTimesInput*p.Input.at(prompt)
	return usd / 1e6
}

// Estimator estimates as its table does, remembering the price it found
// for each model and day: for many estimates in a row, such as a session's
// usage records (25,788 in one real session, of a few models on a few
// days), where finding the price each time was a sixth of its page's time.
type Estimator struct {
	t     *Table
	found map[estimatorKey]*price // nil: no price
}

type estimatorKey struct {
	name             string
	year, month, day int
}

// Estimator returns an Estimator of the table.
func (t *Table) Estimator() *Estimator {
	return &Estimator{t: t, found: map[estimatorKey]*price{}}
}

// Estimate is Table.Estimate.
func (e *Estimator) Estimate(modelName string, at time.Time, tok Tokens) (float64, bool) {
	return e.EstimateSum(modelName, at, tok, tok.prompt())
}

// EstimateSum is Estimate for the sum of several requests of one model
// whose prompts (input and cache tokens) all fall in the same range between
// two of TierStarts: prompt is the range's start.
func (e *Estimator) EstimateSum(modelName string, at time.Time, sum Tokens, prompt int64) (float64, bool) {
	k := estimatorKey{name: modelName}
	y, m, d := at.UTC().Date()
	k.year, k.month, k.day = y, int(m), d
	p, seen := e.found[k]
	if !seen {
		if found, ok := e.t.find(modelName, at); ok {
			p = &found
		}
		e.found[k] = p
	}
	if p == nil {
		return 0, false
	}
	return p.cost(sum, prompt), true
}

// find is the price of the first model whose rule matches the name, the
// latest one in force at the time.
func (t *Table) find(name string, at time.Time) (price, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return price{}, false
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 { // "anthropic/claude-…", "openai/gpt-…"
		name = name[i+1:]
	}
	day := at.UTC().Format(time.DateOnly)
	for _, m := range t.Models {
		if !m.Match.matches(name) {
			continue
		}
		var found *price
		for i := range m.Prices {
			if p := &m.Prices[i]; p.Since == "" || p.Since <= day {
				if found == nil || p.Since >= found.Since {
					found = p
				}
			}
		}
		if found == nil {
			return price{}, false
		}
		return *found, true
	}
	return price{}, false
}

func (m *match) matches(name string) bool {
	switch {
	case m.Or != nil:
		for i := range m.Or {
			if m.Or[i].matches(name) {
				return true
			}
		}
		return false
	case m.And != nil:
		for i := range m.And {
			if !m.And[i].matches(name) {
				return false
			}
		}
		return true
	case m.Equals != "":
		return name == m.Equals
	case m.StartsWith != "":
		return strings.HasPrefix(name, m.StartsWith)
	case m.EndsWith != "":
		return strings.HasSuffix(name, m.EndsWith)
	case m.Contains != "":
		return strings.Contains(name, m.Contains)
	case m.Regex != "":
		re, ok := regexps.Load(m.Regex)
		if !ok {
			c, err := regexp.Compile(m.Regex)
			if err != nil {
				c = nil
			}
			re, _ = regexps.LoadOrStore(m.Regex, c)
		}
		c := re.(*regexp.Regexp)
		return c != nil && c.MatchString(name)
	}
	return false
}
