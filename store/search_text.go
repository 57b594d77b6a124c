package store

//go:generate go run ./internal/tokengen -o search_text_tables.go

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"zombiezen.com/go/sqlite"

	terminal "github.com/agentreview/service/internal/term"
)

// What search indexes, in Go: the text of a step or a session row (the
// SQL functions the views search_step_docs and search_session_docs call,
// registerSearchText), split into words by the rules of SQLite FTS5's
// unicode61 tokenizer with remove_diacritics 2 (tables in
// search_text_tables.go, read off SQLite by store/internal/tokengen), but
// that a character of a script written without spaces is a word of its
// own (isSplitRune; FTSText gives FTS5 the text so), the phrases of a
// parsed query matched in those words, and the snippet FTS5's snippet()
// makes of them. A backend without FTS5 (store/postgres) indexes and
// answers with these, so it finds the same steps and shows the same
// snippets.

// SearchTextVersion is the version of the rule that makes what search
// indexes (StepDoc.SearchText, SessionSearchText) and splits it into
// words: 2, the text made in Go; 3, a string value that is JSON itself
// read for its strings (appendNested); 4, a character of a script written
// without spaces a word of its own (isSplitRune); 5, a step's working
// folder at the end of its text (StepDoc.SearchText); 6, the text as a
// terminal shows it, without its control sequences (terminal.Shown), so that
// the FAIL of ESC [ 3 1 m FAIL is a word, not "31mfail". Raising it makes
// SQLite's index file again (its indexVersion) and rewrites PostgreSQL's
// words of every row whose words may have changed
// (postgres.rewriteSearchDocs).
const SearchTextVersion = 6

// StepDoc holds the stored columns of a step that search indexes; a nil
// field is a NULL column. Payload, Error and Flags are JSON as stored.
type StepDoc struct {
	Payload                                               string
	Role, Text, Stdout, Stderr, OldString, NewString, Err *string
	Flags                                                 string
}

// Doc is the StepDoc of st, whose JSON columns r are (SplitStep): a
// writer that has split a step indexes it without splitting it again.
func (r StepColumns) Doc(st *Step) StepDoc {
	p := &st.Payload
	return StepDoc{Payload: r.Payload, Role: &p.Role, Text: p.Text, Stdout: p.Stdout, Stderr: p.Stderr,
		OldString: p.OldString, NewString: p.NewString, Err: &r.ErrorJSON, Flags: r.Flags}
}

// SearchText is what a step row indexes, as search_step_docs: every
// string value of the payload (or the payload as written when it is not
// JSON SQLite reads), the role, the large text columns and the strings of
// the error and the flags, joined by new lines, leaving out what is NULL;
// the payload's working folder (its top-level cwd) comes last; without
// the control sequences of command output (terminal.Shown). In its
// place, between a command's line and its output, the folder took most
// of a snippet's 16 words (/Users/me/dev/project/sub is five), so a hit
// of a command showed its line, its folder and hardly any output.
func (d StepDoc) SearchText() string {
	m := getTextMaker()
	defer m.put()
	m.folder, m.holdFolder = m.folder[:0], true
	b := m.appendJSONPart(m.buf[:0], d.Payload, true)
	m.holdFolder = false
	for _, p := range []*string{d.Role, d.Text, d.Stdout, d.Stderr, d.OldString, d.NewString} {
		if p != nil {
			b = appendPart(b, *p)
		}
	}
	if d.Err != nil {
		b = m.appendJSONPart(b, *d.Err, false)
	}
	b = m.appendJSONPart(b, d.Flags, false)
	b = appendPart(b, m.folder)
	m.buf = b
	text, _ := terminal.Shown(string(b))
	return text
}

// SessionSearchText is what a session row indexes, as
// search_session_docs: its agent kind, workspace root and repository.
func SessionSearchText(agentKind, workspaceRoot string, workspaceRepo *string) string {
	b := appendPart(appendPart(nil, agentKind), workspaceRoot)
	if workspaceRepo != nil {
		b = appendPart(b, *workspaceRepo)
	}
	return string(b)
}

// appendPart is SQLite's concat_ws(char(10), ...), one value at a time:
// a value that is not empty goes after a new line, unless it is the first.
func appendPart[T string | []byte](b []byte, s T) []byte {
	if len(s) == 0 {
		return b
	}
	if len(b) > 0 {
		b = append(b, '\n')
	}
	return append(b, s...)
}

// textMaker holds what making a text allocates, kept from one text to
// the next (textMakers): a catch-up makes the text of every step it
// indexes, and with a new decoder and new strings for each, the garbage
// of the 96 MB import's index was half its whole and its collector ran
// 36% more often (docs/performance.md, "The import within its bound").
type textMaker struct {
	dec   jsontext.Decoder
	rd    strings.Reader
	buf   []byte
	inner *textMaker // reads a string value that is JSON itself (appendNested)
	// With holdFolder, the strings of the top-level field cwd go to folder,
	// not where the field stands (SearchText puts them last).
	holdFolder bool
	folder     []byte
}

var textMakers = sync.Pool{New: func() any { return new(textMaker) }}

// maxKeptText is the largest text whose buffers go back to textMakers: a
// 32 MB output is not kept for the next small step.
const maxKeptText = 1 << 20

func getTextMaker() *textMaker { return textMakers.Get().(*textMaker) }

func (m *textMaker) put() {
	if cap(m.buf) <= maxKeptText && cap(m.folder) <= maxKeptText && m.rd.Size() <= maxKeptText {
		m.rd.Reset("")
		textMakers.Put(m)
	}
}

// ToolNameOf is the tool_name of a payload as stored (appendPayloadJSON),
// read only as far as it; empty when it has none or is not an object.
func ToolNameOf(payload string) string {
	m := getTextMaker()
	defer m.put()
	m.rd.Reset(payload)
	m.dec.Reset(&m.rd)
	if t, err := m.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return ""
	}
	for m.dec.PeekKind() == '"' {
		name, err := m.dec.ReadToken()
		if err != nil {
			return ""
		}
		if name.String() == "tool_name" {
			v, err := m.dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return ""
			}
			return v.String()
		}
		if m.dec.SkipValue() != nil {
			return ""
		}
	}
	return ""
}

// appendJSONPart appends the string values of JSON text j as one part
// (appendPart), or with raw the text itself when it is not JSON SQLite
// reads (appendJSONStrings).
func (m *textMaker) appendJSONPart(b []byte, j string, raw bool) []byte {
	mark := len(b)
	if len(b) > 0 {
		b = append(b, '\n')
	}
	start := len(b)
	b, _ = m.appendJSONStrings(b, j, raw)
	if len(b) == start {
		return b[:mark]
	}
	return b
}

// maxJSONDepth is the deepest nesting SQLite's JSON functions read
// (JSON_MAX_DEPTH); deeper JSON is not valid to them.
const maxJSONDepth = 1000

// appendJSONStrings appends SQLite's (SELECT group_concat(value, ' ')
// FROM json_tree(j) WHERE type = 'text'), which search_step_docs used
// before it called Go (TestJSONStringsMatchSQLite keeps the two the
// same): the string values of a JSON text (not its keys) in document
// order, joined by spaces; found is false (NULL) when there are none. JSON
// SQLite would not read (not one JSON value, or deeper than maxJSONDepth)
// gives NULL, or with raw the text as it is (the payload's CASE in that
// view). One rule of its own: a string value that is a JSON object or
// array itself gives its string values in turn (appendNested).
func (m *textMaker) appendJSONStrings(b []byte, j string, raw bool) (_ []byte, found bool) {
	return m.appendStrings(b, j, raw, 0)
}

// maxNestedJSON is how many times a JSON text inside a string value is
// read for its strings (appendNested); deeper, the string is kept as it is.
const maxNestedJSON = 4

// appendNested replaces the string value at b[at:] by the string values of
// the JSON object or array it holds, if it holds one: a tool's result that
// is JSON text in a string (MCP tools' content, Copilot CLI's web search)
// would otherwise be indexed with its escapes, and a word after a \n
// escape would be a word of its own with the n ("nREADME"), found neither
// by README nor shown cleanly in a snippet. Nothing else changes: a string
// that is not such JSON, or JSON without strings ([1, 2]), stays as it is.
func (m *textMaker) appendNested(b []byte, at, level int) []byte {
	v := b[at:]
	i := 0
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	if level >= maxNestedJSON || i == len(v) || (v[i] != '{' && v[i] != '[') {
		return b
	}
	if m.inner == nil {
		m.inner = new(textMaker)
	}
	j := string(v)
	out, found := m.inner.appendStrings(b[:at], j, false, level+1)
	m.inner.rd.Reset("")
	if !found {
		return append(b[:at], j...)
	}
	return out
}

func (m *textMaker) appendStrings(b []byte, j string, raw bool, level int) (_ []byte, found bool) {
	start := len(b)
	notJSON := func() ([]byte, bool) {
		if m.holdFolder {
			m.folder = m.folder[:0] // the text as written holds it
		}
		if raw {
			return append(b[:start], j...), true
		}
		return b[:start], false
	}
	m.rd.Reset(j)
	dec := &m.dec
	dec.Reset(&m.rd, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	strs, values := 0, 0
	for {
		var err error
		isString, isName := dec.PeekKind() == '"', false
		if isString {
			if kind, n := dec.StackIndex(dec.StackDepth()); kind == '{' && n%2 == 0 {
				isString, isName = false, true // an object's name
			}
		}
		if isString {
			var v jsontext.Value
			if v, err = dec.ReadValue(); err == nil {
				if strs++; strs > 1 {
					b = append(b, ' ')
				}
				// As Token.String gives it: invalid UTF-8 as U+FFFD
				// where the string has an escape or is not valid UTF-8.
				at := len(b)
				b, _ = jsontext.AppendUnquote(b, v)
				b = m.appendNested(b, at, level)
			}
		} else {
			var tok jsontext.Token
			tok, err = dec.ReadToken()
			if isName && err == nil && m.holdFolder && level == 0 && dec.StackDepth() == 1 && tok.String() == "cwd" && dec.PeekKind() == '"' {
				var v jsontext.Value
				if v, err = dec.ReadValue(); err == nil {
					if len(m.folder) > 0 {
						m.folder = append(m.folder, ' ')
					}
					at := len(m.folder)
					m.folder, _ = jsontext.AppendUnquote(m.folder, v)
					m.folder = m.appendNested(m.folder, at, level)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		depth := dec.StackDepth()
		if depth == 0 {
			values++ // a value at the top ends here
		}
		if err != nil || depth > maxJSONDepth || values > 1 {
			return notJSON()
		}
	}
	if values == 0 {
		return notJSON() // nothing but white space
	}
	return b, strs > 0
}

// registerSearchText makes what search indexes of a row SQL functions of
// the connection, for the views search_step_docs and search_session_docs
// (migration 014): search_step_text(payload, role, text, stdout, stderr,
// old_string, new_string, error, flags) is StepDoc.SearchText and
// search_session_text(agent_kind, workspace_root, workspace_repo) is
// SessionSearchText, so the rule is written once, here, for both
// backends. The index is contentless: a row leaves it only when FTS5 is
// given the text it was indexed with, so any change to what these return
// must raise SearchTextVersion, which rebuilds every index.
func registerSearchText(conn *sqlite.Conn) error {
	text := func(v sqlite.Value) *string {
		if v.Type() == sqlite.TypeNull {
			return nil
		}
		s := v.Text()
		return &s
	}
	doc := func(a []sqlite.Value) StepDoc {
		return StepDoc{Payload: a[0].Text(), Role: text(a[1]), Text: text(a[2]), Stdout: text(a[3]), Stderr: text(a[4]),
			OldString: text(a[5]), NewString: text(a[6]), Err: text(a[7]), Flags: a[8].Text()}
	}
	if err := conn.CreateFunction("search_step_text", &sqlite.FunctionImpl{
		NArgs: 9, Deterministic: true, AllowIndirect: true,
		Scalar: func(_ sqlite.Context, a []sqlite.Value) (sqlite.Value, error) {
			return sqlite.TextValue(FTSText(doc(a).SearchText())), nil
		},
	}); err != nil {
		return err
	}
	return conn.CreateFunction("search_session_text", &sqlite.FunctionImpl{
		NArgs: 3, Deterministic: true, AllowIndirect: true,
		Scalar: func(_ sqlite.Context, a []sqlite.Value) (sqlite.Value, error) {
			return sqlite.TextValue(FTSText(SessionSearchText(a[0].Text(), a[1].Text(), text(a[2])))), nil
		},
	})
}

// SearchToken is a word of an indexed text: its indexed form (lower case,
// without diacritics) and the bytes [Start, End) it was made of.
type SearchToken struct {
	Term       string
	Start, End int
}

// SearchTokens splits a text into words as FTS5's unicode61 tokenizer
// (remove_diacritics 2) does with FTSText's text: runs of letters and
// digits (by SQLite's Unicode tables, not Go's), so handlers/auth.go is
// handlers, auth, go, and each character of a script written without
// spaces alone, so 修改 is 修, 改.
func SearchTokens(text string) []SearchToken {
	// About one word in six bytes of text: grown by append, the slices
	// were a third of the time of a page's snippets (BenchmarkSearchSnippet).
	return AppendSearchTokens(make([]SearchToken, 0, len(text)/6+1), text)
}

// AppendSearchTokens appends the words of text (SearchTokens) to tokens,
// for a caller that reuses one slice for many texts.
func AppendSearchTokens(tokens []SearchToken, text string) []SearchToken {
	// A word whose runes index as they are written (most of them) is a
	// slice of the text. The others are folded into one buffer, made one
	// string at the end: folds[i] is where token folds[i].k's term is in it.
	var buf []byte
	type fold struct{ k, from, to int }
	var folds []fold
	eachSearchToken(text, 0, func(start, end int, folded []byte) bool {
		if folded == nil {
			tokens = append(tokens, SearchToken{text[start:end], start, end})
		} else {
			folds = append(folds, fold{len(tokens), len(buf), len(buf) + len(folded)})
			buf = append(buf, folded...)
			tokens = append(tokens, SearchToken{"", start, end})
		}
		return true
	})
	folded := string(buf)
	for _, f := range folds {
		tokens[f.k].Term = folded[f.from:f.to]
	}
	return tokens
}

// eachSearchToken calls yield with each word of text from byte from on (a
// word's start, or 0), as SearchTokens splits it: its bytes [start, end),
// and folded, its indexed form, when that is not the bytes as written (nil
// otherwise; valid until the next call). It stops when yield returns false.
func eachSearchToken(text string, from int, yield func(start, end int, folded []byte) bool) {
	var buf []byte              // the word's folded form, once it needs one
	start, folding := -1, false // the word's first byte, and whether buf holds it
	for i := from; i < len(text); {
		r, size := rune(text[i]), 1
		if r < utf8.RuneSelf {
			if c := asciiClass[r]; c == asciiWord && start >= 0 && !folding {
				i++ // the common case: a word goes on as written
				continue
			} else if c == asciiSeparator {
				r = -1
			}
		} else if r, size = utf8.DecodeRuneInString(text[i:]); r == utf8.RuneError && size == 1 {
			r = -1 // an invalid byte: a separator
		}
		if r < 0 || !isTokenRune(r) {
			if start >= 0 {
				// A word of dropped diacritics alone is no word.
				if !folding && !yield(start, i, nil) || folding && len(buf) > 0 && !yield(start, i, buf) {
					return
				}
				start, folding = -1, false
			}
			i += size
			continue
		}
		if r >= minSplitRune && isSplitRune(r) {
			// A character of a script written without spaces is a word of
			// its own (FTSText gives it to FTS5 so), the word before it ends.
			if start >= 0 && (!folding && !yield(start, i, nil) || folding && len(buf) > 0 && !yield(start, i, buf)) {
				return
			}
			start, folding = -1, false
			if f := foldRune(r); f == r && !yield(i, i+size, nil) {
				return
			} else if f != r && f >= 0 && !yield(i, i+size, utf8.AppendRune(buf[:0], f)) {
				return
			}
			i += size
			continue
		}
		if start < 0 {
			start = i
		}
		f := foldRune(r)
		if !folding {
			if f == r {
				i += size
				continue
			}
			folding, buf = true, append(buf[:0], text[start:i]...)
		}
		if f >= 0 {
			buf = utf8.AppendRune(buf, f)
		}
		i += size
	}
	if start >= 0 {
		if !folding {
			yield(start, len(text), nil)
		} else if len(buf) > 0 {
			yield(start, len(text), buf)
		}
	}
}

// What unicode61 makes of an ASCII byte (asciiClass): a separator, a
// letter or digit it indexes as written, or an upper-case letter it folds.
const (
	asciiSeparator = iota
	asciiWord
	asciiUpper
)

var asciiClass = func() (c [utf8.RuneSelf]byte) {
	for r := range c {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			c[r] = asciiWord
		case 'A' <= r && r <= 'Z':
			c[r] = asciiUpper
		}
	}
	return c
}()

// SearchTerms is SearchTokens' terms alone: how a query's phrase is split.
func SearchTerms(text string) []string {
	tokens := SearchTokens(text)
	terms := make([]string, len(tokens))
	for i, t := range tokens {
		terms[i] = t.Term
	}
	return terms
}

// isTokenRune tells whether unicode61 keeps r in a token.
func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	i := sort.Search(len(tokenRanges), func(i int) bool { return tokenRanges[i][1] >= r })
	return i < len(tokenRanges) && tokenRanges[i][0] <= r
}

// Characters of the scripts written without spaces between words (Han,
// Hiragana, Katakana, Bopomofo, Hangul): unicode61 makes a whole run of
// them one word, so 修改 was not found in 請不要修改任何代碼. Each is a
// word of its own instead (eachSearchToken), and a query's run of them a
// phrase of its characters, found wherever it is written, as the CJK
// unigram search of other engines.
var splitRanges = [][2]rune{
	{0x2E80, 0x2FDF}, {0x3040, 0x30FF}, {0x3100, 0x312F}, {0x3131, 0x318F}, {0x31A0, 0x31BF}, {0x31F0, 0x31FF},
	{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA960, 0xA97F}, {0xAC00, 0xD7FF}, {0xF900, 0xFAFF}, {0xFF66, 0xFFDC},
	{0x1AFF0, 0x1B16F}, {0x20000, 0x323AF},
}

const minSplitRune = 0x2E80

// SplitRunesPattern is a regular expression, a bracket of literal
// ranges that Go and PostgreSQL both read, that matches a character that
// is a word of its own (isSplitRune): for a backend that looks for the
// texts version 4 splits differently.
func SplitRunesPattern() string {
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range splitRanges {
		fmt.Fprintf(&b, "%c-%c", r[0], r[1])
	}
	b.WriteByte(']')
	return b.String()
}

// isSplitRune tells whether r is a word of its own (splitRanges).
func isSplitRune(r rune) bool {
	i := sort.Search(len(splitRanges), func(i int) bool { return splitRanges[i][1] >= r })
	return i < len(splitRanges) && splitRanges[i][0] <= r
}

// wordJoiner (U+2060) is what FTSText puts between a character that is a
// word of its own and a letter or digit beside it: unicode61 splits words
// there, and it shows as nothing. Snippets leave it out.
const wordJoiner = "\u2060"

// FTSText is text as SQLite's index is given it: with a wordJoiner
// between each character that is a word of its own (isSplitRune) and a
// letter or digit beside it, so FTS5's unicode61 splits it into the words
// eachSearchToken does. Text without such characters is returned as it is.
func FTSText(text string) string {
	i := 0
	for ; i+8 <= len(text); i += 8 { // ASCII, eight bytes at a time
		if (text[i]|text[i+1]|text[i+2]|text[i+3]|text[i+4]|text[i+5]|text[i+6]|text[i+7])&0x80 != 0 {
			break
		}
	}
	var b []byte
	join := func(j int) { // a joiner before text[j]
		if b == nil {
			b = append(make([]byte, 0, len(text)+len(text)/2), text[:j]...)
		}
		b = append(b, wordJoiner...)
	}
	prev, prevSplit := rune(-1), false // the rune before j (-1: none, or an invalid byte)
	if i > 0 {
		prev = rune(text[i-1])
	}
	for j := i; j < len(text); {
		if text[j] < utf8.RuneSelf { // a run of ASCII: no character of it is split
			if prevSplit && isTokenRune(rune(text[j])) {
				join(j)
			}
			k := j + 1
			for k < len(text) && text[k] < utf8.RuneSelf {
				k++
			}
			if b != nil {
				b = append(b, text[j:k]...)
			}
			prev, prevSplit, j = rune(text[k-1]), false, k
			continue
		}
		r, size := utf8.DecodeRuneInString(text[j:])
		if size == 1 && r == utf8.RuneError {
			r = -1
		}
		split := r >= minSplitRune && isSplitRune(r) && isTokenRune(r)
		if split && prev >= 0 && isTokenRune(prev) || !split && prevSplit && r >= 0 && isTokenRune(r) {
			join(j)
		}
		if b != nil {
			b = append(b, text[j:j+size]...)
		}
		prev, prevSplit, j = r, split, j+size
	}
	if b == nil {
		return text
	}
	return string(b)
}

// foldRune is what unicode61 indexes for a token rune: -1 for a
// diacritic it drops.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	i := sort.Search(len(tokenFolds), func(i int) bool { return tokenFolds[i][0] >= r })
	if i < len(tokenFolds) && tokenFolds[i][0] == r {
		return tokenFolds[i][1]
	}
	return r
}

// phraseInstance is where a phrase of a query matches: the phrase's index
// among the query's words, the position of its first token, and the
// position of the last sentence start at or before it (sentenceStartsAt).
type phraseInstance struct{ phrase, pos, sentence int }

// phraseTerms splits each phrase into its terms (a phrase without any
// has nil).
func phraseTerms(phrases []SearchPhrase) [][]string {
	out := make([][]string, len(phrases))
	for i, p := range phrases {
		out[i] = SearchTerms(p.Text)
	}
	return out
}

// phraseFinder finds the phrases of a query in the words of a text as they
// come (eachSearchToken), holding only as many words as its longest
// phrase has: a text's words are never all in memory at once, however
// long the text.
type phraseFinder struct {
	phrases []SearchPhrase
	terms   [][]string
	recent  []recentWord // word k is recent[k % len(recent)]
	words   int          // how many words have come
	found   func(phraseInstance)
}

// recentWord is a word a phraseFinder holds: its indexed form, a slice of
// the text when that is the word as written, and the last sentence start
// at or before it.
type recentWord struct {
	term     string
	folded   []byte
	isFolded bool
	sentence int
}

func (w *recentWord) is(t string) bool {
	if w.isFolded {
		return string(w.folded) == t
	}
	return w.term == t
}

func (w *recentWord) hasPrefix(t string) bool {
	if w.isFolded {
		return len(w.folded) >= len(t) && string(w.folded[:len(t)]) == t
	}
	return strings.HasPrefix(w.term, t)
}

// newPhraseFinder calls found with each match of the phrases, by
// position, then by phrase, as FTS5's xInst gives them.
func newPhraseFinder(phrases []SearchPhrase, found func(phraseInstance)) *phraseFinder {
	f := &phraseFinder{phrases: phrases, terms: phraseTerms(phrases), found: found}
	longest := 1
	for _, t := range f.terms {
		longest = max(longest, len(t))
	}
	f.recent = make([]recentWord, longest)
	return f
}

// add takes the next word of text (from eachSearchToken), and the last
// sentence start at or before it, and reports the matches that start at
// the oldest word held once it has all the words they could span.
func (f *phraseFinder) add(text string, start, end int, folded []byte, sentence int) {
	w := &f.recent[f.words%len(f.recent)]
	if folded == nil {
		w.term, w.isFolded = text[start:end], false
	} else {
		w.folded, w.isFolded = append(w.folded[:0], folded...), true
	}
	w.sentence = sentence
	f.words++
	if f.words >= len(f.recent) {
		f.matchAt(f.words - len(f.recent))
	}
}

// finish reports the matches of the last words held.
func (f *phraseFinder) finish() {
	for pos := max(f.words-len(f.recent)+1, 0); pos < f.words; pos++ {
		f.matchAt(pos)
	}
}

// matchAt reports each phrase whose terms are the words from pos on (its
// last term a prefix of its word when it is a prefix phrase).
func (f *phraseFinder) matchAt(pos int) {
	for i, terms := range f.terms {
		if len(terms) == 0 || pos+len(terms) > f.words {
			continue
		}
		match := true
		for j, t := range terms {
			w := &f.recent[(pos+j)%len(f.recent)]
			if j == len(terms)-1 && f.phrases[i].Prefix {
				match = w.hasPrefix(t)
			} else {
				match = w.is(t)
			}
			if !match {
				break
			}
		}
		if match {
			f.found(phraseInstance{i, pos, f.recent[pos%len(f.recent)].sentence})
		}
	}
}

// MatchesText tells whether a text holds every phrase of words and none of
// excluded, as FTS5 would answer a row of it.
func MatchesText(text string, words, excluded []SearchPhrase) bool {
	return newTextMatcher(words, excluded).matches(text)
}

// textMatcher is MatchesText for one query and many texts: the phrases
// are split into terms once, and what a text needs is kept for the next.
type textMatcher struct {
	find  *phraseFinder
	has   []bool // by phrase: words, then excluded
	words int
	text  string
	add   func(start, end int, folded []byte) bool
}

func newTextMatcher(words, excluded []SearchPhrase) *textMatcher {
	m := &textMatcher{has: make([]bool, len(words)+len(excluded)), words: len(words)}
	m.find = newPhraseFinder(append(slices.Clip(words), excluded...), func(in phraseInstance) { m.has[in.phrase] = true })
	m.add = func(start, end int, folded []byte) bool {
		m.find.add(m.text, start, end, folded, 0)
		return true
	}
	return m
}

func (m *textMatcher) matches(text string) bool {
	clear(m.has)
	m.find.words, m.text = 0, text
	eachSearchToken(text, 0, m.add)
	m.find.finish()
	return !slices.Contains(m.has[:m.words], false) && !slices.Contains(m.has[m.words:], true)
}

// SearchSnippet is the snippet of a text a search shows for its words,
// with the byte offsets of each match in it: what FTS5's
// snippet(t, 0, open, close, '…', n) gives (fts5_aux.c: the window of n
// words that holds the most distinct phrases, moved to a sentence's start
// when that scores as well), without the markers; n is snippetTokens, or
// splitSnippetTokens for a text mostly of words of one character.
func SearchSnippet(text string, words []SearchPhrase) (string, [][2]int) {
	marked, _ := markSnippet(text, words)
	return splitMarks(marked)
}

// snippetTokens is how many words a snippet shows around the matches.
const snippetTokens = 16

// splitSnippetTokens is how many words a snippet shows of a text most of
// whose words are characters of a script written without spaces (a
// Chinese prompt; isSplitRune): each such character is a word, so
// snippetTokens of them were a few characters, not a phrase or two. Three
// times as many is about as wide on a page as snippetTokens words of
// English, a wide character taking two columns.
const splitSnippetTokens = 3 * snippetTokens

// snippetAnchors is how many matches of one text a snippet's window is
// chosen among, in text order: the window around each is scored
// (fts5SnippetScore), so a text that matches a hundred thousand times
// is read to its end but scored only around its first matches. Texts
// with fewer matches get FTS5's snippet.
const snippetAnchors = 4096

// maxSnippetRun is how much of a long stretch of a text a snippet keeps at
// each end, with … between: FTS5's snippet shows the text between its
// words whole, so a word, or the space or punctuation between two, of a
// megabyte made a snippet of a megabyte.
const maxSnippetRun = 200

// markSnippet is fts5SnippetFunction of SQLite 3.49 for one column, with
// markOpen and markClose around the matches, but for the bounds above: it
// holds a text's matches (at most snippetAnchors and the few after them),
// never all its words, and is at most a few kilobytes. nToken is the
// window it chose (snippetTokens or splitSnippetTokens) by the words it
// read: the text's, or without words its first splitSnippetTokens + 1.
func markSnippet(text string, words []SearchPhrase) (_ string, nToken int) {
	const ellipsis = "…"
	// Read the words once: count them, find the matches, note where
	// every 256th word starts so that the window's can be read again.
	var insts []phraseInstance
	keepUpTo := -1 // with snippetAnchors matches: the last position whose matches still count
	var find *phraseFinder
	find = newPhraseFinder(words, func(in phraseInstance) {
		if keepUpTo >= 0 && in.pos > keepUpTo {
			return
		}
		insts = append(insts, in)
		if len(insts) == snippetAnchors {
			keepUpTo = in.pos + splitSnippetTokens + len(find.recent)
		}
	})
	type mark struct{ pos, start int }
	var marks []mark
	nDoc, nSplit, sentence := 0, 0, 0
	eachSearchToken(text, 0, func(start, end int, folded []byte) bool {
		if r, size := utf8.DecodeRuneInString(text[start:end]); size == end-start && isSplitRune(r) {
			nSplit++
		}
		if nDoc%256 == 0 {
			marks = append(marks, mark{nDoc, start})
		}
		if nDoc == 0 || sentenceStartsAt(text, start) {
			sentence = nDoc
		}
		find.add(text, start, end, folded, sentence)
		nDoc++
		// Without words the window is the text's first words: one more
		// than the widest says whether there is more, and a long output
		// is not read to its end.
		return len(words) > 0 || nDoc <= splitSnippetTokens
	})
	find.finish()
	nToken = snippetTokens
	if 2*nSplit > nDoc {
		nToken = splitSnippetTokens
	}

	// score is fts5SnippetScore: the instances in the window of nToken
	// tokens from from. FTS5 looks at every instance for each window;
	// the instances are in position order, so this looks only at the
	// window's, and a text with many matches costs in proportion to them,
	// not to their square (a 117 KB text of one word took 2.2 s).
	seen := make([]bool, len(words))
	score := func(from int, adjust bool) (int, int) {
		clear(seen)
		n, first, last := 0, -1, 0
		lo, _ := slices.BinarySearchFunc(insts, from, func(in phraseInstance, pos int) int { return in.pos - pos })
		for _, in := range insts[lo:] {
			if in.pos >= from+nToken {
				break
			}
			if seen[in.phrase] {
				n++
			} else {
				n += 1000
			}
			seen[in.phrase] = true
			if first < 0 {
				first = in.pos
			}
			last = in.pos + len(find.terms[in.phrase])
		}
		if !adjust {
			return n, 0
		}
		adj := first - (nToken-(last-first))/2
		if adj+nToken > nDoc {
			adj = nDoc - nToken
		}
		return n, max(adj, 0)
	}
	best, bestStart := 0, 0
	for _, in := range insts[:min(len(insts), snippetAnchors)] {
		n, adj := score(in.pos, true)
		if n > best {
			best, bestStart = n, adj
		}
		// The window from the sentence's start, when the match is not
		// its first word.
		if nDoc > nToken && in.sentence < in.pos {
			n, _ := score(in.sentence, false)
			if in.sentence == 0 {
				n += 120
			} else {
				n += 100
			}
			if n > best {
				best, bestStart = n, in.sentence
			}
		}
	}

	// The coalesced instances (fts5CInstIter): overlapping matches as one.
	type span struct{ start, end int }
	var spans []span
	for _, in := range insts {
		end := in.pos + len(find.terms[in.phrase]) - 1
		if n := len(spans); n > 0 && in.pos <= spans[n-1].end {
			spans[n-1].end = max(spans[n-1].end, end)
		} else {
			spans = append(spans, span{in.pos, end})
		}
	}
	next := 0
	cur := func() span {
		if next < len(spans) {
			return spans[next]
		}
		return span{-1, -1}
	}
	rangeStart, rangeEnd := bestStart, bestStart+nToken-1
	// The window's words, read again from the mark before it.
	var window [][2]int
	if len(marks) > 0 {
		m := marks[sort.Search(len(marks), func(i int) bool { return marks[i].pos > rangeStart })-1]
		pos := m.pos
		eachSearchToken(text, m.start, func(start, end int, _ []byte) bool {
			if pos >= rangeStart {
				window = append(window, [2]int{start, end})
			}
			pos++
			return pos <= rangeEnd
		})
	}
	var b strings.Builder
	write := func(from, to int) { writeSnippetRun(&b, text[from:to]) }
	if bestStart > 0 {
		b.WriteString(ellipsis)
	}
	for cur().start >= 0 && cur().start < bestStart {
		next++
	}
	off, open := 0, false
	for k, t := range window { // fts5HighlightCb
		pos, tStart, tEnd := rangeStart+k, t[0], t[1]
		if rangeStart != 0 && pos == rangeStart {
			off = tStart
		}
		if open && (pos <= cur().start || cur().start < 0) && tStart > off {
			b.WriteString(markClose)
			open = false
		}
		if pos == cur().start && !open {
			write(off, tStart)
			b.WriteString(markOpen)
			off, open = tStart, true
		}
		if pos == cur().end {
			if !open {
				b.WriteString(markOpen)
				open = true
			}
			write(off, tEnd)
			off = tEnd
			next++
		}
		if pos == rangeEnd {
			if open {
				if cur().start >= 0 && pos >= cur().start {
					write(off, tEnd)
					off = tEnd
				}
				b.WriteString(markClose)
				open = false
			}
			write(off, tEnd)
			off = tEnd
		}
	}
	if open {
		b.WriteString(markClose)
	}
	if rangeEnd >= nDoc-1 {
		write(off, len(text))
	} else {
		b.WriteString(ellipsis)
	}
	return b.String(), nToken
}

// sentenceStartsAt tells whether a word after the first, at byte start,
// begins a sentence as FTS5's snippet sees one (fts5SentenceFinderCb): it
// follows white space after a '.' or ':'. (The first word always does.)
func sentenceStartsAt(text string, start int) bool {
	j := start - 1
	for j >= 0 && strings.IndexByte(" \t\n\r", text[j]) >= 0 {
		j--
	}
	return j != start-1 && j >= 0 && (text[j] == '.' || text[j] == ':')
}

// snippetDropped takes out of a snippet what marks a match and the joiners
// FTSText put in its text.
var snippetDropped = strings.NewReplacer(markOpen, "", markClose, "", wordJoiner, "")

// writeSnippetRun writes a stretch of a text to a snippet: whole up to
// twice maxSnippetRun, or else its first and last maxSnippetRun bytes (cut
// where a character starts) with … between; without the bytes that mark a
// match (markOpen, markClose), which the text must not forge.
func writeSnippetRun(b *strings.Builder, s string) {
	if len(s) > 2*maxSnippetRun {
		head, tail := maxSnippetRun, len(s)-maxSnippetRun
		for head > 0 && !utf8.RuneStart(s[head]) {
			head--
		}
		for tail < len(s) && !utf8.RuneStart(s[tail]) {
			tail++
		}
		writeSnippetRun(b, s[:head])
		b.WriteString("…")
		writeSnippetRun(b, s[tail:])
		return
	}
	if strings.ContainsAny(s, markOpen+markClose+wordJoiner) {
		s = snippetDropped.Replace(s)
	}
	b.WriteString(s)
}
