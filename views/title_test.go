package views

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// A title reads as its Markdown does: code spans stay code, marks go,
// and what the messages show as written stays text.
func TestTitleSpans(t *testing.T) {
	type sp = titleSpan
	for _, tc := range []struct {
		title string
		want  []titleSpan
	}{
		{"Fix the failing test", []sp{{"Fix the failing test", false}}},
		{"The parser swallows errors in `parse()`. Add a test for the **empty input** case.",
			[]sp{{"The parser swallows errors in ", false}, {"parse()", true}, {". Add a test for the empty input case.", false}}},
		{"# Refactor `store.Apply`", []sp{{"Refactor ", false}, {"store.Apply", true}}},
		{"- [ ] add *tests* and _docs_", []sp{{"add tests and docs", false}}},
		{"See [the spec](https://example.com/spec) and https://example.com/x", []sp{{"See the spec and https://example.com/x", false}}},
		{"Open [notes](notes.md) please", []sp{{"Open [notes](notes.md) please", false}}},
		{"<script>alert(1)</script> first line", []sp{{"<script>alert(1)</script> first line", false}}},
		{"Why does <b>this</b> fail?", []sp{{"Why does <b>this</b> fail?", false}}},
		{"Escaped \\*stars\\* &amp; ``a ` b`` code", []sp{{"Escaped *stars* & ", false}, {"a ` b", true}, {" code", false}}},
		{"rename *.go files to *.txt", []sp{{"rename *.go files to *.txt", false}}},
		{"unclosed `code", []sp{{"unclosed `code", false}}},
		{"---", []sp{{"---", false}}},
		{"```go", []sp{{"```go", false}}},
	} {
		if got := titleSpans(tc.title); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("titleSpans(%q) = %+v; want %+v", tc.title, got, tc.want)
		}
	}
}

// titleOf escapes every span and marks code.
func TestTitleOfEscapes(t *testing.T) {
	var b strings.Builder
	if err := titleOf("Run `<img src=x onerror=alert(1)>` then <i>this</i>").Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	want := `Run <code class="title-code">&lt;img src=x onerror=alert(1)&gt;</code> then &lt;i&gt;this&lt;/i&gt;`
	if b.String() != want {
		t.Errorf("titleOf = %s; want %s", b.String(), want)
	}
	if got, want := titlePlain("Fix `parse()` **now**"), "Fix parse() now"; got != want {
		t.Errorf("titlePlain = %q; want %q", got, want)
	}
}
