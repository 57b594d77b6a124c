package aider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// tokensRE is the line Aider writes after each reply: "Tokens: 5,244 sent,
// 604 received. Cost: $0.02 request, $0.02 session." (0.47; later versions
// say "message", abbreviate counts as 2.3k or 12k, and add "N cache write"
// and "N cache hit" items). The cost part is missing for a model Aider has
// no price for.
var tokensRE = regexp.MustCompile(`^Tokens: (.+?)\.(?: Cost: \$([0-9][0-9,]*(?:\.[0-9]+)?) (?:request|message), \$[0-9][0-9,]*(?:\.[0-9]+)? session\.)?\s*$`)

func isTokens(l string) bool { return strings.HasPrefix(l, "Tokens: ") && tokensRE.MatchString(l) }

// usage records one reply's Tokens line (n is its run line) as the usage
// of one API response, with the cost Aider reported for it and the model
// of the banner. The session's running cost ("$y session") is not kept:
// it is the sum of the requests' costs as Aider rounded them.
func (p *parser) usage(n int, l string) {
	m := tokensRE.FindStringSubmatch(l)
	if m == nil {
		return
	}
	var t pricing.Tokens
	for item := range strings.SplitSeq(m[1], ", ") {
		num, label, _ := strings.Cut(item, " ")
		v, ok := tokenCount(num)
		if !ok {
			continue
		}
		switch label {
		case "sent":
			t.Input = v
		case "received":
			t.Output = v
		case "cache write":
			t.CacheCreation = v
		case "cache hit":
			t.CacheRead = v
		}
	}
	r := adapters.Reported{ID: fmt.Sprintf("tokens-%d", n), Model: p.model, Tokens: t}
	if m[2] != "" {
		if c, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64); err == nil {
			r.CostUSD = &c
		}
	}
	p.b.AddUsage(r)
}

// tokenCount reads a count as Aider writes it: 5,244 (0.47), or rounded
// by later versions to 2.3k (below 10,000) and 12k (above). A rounded count
// is recorded as written (2.3k as 2,300): the exact count is in no file.
func tokenCount(s string) (int64, bool) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		s, mult = strings.TrimSuffix(s, "k"), 1e3
	case strings.HasSuffix(s, "M"):
		s, mult = strings.TrimSuffix(s, "M"), 1e6
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil || f < 0 || f > 1e15 {
		return 0, false
	}
	return int64(f*mult + 0.5), true
}
