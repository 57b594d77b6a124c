package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// ImageReader reads an image of a step.
type ImageReader interface {
	Image(ctx context.Context, id string, seq int64, n int) (store.Image, error)
}

// stepImage is GET /api/sessions/:id/steps/:seq/images/:n: image n (from
// 1) of a step, decoded from its raw, with the type its bytes show. Its
// ETag is the session's change stamp, so a client that has it is answered
// 304 until the session changes.
func stepImage(st ImageReader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps := httprouter.ParamsFromContext(r.Context())
		seq, err1 := strconv.ParseInt(ps.ByName("seq"), 10, 64)
		n, err2 := strconv.Atoi(ps.ByName("n"))
		if err1 != nil || err2 != nil || seq < 0 || n < 1 {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "seq must be a step's seq and n an image's number, from 1"})
			return
		}
		img, err := st.Image(r.Context(), sessionID(r), seq, n)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		etag := fmt.Sprintf(`"%d-%d-%d"`, img.Stamp, seq, n)
		h := w.Header()
		h.Set("ETag", etag)
		if strings.Contains(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", img.MediaType)
		h.Set("Content-Length", strconv.Itoa(len(img.Data)))
		w.WriteHeader(http.StatusOK)
		w.Write(img.Data)
	})
}

// imageURL is the route of image n of a step.
func imageURL(id string, seq int64, n int) string {
	return fmt.Sprintf("/api/sessions/%s/steps/%d/images/%d", url.PathEscape(id), seq, n)
}

// stepImages lists the images of an other step's raw, and the raw with
// each image's text replaced by a note of the given state ("shown above"),
// so that what shows the raw never carries an image.
func stepImages(raw []byte, state string) ([]views.ImageView, []byte) {
	var out []views.ImageView
	elided := store.ElideImages(raw, func(n int, r store.ImageRef) string {
		out = append(out, views.ImageView{N: n, MediaType: r.MediaType, Size: byteSize(r.Bytes()), Data: r.Data})
		return fmt.Sprintf("[image %d: %s, %s: %s]", n, r.MediaType, byteSize(r.Bytes()), state)
	})
	return out, elided
}

// byteSize renders a size in bytes for reading: 312 KB.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// exportImages makes a step's images data: URIs when the export includes
// them (only of the types served), or leaves each out, named.
func exportImages(images []views.ImageView, include bool) {
	for i := range images {
		img := &images[i]
		img.Src = ""
		if include && servedImageTypes[img.MediaType] {
			img.Src = "data:" + img.MediaType + ";base64," + img.Data
		}
		img.Data = ""
	}
}

// servedImageTypes are the media types an export may carry inline.
var servedImageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imagesLine names a step's images in its line: image/png, 312 KB.
func imagesLine(images []store.ImageRef) string {
	names := make([]string, len(images))
	for i, r := range images {
		names[i] = r.MediaType + ", " + byteSize(r.Bytes())
	}
	return strings.Join(names, "; ")
}
