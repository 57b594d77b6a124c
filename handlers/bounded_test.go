package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// renderFactor is the most a value may grow by when rendered: HTML
// escaping (a quote becomes &#34;) and JSON indentation included.
const renderFactor = 8

// renderSlack is what a page adds whatever its values: layout, summary,
// the other steps.
const renderSlack = 64 << 10

// mustApply writes a batch through the store, as an import does: values
// larger than the ingest body limit get in this way.
func (s *testService) mustApply(b obj) {
	s.t.Helper()
	batch, err := store.ParseBatch(mustJSON(s.t, b))
	if err != nil {
		s.t.Fatalf("ParseBatch = %v", err)
	}
	if _, err := s.store.Apply(s.t.Context(), batch); err != nil {
		s.t.Fatalf("Apply = %v", err)
	}
}

// deepArrays is n nested empty arrays: [[[...]]].
func deepArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestRenderingIsBounded puts the hostile values of issue 10 in a session:
// about 9,980 nested arrays in an other step's raw, and a 10 MB line in
// each field in turn. The page, the step fragment (cut and whole), the
// export and the list stay within a small multiple of what was stored,
// and the page's first delivery within the 2 KB cut of each value.
func TestRenderingIsBounded(t *testing.T) {
	s := newTestService(t)
	big := strings.Repeat("x", 10<<20)
	patch := func(line string) arr {
		return arr{obj{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": arr{line}}}
	}
	for _, c := range []struct {
		name string
		seq  int // the step holding the value, in newBatch
		set  func(step obj)
	}{
		{"raw nested 9980 deep", 5, func(st obj) { st["payload"].(obj)["raw"] = json.RawMessage(`{"a":` + deepArrays(9980) + `}`) }},
		{"raw", 5, func(st obj) { st["payload"].(obj)["raw"] = obj{"k": big} }},
		{"tool name", 5, func(st obj) { st["payload"].(obj)["tool_name"] = big }},
		{"prompt", 1, func(st obj) { st["payload"].(obj)["text"] = big }},
		{"text ref", 1, func(st obj) { st["payload"].(obj)["text_ref"] = big }},
		{"command", 2, func(st obj) { st["payload"].(obj)["command"] = big }},
		{"stdout", 2, func(st obj) { st["payload"].(obj)["stdout"] = big }},
		{"stderr", 2, func(st obj) { st["payload"].(obj)["stderr"] = big }},
		{"cwd", 2, func(st obj) { st["payload"].(obj)["cwd"] = big }},
		{"output ref", 2, func(st obj) { st["payload"].(obj)["output_ref"] = big }},
		{"error message", 2, func(st obj) {
			st["outcome"], st["error"] = "failed", obj{"type": "tool_error", "message": big}
		}},
		{"flag reason", 2, func(st obj) {
			st["flags"] = arr{obj{"kind": "k", "severity": "warn", "reason": big}}
		}},
		{"edit path", 3, func(st obj) { st["payload"].(obj)["path"] = big }},
		{"old string", 3, func(st obj) { st["payload"].(obj)["old_string"] = big }},
		{"new string", 3, func(st obj) { st["payload"].(obj)["new_string"] = big }},
		{"structured patch", 3, func(st obj) { st["payload"].(obj)["structured_patch"] = patch("+" + big) }},
		{"read path", 4, func(st obj) { st["payload"].(obj)["path"] = big }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sid := strings.ReplaceAll(c.name, " ", "-")
			b := newBatch(sid)
			step := b["steps"].(arr)[c.seq-1].(obj)
			c.set(step)
			stored := len(mustJSON(t, step))
			s.mustApply(b)

			bounded := func(path string, most int) string {
				t.Helper()
				rec := s.get(path)
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s = %d", path, rec.Code)
				}
				if n := rec.Body.Len(); n > most {
					t.Errorf("GET %s = %d bytes for a %d-byte step; want at most %d", path, n, stored, most)
				}
				return rec.Body.String()
			}
			whole := renderFactor*stored + renderSlack
			page := bounded("/session?id="+sid, renderSlack)
			stepURL := fmt.Sprintf("/session/step?id=%s&seq=%d", sid, c.seq)
			cut := bounded(stepURL, renderFactor*shownChars+renderSlack)
			bounded(stepURL+"&all=1", whole)
			export := bounded("/api/sessions/"+sid+"/export", whole)
			if stored > 2*shownChars && !strings.Contains(cut, `data-testid="show-all"`) {
				t.Errorf("the step cut at %d characters has no Show all control", shownChars)
			}

			// Titles are cut to a readable length wherever they show.
			for _, c := range []struct{ what, html, sel string }{
				{"the list", bounded("/", renderSlack), `[data-testid="title"]`},
				{"the page's title", page, "head title"},
				{"the page's heading", page, `[data-testid="session-title"]`},
				{"the export's heading", export, "h1"},
			} {
				doc, err := goquery.NewDocumentFromReader(strings.NewReader(c.html))
				if err != nil {
					t.Fatal(err)
				}
				doc.Find(c.sel).Each(func(_ int, title *goquery.Selection) {
					if n := utf8.RuneCountInString(title.Text()); n > lineChars+1 {
						t.Errorf("a title in %s has %d characters; want at most %d", c.what, n, lineChars+1)
					}
				})
			}
		})
	}
}

// TestRawIsCutLikeOutput: an other step's raw gets the 2 KB first delivery
// and the 100,000-character cut with Show all, as output does.
func TestRawIsCutLikeOutput(t *testing.T) {
	s := newTestService(t)
	b := newBatch("raw")
	b["steps"].(arr)[4].(obj)["payload"].(obj)["raw"] = obj{"k": strings.Repeat("y", 150_000)}
	s.mustPush(b, http.StatusCreated)
	recorded := func(path string) (string, string) {
		t.Helper()
		rec := s.get(path)
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil || rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d, %v", path, rec.Code, err)
		}
		block := doc.Find(`[data-testid="block-Recorded"]`)
		return block.Find("pre").Text(), block.Find(`[data-testid="cut"]`).Text()
	}
	pretty := "{\n  \"k\": \"" + strings.Repeat("y", 150_000) + "\"\n}"
	for _, c := range []struct {
		path  string
		shown int
	}{
		{"/session?id=raw", headChars},
		{"/session/step?id=raw&seq=5", shownChars},
		{"/session/step?id=raw&seq=5&all=1", len(pretty)},
	} {
		shown, note := recorded(c.path)
		if shown != pretty[:c.shown] {
			t.Errorf("GET %s shows %d characters of raw; want its first %d", c.path, len(shown), c.shown)
		}
		if more := len(pretty) - c.shown; more > 0 && !strings.Contains(note, views.Number(int64(more))+" more characters") {
			t.Errorf("GET %s cut note = %q; want %s more characters", c.path, note, views.Number(int64(more)))
		}
	}
}

func TestPrettyJSON(t *testing.T) {
	for _, c := range []struct {
		name, raw, want string
	}{
		{"object", `{"a":1,"b":[1,2],"c":{},"d":[ ]}`, "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {},\n  \"d\": []\n}"},
		{"strings keep their bytes", `{"a":"x, {y}: [\"z\"]"}`, "{\n  \"a\": \"x, {y}: [\\\"z\\\"]\"\n}"},
		{"deeper than the indent is compact", `[[[[[[1, 2]]]]]]`, "[\n  [\n    [\n      [\n        [[1,2]]\n      ]\n    ]\n  ]\n]"},
		{"not JSON", `{"a":`, `{"a":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, more := prettyJSON(json.RawMessage(c.raw), 0); got != c.want || more != 0 {
				t.Errorf("prettyJSON(%s) = %q, %d; want %q", c.raw, got, more, c.want)
			}
		})
	}
	if got, more := prettyJSON(json.RawMessage(`{"é":"ü"}`), 6); got != "{\n  \"é" || more != 8 {
		t.Errorf("prettyJSON cut at 6 = %q, %d more; want 6 characters and 8 more", got, more)
	}
}
