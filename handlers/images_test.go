package handlers

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// imageSession is the image variant of a real Claude Code sample,
// imported, with the seq of each step that holds an image and its PNG.
type imageSession struct {
	adapterstest.ImageSample
	images map[int64][]byte // by step seq
}

func importImageSample(t *testing.T, s *testService) imageSession {
	t.Helper()
	sample := adapterstest.MustImageSample(t, "../"+adapterstest.ImageSampleSource)
	im := adapters.Importer{Store: s.store}
	if _, err := im.Run(context.Background(), claudecode.Agent, []string{sample.Path}); err != nil {
		t.Fatalf("import %s = %v", sample.Path, err)
	}
	d, err := s.store.Detail(context.Background(), sample.SessionID, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", sample.SessionID, err)
	}
	is := imageSession{ImageSample: sample, images: map[int64][]byte{}}
	for _, st := range d.Steps {
		switch {
		case st.ID == sample.ReadID:
			is.images[st.Seq] = sample.Read
		case strings.HasSuffix(st.ID, "#images"):
			is.images[st.Seq] = sample.Prompt
		}
	}
	if len(is.images) != 2 {
		t.Fatalf("steps with images = %d; want the Read call and the pasted images", len(is.images))
	}
	return is
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestStepImageRoute: each image is served from the store with the type
// its bytes show, nosniff and an ETag of the session's change stamp.
func TestStepImageRoute(t *testing.T) {
	s := newTestService(t)
	is := importImageSample(t, s)
	for seq, png := range is.images {
		path := imageURL(is.SessionID, seq, 1)
		rec := s.get(path)
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), png) {
			t.Fatalf("GET %s = %d, %d bytes; want 200 and the %d bytes of the sample's PNG", path, rec.Code, rec.Body.Len(), len(png))
		}
		h := rec.Header()
		if h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") == "" {
			t.Errorf("GET %s headers = %v; want image/png, nosniff and an ETag", path, h)
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("If-None-Match", h.Get("ETag"))
		if rec := s.do(req); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("GET %s If-None-Match = %d, %d bytes; want 304 and no body", path, rec.Code, rec.Body.Len())
		}
	}
	for path, want := range map[string]int{
		imageURL(is.SessionID, 0, 1):                            http.StatusNotFound, // a step without images
		imageURL(is.SessionID, 999, 1):                          http.StatusNotFound,
		imageURL("nope", 1, 1):                                  http.StatusNotFound,
		"/api/sessions/" + is.SessionID + "/steps/1/images/2":   http.StatusNotFound,
		"/api/sessions/" + is.SessionID + "/steps/1/images/0":   http.StatusBadRequest,
		"/api/sessions/" + is.SessionID + "/steps/x/images/1":   http.StatusBadRequest,
		"/api/sessions/" + is.SessionID + "/steps/1/images/one": http.StatusBadRequest,
		"/api/sessions/" + is.SessionID + "/steps/-1/images/1":  http.StatusBadRequest,
	} {
		if rec := s.get(path); rec.Code != want {
			t.Errorf("GET %s = %d %s; want %d", path, rec.Code, rec.Body, want)
		}
	}
	// Deleted, the session's images go with its steps.
	for seq := range is.images {
		if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/"+is.SessionID, nil)); rec.Code != http.StatusNoContent && rec.Code != http.StatusOK {
			t.Fatalf("DELETE = %d %s", rec.Code, rec.Body)
		}
		if rec := s.get(imageURL(is.SessionID, seq, 1)); rec.Code != http.StatusNotFound {
			t.Errorf("GET image of a deleted session = %d; want 404", rec.Code)
		}
		break
	}
}

// TestStepImageHostile: a pushed image that is not one is refused with a
// clear error and the store stays as it was.
func TestStepImageHostile(t *testing.T) {
	s := newTestService(t)
	b := newBatch("h")
	raw := func(data string) obj {
		return obj{"tool_name": "screenshot", "raw": obj{"content": arr{obj{"type": "image",
			"source": obj{"type": "base64", "media_type": "image/png", "data": data}}}}}
	}
	steps := b["steps"].(arr)
	steps[0] = withPayload(steps[0].(obj), raw(b64([]byte("<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>"))))
	steps[1] = withPayload(steps[1].(obj), raw("not base64 at all!"))
	steps[2] = withPayload(steps[2].(obj), raw(strings.Repeat("AAAA", 7<<20/4))) // 7 MB of zeros
	s.mustPush(b, http.StatusCreated)
	before := s.snapshot()
	for seq := 1; seq <= 3; seq++ {
		rec := s.get(imageURL("h", int64(seq), 1))
		if rec.Code != http.StatusNotFound || !strings.Contains(decodeError(t, rec).Error, "not a png, jpeg, gif or webp image") {
			t.Errorf("GET image of step %d = %d %s; want 404 naming what it is not", seq, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET image of step %d Content-Type = %q; want application/json", seq, ct)
		}
	}
	if after := s.snapshot(); after != before {
		t.Error("refused image reads changed the store")
	}
	// The step's details never carry the value, whatever it is.
	rec := s.get("/session/step?id=h&seq=3&all=1")
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "AAAAAAAA") || rec.Body.Len() > 64<<10 {
		t.Errorf("GET step 3 details = %d, %d bytes; want 200, small, without the value", rec.Code, rec.Body.Len())
	}
}

func withPayload(st obj, p obj) obj {
	st["type"], st["payload"] = "other", p
	return st
}

// TestStepDetailImages: the step's details show a thumbnail per image,
// served by the route, and the raw in place of each image's text; the
// session page's first delivery carries neither the images nor their text,
// only a count on the step's line.
func TestStepDetailImages(t *testing.T) {
	s := newTestService(t)
	is := importImageSample(t, s)
	page := s.get("/session?id=" + is.SessionID + "&turns=all")
	if page.Code != http.StatusOK {
		t.Fatalf("GET session = %d", page.Code)
	}
	doc := htmlDoc(t, page.Body.String())
	for seq, png := range is.images {
		if strings.Contains(page.Body.String(), b64(png)[:64]) {
			t.Errorf("session page carries image of step %d", seq)
		}
		line := doc.Find(fmt.Sprintf(`#step-%d [data-testid="images-count"]`, seq))
		summary := doc.Find(fmt.Sprintf(`#step-%d .line`, seq)).Text()
		want := "pasted images image/png, " + byteSize(len(png))
		if seq == is.readStep() {
			want = "Read /tmp/screenshot.png"
		}
		if summary != want {
			t.Errorf("step %d line = %q; want %q", seq, summary, want)
		}
		if got := line.Text(); got != "1 image" {
			t.Errorf("step %d line marks images %q; want 1 image", seq, got)
		}
		if n := doc.Find(fmt.Sprintf(`#step-%d img`, seq)).Length(); n != 0 {
			t.Errorf("session page shows %d images of step %d; want none until it opens", n, seq)
		}
		if _, ok := doc.Find(fmt.Sprintf(`#step-%d`, seq)).Attr("data-partial"); !ok {
			t.Errorf("step %d is not marked partial: its images would never load", seq)
		}

		rec := s.get(fmt.Sprintf("/session/step?id=%s&seq=%d", is.SessionID, seq))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || strings.Contains(body, b64(png)[:64]) {
			t.Fatalf("GET step %d details = %d; want 200 without the image's text", seq, rec.Code)
		}
		frag := htmlDoc(t, body)
		thumb := frag.Find(`a[data-testid="image-thumb"]`)
		href, _ := thumb.Attr("href")
		src, _ := thumb.Find("img").Attr("src")
		alt, _ := thumb.Find("img").Attr("alt")
		lazy, _ := thumb.Find("img").Attr("loading")
		wantAlt := fmt.Sprintf("Image 1 of step %d (image/png, %s)", seq, byteSize(len(png)))
		if thumb.Length() != 1 || href != imageURL(is.SessionID, seq, 1) || src != href || alt != wantAlt || lazy != "lazy" {
			t.Errorf("step %d thumbnails = %d, href %q src %q alt %q loading %q; want one of %s, alt %q, lazy",
				seq, thumb.Length(), href, src, alt, lazy, imageURL(is.SessionID, seq, 1), wantAlt)
		}
		if !strings.Contains(frag.Text(), "[image 1: image/png, ") {
			t.Errorf("step %d raw does not name the image in place of its text", seq)
		}
	}
}

func htmlDoc(t *testing.T, html string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestExportImages: the export carries the images as data: URIs, allowed
// by its policy, only when asked; otherwise it names each one left out.
func TestExportImages(t *testing.T) {
	s := newTestService(t)
	is := importImageSample(t, s)
	for _, include := range []bool{false, true} {
		path := "/api/sessions/" + is.SessionID + "/export"
		if include {
			path += "?images=1"
		}
		rec := s.get(path)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
		doc := htmlDoc(t, rec.Body.String())
		csp, _ := doc.Find(`meta[http-equiv="Content-Security-Policy"]`).Attr("content")
		wantCSP := views.ExportCSP
		if include {
			wantCSP = views.ExportImagesCSP
		}
		if csp != wantCSP || strings.Contains(csp, "img-src") != include {
			t.Errorf("GET %s CSP = %q; want %q", path, csp, wantCSP)
		}
		for seq, png := range is.images {
			has := strings.Contains(rec.Body.String(), "data:image/png;base64,"+b64(png))
			if has != include || strings.Count(rec.Body.String(), b64(png)[:64]) != map[bool]int{false: 0, true: 1}[include] {
				t.Errorf("GET %s carries the PNG of step %d: %v; want %v, once", path, seq, has, include)
			}
		}
		omitted := doc.Find(`[data-testid="image-omitted"]`).Length()
		if want := map[bool]int{false: len(is.images), true: 0}[include]; omitted != want {
			t.Errorf("GET %s names %d images left out; want %d", path, omitted, want)
		}
	}
	panel := s.get("/session/export-panel?id=" + is.SessionID)
	box := htmlDoc(t, panel.Body.String()).Find(`input[type="checkbox"][name="images"]`)
	if _, checked := box.Attr("checked"); box.Length() != 1 || checked {
		t.Errorf("export panel has %d images boxes, ticked %v; want one, off", box.Length(), checked)
	}
}
