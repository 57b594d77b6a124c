package handlers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// TestPagesHaveHeadingIconAndNamedDialogs: every page has one h1 and a
// favicon that is served; every dialog is named by a heading in it.
func TestPagesHaveHeadingIconAndNamedDialogs(t *testing.T) {
	s := newTestService(t)
	s.mustPush(showcaseSession(t, showcaseID, time.Now().Add(-time.Hour)), http.StatusCreated)
	for _, c := range []struct {
		path   string
		status int
	}{{"/", 200}, {"/session?id=" + showcaseID, 200}, {"/session?id=no-such", 404}, {"/search?q=parse", 200}} {
		rec := s.get(c.path)
		if rec.Code != c.status {
			t.Fatalf("GET %s = %d; want %d", c.path, rec.Code, c.status)
		}
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if n := doc.Find("h1").Length(); n != 1 {
			t.Errorf("GET %s has %d h1 headings; want 1", c.path, n)
		}
		icon, ok := doc.Find(`link[rel="icon"]`).Attr("href")
		if !ok {
			t.Errorf("GET %s links no favicon", c.path)
		} else if r := s.get(icon); r.Code != http.StatusOK || !strings.HasPrefix(r.Header().Get("Content-Type"), "image/svg+xml") {
			t.Errorf("GET %s = %d %s; want the icon", icon, r.Code, r.Header().Get("Content-Type"))
		}
		doc.Find("dialog").Each(func(_ int, d *goquery.Selection) {
			id, _ := d.Attr("aria-labelledby")
			if id == "" || strings.TrimSpace(d.Find("#"+id).Text()) == "" {
				t.Errorf("GET %s: dialog %s has no name", c.path, d.AttrOr("id", "?"))
			}
		})
	}
}
