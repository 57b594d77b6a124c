package views

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestHighlightingFromTheCache: a diff rendered again is highlighted from
// tokenCache, and the page is byte for byte what the lexer made the first
// time.
func TestHighlightingFromTheCache(t *testing.T) {
	lines := []DiffLine{
		{Kind: "hunk", Text: "@@ -1,3 +1,3 @@"},
		{Kind: "ctx", Text: " package cache_test_unique"},
		{Kind: "del", Text: `-func f() string { return "a<b" }`},
		{Kind: "add", Text: `+func f() string { return "a>b" } // changed`},
	}
	render := func() string {
		var b bytes.Buffer
		if err := diffOf(lines, "cache.go").Render(WithHighlighting(context.Background(), 1<<20), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	first := render()
	if !strings.Contains(first, `<span class="hl-`) {
		t.Fatalf("the diff is not highlighted: %s", first)
	}
	code := "package cache_test_unique\nfunc f() string { return \"a<b\" }\nfunc f() string { return \"a>b\" } // changed\n"
	tokenCache.Lock()
	_, cached := tokenCache.m[tokenKey{lexerForPath("cache.go").Config().Name, "\n" + code}]
	tokenCache.Unlock()
	if !cached {
		t.Fatal("the diff's tokens are not in tokenCache after the first render")
	}
	if again := render(); again != first {
		t.Fatalf("rendered from the cache:\n%s\nfirst:\n%s", again, first)
	}
}

// TestTokenCacheIsBounded: highlighting code whose tokens add up to
// several times what the cache may hold keeps it within tokenCacheBytes
// (it starts over).
func TestTokenCacheIsBounded(t *testing.T) {
	lexer := lexerForPath("x.go")
	restarts, last := 0, 0
	for i := range 100 { // each about 4,000 tokens: 160 KB counted, 16 MB in all
		code := fmt.Sprintf("func f%d() { return %s }\n", i, strings.Repeat("a+", 2000))
		var b strings.Builder
		writeHighlighted(&b, code, lexer)
		tokenCache.Lock()
		n := tokenCache.bytes
		tokenCache.Unlock()
		if n > tokenCacheBytes {
			t.Fatalf("after %d pieces of code the cache holds %d bytes; bound %d", i+1, n, tokenCacheBytes)
		}
		if n < last {
			restarts++
		}
		last = n
	}
	if restarts == 0 {
		t.Fatal("the cache never started over: the test did not reach its bound")
	}
}
