package redact

import (
	"strconv"
	"strings"

	"github.com/agentreview/service/internal/term"
)

// Finding is one distinct secret value a Masker replaced.
type Finding struct {
	Rule        string
	Confidence  Confidence
	Placeholder string   // e.g. "[aws-access-key-1]"
	Preview     string   // only the ends of the value, e.g. "ghp_…x9Qz"
	Where       []string // location labels passed to Mask, deduplicated, in order
	// Kept is a candidate value the reviewer chose to leave unmasked
	// (Masker.Keep); a definite value is never kept.
	Kept bool
}

// Masker replaces secrets with placeholders for one report, giving the same
// secret the same placeholder in every call, and shows home folders as ~.
// A Masker is not safe for concurrent use.
type Masker struct {
	homes    []string // prefixes shown as ~: the given home, then the generic ones
	exact    int      // how many of homes are given folders rather than parents
	findings []*finding
	byValue  map[string]*finding
	perRule  map[string]int
	keep     map[string]bool // placeholders of candidate values left as they are
}

type finding struct {
	Finding
	seen map[string]bool
}

// maxRounds bounds the re-scans Mask does after masking; real text is clean
// after the first, and adversarial text that is not clean after this many is
// withheld whole.
const maxRounds = 8

// withheld replaces a text that could not be masked safely.
const withheld = "[text withheld: it could not be masked safely]"

// homeParents hold one folder per user on Linux, macOS and Windows (the last
// one as written inside a JSON string).
var homeParents = []string{"/home/", "/Users/", `\Users\`, `\\Users\\`}

// NewMasker returns a Masker for one report. home is the user's home folder
// (for example /home/alice), shown as ~ along with any /home/<name> and
// /Users/<name> path; it may be "".
func NewMasker(home string) *Masker {
	m := &Masker{byValue: map[string]*finding{}, perRule: map[string]int{}}
	if home = strings.TrimRight(home, `/\`); len(home) > 1 {
		m.homes = append(m.homes, home)
		m.exact = 1
	}
	m.homes = append(m.homes, homeParents...)
	return m
}

// Keep leaves the values whose placeholders are listed unmasked, when only
// a candidate rule matched them: the reviewer has seen them and judged
// them safe to share. A value any definite rule matches is masked however
// it is listed. Placeholders are numbered by first appearance, so a list
// made from one walk's findings names the same values in the next walk of
// the same texts.
func (m *Masker) Keep(placeholders []string) {
	m.keep = map[string]bool{}
	for _, p := range placeholders {
		m.keep[p] = true
	}
}

// Mask returns text with every secret replaced by its placeholder and home
// paths shown as ~. where labels the location (e.g. "step 12 stdout") in the
// findings. A secret split across two calls is not seen.
func (m *Masker) Mask(text, where string) string {
	// Home paths are shortened first so that the scan below sees the final
	// text; homePath never cuts into a base64 body, so secrets stay whole.
	out, _ := m.shortenHome(text)
	ms := Scan(out)
	if len(ms) == 0 {
		return out
	}
	// A placeholder changes the bytes next to it, which can complete a match
	// that was not there before (a token that followed another one directly),
	// so scan again until clean.
	for range maxRounds {
		out = m.replace(out, ms, where)
		if ms = m.unkept(out, Scan(out)); len(ms) == 0 {
			return out
		}
	}
	if _, ok := FirstDefinite(out); ok {
		return withheld
	}
	return out
}

// Findings lists every distinct secret masked so far, in order of first
// appearance. Values are never included, only their ends in Preview.
func (m *Masker) Findings() []Finding {
	list := make([]Finding, len(m.findings))
	for i, f := range m.findings {
		list[i] = f.Finding
		list[i].Where = append([]string(nil), f.Where...)
	}
	return list
}

// Counts returns the number of distinct secrets per rule, for the report's
// manifest.
func (m *Masker) Counts() map[string]int {
	counts := make(map[string]int, len(m.perRule))
	for _, f := range m.findings {
		counts[f.Rule]++
	}
	return counts
}

// unkept drops the matches of kept values in text: they were recorded
// when first replaced, and stay as they are.
func (m *Masker) unkept(text string, ms []Match) []Match {
	if len(m.keep) == 0 {
		return ms
	}
	out := ms[:0]
	for _, mt := range ms {
		if f := m.byValue[valueOf(text, mt)]; f == nil || !f.Kept || mt.Confidence == Definite {
			out = append(out, mt)
		}
	}
	return out
}

// replace writes text with each match swapped for its placeholder, or
// left as it is when kept.
func (m *Masker) replace(text string, ms []Match, where string) string {
	if len(ms) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, mt := range ms {
		b.WriteString(text[last:mt.Start])
		if p, kept := m.placeholder(mt, valueOf(text, mt), where); kept {
			b.WriteString(text[mt.Start:mt.End])
		} else {
			b.WriteString(p)
		}
		last = mt.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// valueOf is the secret mt found in text as a terminal shows it, without
// a colour code that split it (Scan): the same secret is one value
// however it was printed.
func valueOf(text string, mt Match) string {
	v, _ := term.Shown(text[mt.Start:mt.End])
	return v
}

// placeholder returns the placeholder for value, recording where it was seen,
// and whether the value is kept unmasked. A value keeps the rule and
// placeholder of its first sighting, but becomes definite if any rule is
// sure of it, and then is never kept.
func (m *Masker) placeholder(mt Match, value, where string) (string, bool) {
	f := m.byValue[value]
	if f == nil {
		m.perRule[mt.Rule]++
		f = &finding{Finding: Finding{
			Rule:        mt.Rule,
			Confidence:  mt.Confidence,
			Placeholder: "[" + mt.Rule + "-" + strconv.Itoa(m.perRule[mt.Rule]) + "]",
			Preview:     preview(value),
		}, seen: map[string]bool{}}
		m.byValue[value] = f
		m.findings = append(m.findings, f)
	}
	if mt.Confidence == Definite {
		f.Confidence = Definite
	}
	f.Kept = f.Confidence == Candidate && m.keep[f.Placeholder]
	if !f.seen[where] {
		f.seen[where] = true
		f.Where = append(f.Where, where)
	}
	return f.Placeholder, f.Kept
}

// preview keeps the first and last 4 runes (2 for values of 12 runes or
// fewer), and never more than a third of the value in total.
func preview(value string) string {
	r := []rune(value)
	keep := 2
	if len(r) > 12 {
		keep = 4
	}
	keep = min(keep, len(r)/6)
	if keep == 0 {
		return "…"
	}
	return string(r[:keep]) + "…" + string(r[len(r)-keep:])
}

// shortenHome rewrites home folders to ~ and reports whether it changed s.
func (m *Masker) shortenHome(s string) (string, bool) {
	next := make([]homeSpan, len(m.homes)) // next home path per prefix; start < 0 when none is left
	for i := range next {
		next[i] = m.homePath(s, 0, i)
	}
	var b strings.Builder
	last := 0
	for {
		best := -1
		for i, p := range next {
			if p.start >= 0 && (best < 0 || p.start < next[best].start) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		p := next[best]
		if last == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:p.start])
		b.WriteByte('~')
		last = p.end
		for i := range next {
			if next[i].start >= 0 && next[i].start < last {
				next[i] = m.homePath(s, last, i)
			}
		}
	}
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// homePath finds the next home folder at or after from using prefix i: the
// given home itself, or a parent such as /home/ followed by a user name.
func (m *Masker) homePath(s string, from, i int) homeSpan {
	prefix := m.homes[i]
	first := from // a drive letter before a match must not reach back past this
	for {
		j := strings.Index(s[from:], prefix)
		if j < 0 {
			return homeSpan{-1, -1}
		}
		start, end := from+j, from+j+len(prefix)
		from = start + 1
		if i >= m.exact { // a parent: take the user name after it
			for end < len(s) && isNameByte(s[end]) {
				end++
			}
			name := s[start+len(prefix) : end]
			if name == "" || name == "Shared" || name == "linuxbrew" {
				continue
			}
			if strings.Contains(prefix, "Users") && start-2 >= first && s[start-1] == ':' && isLetter(s[start-2]) &&
				homeMayFollow(s, start-2) {
				start -= 2 // a Windows drive, C:\Users\name or C:/Users/name
			} else if !homeMayFollow(s, start) {
				continue
			}
		} else if end < len(s) && isNameByte(s[end]) || !homeMayFollow(s, start) {
			continue // /home/alice does not cover /home/alice2
		}
		return homeSpan{start, end}
	}
}

// homeMayFollow reports whether a home path may start at i: not inside a
// longer path (/mnt/home/bob) and never inside base64, where "/home/" can
// only follow a letter, digit, + or /, so a key body is never altered.
func homeMayFollow(s string, i int) bool {
	if i == 0 {
		return true
	}
	switch c := s[i-1]; {
	case isNameByte(c), c == '~', c == '+':
		return false
	case c == '/':
		return strings.HasSuffix(s[:i], "://") // file:///home/alice
	}
	return true
}

// homeSpan is where a home folder path starts and ends in a text.
type homeSpan struct{ start, end int }

func isNameByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '.' || c == '_' || c == '-'
}
