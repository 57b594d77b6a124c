// Several token patterns below (AWS, GitHub, GitLab, Anthropic, OpenAI, Slack,
// Stripe, Google, npm, PyPI, Hugging Face, SendGrid, JWT, private keys) are
// adapted from gitleaks (https://github.com/gitleaks/gitleaks),
// Copyright (c) 2019 Zachary Rice, used under the MIT License.

package redact

import (
	"math"
	"regexp"
	"strings"
)

// Confidence says how sure a rule is that its match is a secret.
type Confidence string

// Definite rules match a known credential format or a credential in a known
// place; Candidate rules only see a random-looking value under a secret-like name.
const (
	Definite  Confidence = "definite"
	Candidate Confidence = "candidate"
)

// rule is one detector. Its pattern is tried anchored at each hit of one of
// its keywords, so a pattern starts with the text its keywords match. The
// secret is the first capture group that took part, or the whole match.
type rule struct {
	id         string
	confidence Confidence
	// keywords gate the pattern. A keyword is matched case-insensitively
	// unless it has an upper-case letter.
	keywords []string
	pattern  string
	// guard is a cheap test at the keyword hit, run before the pattern: it
	// sees what an anchored pattern cannot (the byte before the keyword, the
	// rest of a variable name) or rules most hits out quickly; nil accepts all.
	guard func(text string, at int) bool
	// valid runs on the value (placeholders already rejected); nil accepts all.
	valid func(v string) bool
	// block rules span lines (private keys); others stop at the end of the line.
	block bool
}

// Separators and quotes shared by the name-then-value rules; the optional
// backslashes let them see through JSON-escaped strings.
const assign = `\\?["']?(?:\s*(?::=|=>|[:=])\s*|\s+)\\?["']?`

// rules in priority order: when two matches tie on confidence and length, the
// earlier rule names the finding.
var rules = []rule{
	{
		id: "private-key", confidence: Definite, block: true,
		keywords: []string{"-----begin"},
		pattern: `-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----` +
			// PEM headers such as Proc-Type or Version, then the base64 body,
			// raw or JSON-escaped; a cut-off block is masked up to where it stops.
			`(?:\s|\\[rn])*(?:[A-Za-z][A-Za-z-]*: ?[^\n\\]*(?:\s|\\[rn])+)*` +
			`[A-Za-z0-9+/=]{16,}(?:(?:\s|\\[rn])*(?:[A-Za-z0-9+/=]|\\/)+)*` +
			`(?:(?:\s|\\[rn])*-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)?`,
	},
	{
		id: "aws-access-key", confidence: Definite,
		keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		pattern:  `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "aws-secret-key", confidence: Definite,
		keywords: []string{"aws_secret", "awssecret", "secret_access_key", "secretaccesskey"},
		pattern: `(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)` + assign +
			`([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		valid: minEntropy(3.5),
	},
	{
		id: "aws-session-token", confidence: Definite,
		keywords: []string{"session_token", "sessiontoken"},
		pattern:  `(?i)session_?token` + assign + `([A-Za-z0-9/+=]{100,})`,
		valid:    minEntropy(3.5),
	},
	{
		id: "github-token", confidence: Definite,
		keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		pattern:  `(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "gitlab-token", confidence: Definite,
		keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-",
			"glagent-", "gloas-", "glsoat-", "glffct-", "GR1348941"},
		pattern: `(?:gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9})?` +
			`|GR1348941[A-Za-z0-9_-]{20,})`,
		guard: wordStart,
		valid: minEntropy(3),
	},
	{
		id: "anthropic-key", confidence: Definite,
		keywords: []string{"sk-ant-"},
		pattern:  `sk-ant-[A-Za-z0-9_-]{32,}`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "openai-key", confidence: Definite,
		keywords: []string{"sk-"},
		pattern:  `sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "slack-webhook", confidence: Definite,
		keywords: []string{"https://hooks.slack.com/"},
		pattern:  `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}`,
	},
	{
		id: "slack-token", confidence: Definite,
		keywords: []string{"xox", "xapp-"},
		pattern:  `(?:xox[abposre](?:\.xox[bp])?-\d+-[A-Za-z0-9-]{8,}|xapp-\d-[A-Za-z0-9-]{10,})`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "stripe-key", confidence: Definite,
		keywords: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"},
		pattern:  `(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}\b|whsec_[A-Za-z0-9+/=]{24,})`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "google-api-key", confidence: Definite,
		keywords: []string{"AIza"},
		pattern:  `AIza[A-Za-z0-9_-]{35}`,
		guard:    wordStart,
		valid:    minEntropy(3.5),
	},
	{
		id: "npm-token", confidence: Definite,
		keywords: []string{"npm_"},
		pattern:  `npm_[A-Za-z0-9]{36}\b`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "pypi-token", confidence: Definite,
		keywords: []string{"pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"},
		pattern:  `pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}`,
		guard:    wordStart,
	},
	{
		id: "huggingface-token", confidence: Definite,
		keywords: []string{"hf_", "api_org_"},
		pattern:  `(?:hf_[A-Za-z0-9]{34,40}|api_org_[A-Za-z0-9]{34})\b`,
		guard:    wordStart,
		valid:    func(v string) bool { return hasMixedCase(v) && entropy(v) >= 3 },
	},
	{
		id: "sendgrid-key", confidence: Definite,
		keywords: []string{"SG."},
		pattern:  `SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}`,
		guard:    wordStart,
		valid:    minEntropy(3),
	},
	{
		id: "jwt", confidence: Definite,
		keywords: []string{"eyJ"},
		pattern:  `eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}={0,2}`,
		guard:    wordStart,
	},
	{
		id: "bearer-token", confidence: Definite,
		keywords: []string{"authorization"},
		pattern:  `(?i)authorization` + assign + `(?:bearer|token)\s+([\w.~+/-]+=*)`,
		guard:    wordStart,
		valid:    func(v string) bool { return len(v) >= 8 },
	},
	{
		// Without the header name, "bearer" must be followed by something token-like.
		id: "bearer-token", confidence: Definite,
		keywords: []string{"bearer"},
		pattern:  `(?i)bearer\s+([\w.~+/-]{20,}=*)`,
		guard:    wordStart,
		valid:    func(v string) bool { return hasDigit(v) && entropy(v) >= 3 },
	},
	{
		id: "basic-auth", confidence: Definite,
		keywords: []string{"authorization"},
		pattern:  `(?i)authorization` + assign + `basic\s+([A-Za-z0-9+/]{6,}={0,2})`,
		guard:    wordStart,
	},
	{
		// curl -u user:password, within curl's first 16 arguments: only the
		// password is masked.
		id: "basic-auth", confidence: Definite,
		keywords: []string{"curl"},
		pattern:  `curl(?:\s+\S+){0,16}?\s+(?:-u|--user)(?:\s+|=)\\?["']?[^\s:"'\\]+:([^\s"'\\]+)`,
		guard:    wordStart,
	},
	{
		// scheme://user:password@host: only the password is masked.
		id: "url-credentials", confidence: Definite,
		keywords: []string{"://"},
		pattern:  `://[^\s:@/?#"'<>\\]*:([^\s@/?#"'<>\\]+)@[A-Za-z0-9\[._-]`,
		guard:    afterScheme,
	},
	{
		// NAME=value from env, printenv, export -p and .env files, when NAME is
		// an upper-case variable whose last part names a credential.
		id: "env-secret", confidence: Definite,
		keywords: []string{"TOKEN", "SECRET", "_KEY", "APIKEY", "PASSWORD", "PASSWD", "_PASS", "CREDENTIAL"},
		pattern: `(?:TOKEN|SECRET|_KEY(?:_BASE)?|APIKEY|PASSWORD|PASSWD|_PASS|CREDENTIALS?)=` +
			`(?:"([^"]*)"|'([^']*)'|([^\s"'\x60;&|]+))`,
		guard: envName,
		valid: func(v string) bool {
			return len(v) >= 6 && !allDigits(v) && !plainWords[strings.ToLower(v)] && !isPath(v)
		},
	},
	{
		// A random-looking value under a secret-like name: code, JSON, YAML, flags.
		id: "generic-secret", confidence: Candidate,
		keywords: []string{"secret", "token", "passw", "credential", "api_key", "apikey", "api-key",
			"access_key", "accesskey", "access-key", "private_key", "privatekey", "private-key",
			"signing_key", "signingkey", "signing-key", "master_key", "masterkey", "master-key",
			"auth_key", "authkey", "auth-key", "encryption_key", "encryptionkey", "encryption-key"},
		pattern: `(?i)(?:secret|token|passw(?:or)?d|credentials?|(?:api|access|private|signing|master|auth|encryption)[_-]?key)` +
			`[\w.-]{0,64}\\?["']?\s*(?::=|=>|:|=)\s*` +
			`(?:\\?"([^"\\\s]{16,})|\\?'([^'\\\s]{16,})|\x60([^\x60\\\s]{16,})|([\w./+=~-]{16,}))`,
		guard: nameAssigned,
		valid: looksRandom,
	},
}

// Guards, run at a keyword hit before the rule's pattern.

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }

// wordStart is a word boundary before the keyword, so ghp_ inside xghp_ is not a token.
func wordStart(text string, at int) bool { return at == 0 || !isWordByte(text[at-1]) }

// afterScheme requires a URL scheme such as https before "://".
func afterScheme(text string, at int) bool {
	return at > 0 && (isWordByte(text[at-1]) || strings.IndexByte("+.-", text[at-1]) >= 0)
}

// nameAssigned requires the name holding the keyword to be followed by : or =
// (token: x, "apiKey": "x", secret := x), as the generic pattern does; most
// mentions of "token" in code fail here without running the pattern.
func nameAssigned(text string, at int) bool {
	i, limit := at, min(len(text), at+96)
	for i < limit && (isWordByte(text[i]) || text[i] == '.' || text[i] == '-') {
		i++
	}
	if i < len(text) && text[i] == '\\' {
		i++
	}
	if i < len(text) && (text[i] == '"' || text[i] == '\'') {
		i++
	}
	for i < len(text) && text[i] != '\n' && isSpace(text[i]) {
		i++
	}
	return i < len(text) && (text[i] == ':' || text[i] == '=')
}

// envName requires the keyword to end an upper-case variable name that starts
// the text or follows a space, shell operator, quote or list separator
// (export X_TOKEN=, A=1 X_TOKEN=, "Env": ["X_TOKEN=…"], ?X_TOKEN=), and not $
// or ${, which expand a variable rather than set it.
func envName(text string, at int) bool {
	i := at
	for i > 0 && at-i < 256 && (isUpper(text[i-1]) || isDigit(text[i-1]) || text[i-1] == '_') {
		i--
	}
	return i == 0 || strings.IndexByte(" \t\n\r\f\v;&|(\x60\"',[?", text[i-1]) >= 0
}

// placeholderRE matches the masker's own placeholders, such as [github-token-2].
var (
	placeholderRE    = regexp.MustCompile(`\[[a-z0-9]+(?:-[a-z0-9]+)*-[0-9]+\]`)
	onePlaceholderRE = regexp.MustCompile(`^` + placeholderRE.String() + `$`)
)

// placeholderLength bounds a placeholder: a rule's id and a count.
const placeholderLength = 100

// IsMaskPlaceholder reports whether s is one placeholder as a Masker writes
// them, such as "[aws-access-key-1]".
func IsMaskPlaceholder(s string) bool {
	return len(s) <= placeholderLength && onePlaceholderRE.MatchString(s)
}

// stripPlaceholders removes the masker's placeholders from a value, so that
// text masked once is never matched again for its placeholders.
func stripPlaceholders(v string) string {
	if strings.IndexByte(v, '[') < 0 {
		return v
	}
	return placeholderRE.ReplaceAllString(v, "")
}

// plainWords are values that stand for a secret rather than being one.
var plainWords = map[string]bool{
	"changeme": true, "change_me": true, "changeit": true, "placeholder": true, "redacted": true,
	"secret": true, "password": true, "passwd": true, "token": true, "apikey": true, "api_key": true,
	"dummy": true, "fake": true, "test": true, "sample": true, "default": true, "hidden": true,
	"masked": true, "none": true, "null": true, "nil": true, "undefined": true, "true": true,
	"false": true, "empty": true, "notset": true, "unset": true, "todo": true, "tbd": true,
	"foo": true, "bar": true, "foobar": true, "value": true,
}

// isPlaceholder reports whether v is a stand-in for a secret: a variable
// reference, a template, an example or masked value, or a filler word.
func isPlaceholder(v string) bool {
	if v == "" {
		return true
	}
	l := strings.ToLower(v)
	switch {
	case v[0] == '$' && len(v) > 1 && (v[1] == '{' || v[1] == '(' || v[1] == '_' || isLetter(v[1])):
		return true // $VAR, ${VAR}, $(command)
	case strings.Contains(v, "${"), strings.Contains(v, "{{"), strings.Contains(v, "%s"):
		return true // templates and format strings
	case v[0] == '<' && v[len(v)-1] == '>':
		return true // <your-key>
	case strings.Contains(l, "xxxx"), strings.Contains(v, "****"), strings.Contains(v, "..."),
		strings.Contains(v, "…"), strings.Contains(l, "example"), strings.Contains(l, "changeme"),
		strings.Contains(l, "placeholder"), strings.Contains(l, "redacted"):
		return true
	case strings.HasPrefix(l, "your"), strings.HasSuffix(l, "_here"), strings.HasSuffix(l, "-here"):
		return true // your_api_key_here
	case strings.Count(v, v[:1]) == len(v):
		return true // one repeated character
	}
	return plainWords[l]
}

// looksRandom is the generic rule's test: long, high-entropy, mixed letters and
// digits, and not a known harmless shape (UUID, git hash, data URI, path, words).
func looksRandom(v string) bool {
	switch {
	case len(v) < 16, entropy(v) < 3.5, !hasDigit(v), !hasLetter(v):
		return false
	case isUUID(v), (len(v) == 40 || len(v) == 64) && isHex(v):
		return false
	case strings.HasPrefix(v, "data:"), strings.Contains(v, "://"), isPath(v), isWords(v):
		return false
	}
	return true
}

func minEntropy(bits float64) func(string) bool {
	return func(v string) bool { return entropy(v) >= bits }
}

// entropy is the Shannon entropy of v in bits per byte.
func entropy(v string) float64 {
	if v == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(v); i++ {
		counts[v[i]]++
	}
	h, n := 0.0, float64(len(v))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isSpace(c byte) bool  { return c == ' ' || '\t' <= c && c <= '\r' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

func hasDigit(v string) bool {
	return strings.ContainsFunc(v, func(r rune) bool { return r < 128 && isDigit(byte(r)) })
}

func hasLetter(v string) bool {
	return strings.ContainsFunc(v, func(r rune) bool { return r < 128 && isLetter(byte(r)) })
}

func hasMixedCase(v string) bool { return strings.ToLower(v) != v && strings.ToUpper(v) != v }

func allDigits(v string) bool {
	return strings.TrimLeft(v, "0123456789") == ""
}

func isHex(v string) bool {
	return strings.TrimLeft(v, "0123456789abcdefABCDEF") == ""
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(v string) bool { return len(v) == 36 && uuidRE.MatchString(v) }

// isPath reports whether v is a file path, which names where a secret lives
// (GOOGLE_APPLICATION_CREDENTIALS=/path/key.json) rather than holding it.
func isPath(v string) bool {
	if !(strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")) {
		return false
	}
	return strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~-") == ""
}

// isWords reports whether v is made of words and numbers joined by
// separators, like an identifier (auth-service-token-v2) rather than a random string.
func isWords(v string) bool {
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune("-_./", r) }) {
		if len(part) > 3 && !allDigits(part) && strings.ContainsFunc(part, func(r rune) bool { return !(r < 128 && isLetter(byte(r))) }) {
			return false
		}
	}
	return true
}
