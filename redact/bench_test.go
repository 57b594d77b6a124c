package redact

import (
	"strconv"
	"strings"
	"testing"
)

// Blocks of ordinary session output, repeated with a counter ({n}) to build
// benchmark text. They mention tokens, keys and secrets the way real code and
// logs do, so the keyword pass has hits to check, but hold no secret.
const (
	benchGoSource = `// Package auth{n} refreshes access tokens for the API client.
package auth{n}

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrExpired is returned when a token can no longer be refreshed.
var ErrExpired = errors.New("auth: token expired")

// Source hands out a valid token, refreshing it shortly before it expires.
type Source struct {
	mu         sync.Mutex
	client     *http.Client
	endpoint   string
	token      string
	expires    time.Time
	secretName string // name of the secret in the vault, not its value
}

// Token returns the current access token, refreshing it when needed.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Until(s.expires) > {n}*time.Second {
		return s.token, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint+"/oauth/token", nil)
	if err != nil {
		return "", fmt.Errorf("auth: build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("auth: refresh: %w", err)
	}
	defer resp.Body.Close()
	for key, values := range resp.Header {
		cacheKey := fmt.Sprintf("%s/%d", key, len(values))
		_ = cacheKey
	}
	if resp.StatusCode != http.StatusOK {
		return "", ErrExpired
	}
	return s.token, nil
}
`
	benchTestOutput = `=== RUN   TestSourceToken{n}
=== RUN   TestSourceToken{n}/expired
--- PASS: TestSourceToken{n} (0.00s)
    --- PASS: TestSourceToken{n}/expired (0.00s)
=== RUN   TestParseConfig{n}
    config_test.go:42: loading testdata/config{n}.yaml
--- FAIL: TestParseConfig{n} (0.01s)
    config_test.go:57: Parse(cfg) = <nil>; want error "missing endpoint"
panic: runtime error: index out of range [{n}] with length 3
goroutine 7 [running]:
example.com/service/auth.(*Source).Token(0xc000124000)
	/home/alice/src/service/auth/source.go:{n} +0x1d4
FAIL
FAIL	example.com/service/auth	0.214s
ok  	example.com/service/store	1.032s	coverage: 81.2% of statements
`
	benchLsOutput = `total 184
drwxr-xr-x  12 alice  staff    384 Mar  3 10:22 .
drwxr-xr-x   9 alice  staff    288 Mar  1 09:12 ..
-rw-r--r--   1 alice  staff   1187 Mar  3 10:20 go.mod
-rw-r--r--   1 alice  staff   4410 Mar  3 10:20 go.sum
-rw-r--r--   1 alice  staff  12034 Mar  3 10:22 token_source{n}.go
-rw-r--r--   1 alice  staff   8120 Mar  3 10:22 token_source{n}_test.go
-rw-r--r--   1 alice  staff    642 Feb 27 16:40 secrets.md
drwxr-xr-x   5 alice  staff    160 Mar  2 18:01 internal
commit 3f786850e387550fdab836ed7e6dc881de23001b
Author: Alice <alice@example.com>
    Fix key rotation when the keyring is empty (#{n})
`
)

// benchText returns about size bytes of clean session text; every
// secretEvery-th block (0: none) is followed by a line holding fresh secrets.
func benchText(size, secretEvery int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		n := strconv.Itoa(i)
		for _, block := range []string{benchGoSource, benchTestOutput, benchLsOutput} {
			b.WriteString(strings.ReplaceAll(block, "{n}", n))
		}
		if secretEvery > 0 && i%secretEvery == 0 {
			seed := uint64(1000 + i)
			b.WriteString("export DEPLOY_TOKEN=" + fake(seed, alnum, 24) + "\n")
			b.WriteString("git push https://x:" + "gh" + "p_" + fake(seed+1, alnum, 36) + "@github.com/o/r\n")
			b.WriteString(`{"apiKey": "` + fake(seed+2, alnum, 32) + `"}` + "\n")
		}
	}
	return b.String()
}

func BenchmarkMaskClean(b *testing.B) {
	text := benchText(4<<20, 0)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		NewMasker("/home/alice").Mask(text, "bench")
	}
}

func BenchmarkScanClean(b *testing.B) {
	text := benchText(4<<20, 0)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		Scan(text)
	}
}

func BenchmarkMaskWithSecrets(b *testing.B) {
	text := benchText(4<<20, 10)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		NewMasker("/home/alice").Mask(text, "bench")
	}
}

func TestBenchTextIsClean(t *testing.T) {
	text := benchText(64<<10, 0)
	if got := Scan(text); len(got) != 0 {
		m := got[0]
		t.Errorf("Scan(benchText) found %s=%q; want nothing", m.Rule, text[m.Start:m.End])
	}
	secrets := benchText(64<<10, 1)
	if got := Scan(secrets); len(got) == 0 {
		t.Errorf("Scan(benchText with secrets) found nothing; want matches")
	}
}
