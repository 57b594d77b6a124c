package handlers

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreview/service/internal/browsertest"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserImages drives a step's images in Chromium: the thumbnail
// loads when the step opens, Enter on it shows the image whole in a
// dialog that Esc closes, the export shows its images only when asked, and
// nothing breaks the page's policy. With SERVICE_SCREENSHOTS=<dir> it also
// writes the open step at 1280 and 390 px, light and dark.
func TestBrowserImages(t *testing.T) {
	b := startBrowser(t)
	t.Run("Thumbnail", func(t *testing.T) { browserImageThumbnail(t, b) })
	t.Run("Export", func(t *testing.T) { browserImageExport(t, b) })
	t.Run("Screenshots", func(t *testing.T) { browserImageScreenshots(t, b) })
}

// readStep is the seq of the sample's Read call, which returned an image.
func (is imageSession) readStep() int64 {
	for seq, png := range is.images {
		if string(png) == string(is.Read) {
			return seq
		}
	}
	return -1
}

func browserImageThumbnail(t *testing.T, b *browser) {
	s := newTestService(t)
	is := importImageSample(t, s)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + is.SessionID + "&turns=all")
	for seq := range is.images {
		step := fmt.Sprintf("#step-%d", seq)
		if n := p.Count(step + " img"); n != 0 {
			t.Errorf("step %d shows %d images before it opens; want none", seq, n)
		}
		p.Click(step + " > summary")
		thumb := step + ` a[data-testid="image-thumb"] img`
		p.WaitFor("the thumbnail loads", `(() => { const i = document.querySelector(`+browsertest.JSString(thumb)+`); return i !== null && i.complete && i.naturalWidth > 0; })()`)
	}
	seq := is.readStep()
	step := fmt.Sprintf("#step-%d", seq)
	if w := evalJS[int](p, `document.querySelector(`+browsertest.JSString(step+` a[data-testid="image-thumb"] img`)+`).naturalWidth`); w != 64 {
		t.Errorf("thumbnail of step %d is %d px wide; want the sample PNG's 64", seq, w)
	}
	if shown := evalJS[float64](p, `document.querySelector(`+browsertest.JSString(step+` a[data-testid="image-thumb"] img`)+`).getBoundingClientRect().height`); shown <= 0 || shown > 9*16 {
		t.Errorf("thumbnail of step %d is %.0f px high; want it bounded by the style sheet", seq, shown)
	}

	p.PressEnter(step + ` a[data-testid="image-thumb"]`)
	viewer := `dialog[data-testid="image-viewer"]`
	p.WaitFor("Enter opens the image whole", `(() => { const d = document.querySelector(`+browsertest.JSString(viewer)+`); return d !== null && d.open && d.querySelector('img').complete && d.querySelector('img').naturalWidth === 64; })()`)
	if got, want := evalJS[string](p, `document.querySelector(`+browsertest.JSString(viewer+" img")+`).alt`), fmt.Sprintf("Image 1 of step %d (image/png,", seq); !strings.HasPrefix(got, want) {
		t.Errorf("the enlarged image's alt = %q; want it to start %q", got, want)
	}
	if got := evalJS[string](p, `location.pathname`); got != "/session" {
		t.Errorf("opening the image left the page for %s", got)
	}
	p.key(kb.Escape)
	p.WaitFor("Esc closes the image", `!document.querySelector(`+browsertest.JSString(viewer)+`).open`)
	if got := evalJS[string](p, `document.activeElement.dataset.testid || ''`); got != "image-thumb" {
		t.Errorf("after Esc the focus is on %q; want back on the thumbnail", got)
	}
}

// browserImageExport: the downloaded report, opened as a file, shows its
// images when the box was ticked, under its own policy, and otherwise
// names them.
func browserImageExport(t *testing.T, b *browser) {
	s := newTestService(t)
	is := importImageSample(t, s)
	for _, include := range []bool{false, true} {
		path := "/api/sessions/" + is.SessionID + "/export"
		if include {
			path += "?images=1"
		}
		file := s.get(path).Body.String()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, file) // as a browser opens the downloaded file
		}))
		t.Cleanup(srv.Close)
		p := b.newTab(t, srv.URL)
		p.Do("open the exported file", chromedp.Navigate(srv.URL))
		p.WaitFor("the report loads", `document.readyState === 'complete'`)
		p.Do("open every step", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach(d => d.open = true)`))
		if include {
			p.WaitFor("the images show", `Array.from(document.querySelectorAll('img[data-testid="image-thumb"]')).length === 2 &&
				Array.from(document.querySelectorAll('img[data-testid="image-thumb"]')).every(i => i.complete && i.naturalWidth > 0)`)
		} else if n := p.Count(`[data-testid="image-omitted"]`); n != 2 || p.Count("img") != 0 {
			t.Errorf("export without images names %d left out and shows %d images; want 2 and none", n, p.Count("img"))
		}
	}
}

// browserImageScreenshots writes the step with its image (images-*) and
// the image opened whole (image-open-*) when SERVICE_SCREENSHOTS names a
// folder.
func browserImageScreenshots(t *testing.T, b *browser) {
	dir := os.Getenv("SERVICE_SCREENSHOTS")
	if dir == "" {
		t.Skip("set SERVICE_SCREENSHOTS=<dir> to write screenshots")
	}
	s := newTestService(t)
	is := importImageSample(t, s)
	p := b.newTab(t, serveBrowser(t, s))
	step := fmt.Sprintf("#step-%d", is.readStep())
	p.eachLook(func(suffix string) {
		p.Open("/session?id=" + is.SessionID + "&turns=all" + step)
		p.WaitFor("the thumbnail loads", `(() => { const i = document.querySelector(`+browsertest.JSString(step+` a[data-testid="image-thumb"] img`)+`); return i !== null && i.naturalWidth > 0; })()`)
		if wide := evalJS[[]string](p, tooWide); len(wide) > 0 {
			t.Errorf("at %s: wider than the screen:\n%s", suffix, strings.Join(wide, "\n"))
		}
		p.Do("scroll to the step", chromedp.Evaluate[chromedp.Void](`document.querySelector(`+browsertest.JSString(step)+`).scrollIntoView()`))
		p.Shoot(dir, "images"+suffix)
		p.PressEnter(step + ` a[data-testid="image-thumb"]`)
		p.WaitFor("the image opens", `document.querySelector('dialog[data-testid="image-viewer"]').open`)
		p.Shoot(dir, "image-open"+suffix)
		p.key(kb.Escape)
	})
}
