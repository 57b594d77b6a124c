package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig knows the formats served
	_ "image/jpeg"
	_ "image/png"
	"slices"
	"strings"

	_ "golang.org/x/image/webp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// MaxImageBytes bounds an image the store serves: the ingest body limit,
// so no image served is larger than a batch that could carry it.
const MaxImageBytes = 8 << 20

// ErrNotImage means a step's image holds bytes that are not a png, jpeg,
// gif or webp image, or more bytes than MaxImageBytes.
var ErrNotImage = errors.New("not a png, jpeg, gif or webp image")

// ImageRef is an image a step's raw holds, found by FindImages: the media
// type it claims and its base64 text.
type ImageRef struct {
	MediaType string
	Data      string // base64
	value     string // the JSON string that holds it: Data, or a data: URI
}

// Bytes is the image's size once decoded.
func (r ImageRef) Bytes() int {
	return len(r.Data)*3/4 - strings.Count(r.Data[max(0, len(r.Data)-2):], "=")
}

// FindImages lists the images an other step's raw holds, in document
// order (an object's keys in sorted order). It knows one shape per
// writer, found wherever it is nested:
//   - an object with base64 text in "data" or "base64" and an image media
//     type in "media_type", "mimeType", "mime_type", "mime" or "type"
//     (Claude's image block source, Claude Code's Read result file,
//     Gemini's inlineData);
//   - a string data: URI of an image in base64 (Codex input_image,
//     opencode file parts).
func FindImages(raw json.RawMessage) []ImageRef {
	if len(raw) == 0 || !bytes.Contains(raw, []byte("image/")) {
		return nil // most steps: no decode
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []ImageRef
	walkImages(v, func(r ImageRef) any { out = append(out, r); return nil })
	return out
}

// walkImages calls found for each image in v, in document order, and
// replaces the image's string by what found returns unless that is nil.
func walkImages(v any, found func(ImageRef) any) {
	switch x := v.(type) {
	case map[string]any:
		if r, key, ok := imageObject(x); ok {
			if s := found(r); s != nil {
				x[key] = s
			}
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := x[k].(string); ok {
				if r, ok := imageURI(s); ok {
					if rep := found(r); rep != nil {
						x[k] = rep
					}
				}
				continue
			}
			walkImages(x[k], found)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				if r, ok := imageURI(s); ok {
					if rep := found(r); rep != nil {
						x[i] = rep
					}
				}
				continue
			}
			walkImages(e, found)
		}
	}
}

var (
	imageDataKeys = []string{"data", "base64"}
	imageTypeKeys = []string{"media_type", "mimeType", "mime_type", "mime", "type"}
)

// imageObject reports an object that is an image: its base64 text and
// image media type, and the key of the text.
func imageObject(o map[string]any) (ImageRef, string, bool) {
	media := ""
	for _, k := range imageTypeKeys {
		if s, ok := o[k].(string); ok && strings.HasPrefix(s, "image/") {
			media = s
			break
		}
	}
	if media == "" {
		return ImageRef{}, "", false
	}
	for _, k := range imageDataKeys {
		if s, ok := o[k].(string); ok && s != "" {
			return ImageRef{MediaType: media, Data: s, value: s}, k, true
		}
	}
	return ImageRef{}, "", false
}

// imageURI reports a data: URI of an image in base64.
func imageURI(s string) (ImageRef, bool) {
	rest, ok := strings.CutPrefix(s, "data:image/")
	if !ok {
		return ImageRef{}, false
	}
	head, data, ok := strings.Cut(rest, ";base64,")
	if !ok || data == "" || strings.ContainsAny(head, ",;") {
		return ImageRef{}, false
	}
	return ImageRef{MediaType: "image/" + head, Data: data, value: s}, true
}

// ElideImages returns raw with each image's text replaced by note(n, ref)
// (n from 1, called once each, in order), so that a page showing the raw
// never carries the images.
func ElideImages(raw json.RawMessage, note func(n int, r ImageRef) string) json.RawMessage {
	refs := FindImages(raw)
	if len(refs) == 0 {
		return raw
	}
	notes := make([]string, len(refs))
	for i, r := range refs {
		notes[i] = note(i+1, r)
	}
	out := raw
	for i, r := range refs {
		enc, _ := json.Marshal(r.value)
		rep, _ := json.Marshal(notes[i])
		at := bytes.Index(out, enc)
		if at < 0 {
			return elideDecoded(raw, notes) // the writer escaped the text otherwise
		}
		out = slices.Concat(out[:at], rep, out[at+len(enc):])
	}
	return out
}

// elideDecoded replaces the images in the decoded raw by their notes; the
// keys come back sorted.
func elideDecoded(raw json.RawMessage, notes []string) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	n := 0
	walkImages(v, func(ImageRef) any {
		n++
		if n > len(notes) {
			return nil
		}
		return notes[n-1]
	})
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// Image is an image of a step, as served.
type Image struct {
	MediaType     string // as the bytes show, not as the writer claimed
	Data          []byte
	Width, Height int
	Stamp         int64 // the session's change stamp
}

// Image returns image n (from 1) of the step with seq in session id:
// ErrNotFound when the session, the step or the image is not there, and an
// error that is ErrNotImage when its bytes are not an image served.
func (s *Store) Image(ctx context.Context, id string, seq int64, n int) (Image, error) {
	var (
		img     Image
		payload string
		found   bool
	)
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT s.updated_at, p.payload FROM sessions s
			JOIN steps p ON p.session_pk = s.pk WHERE s.id = ? AND p.seq = ?`, &sqlitex.ExecOptions{
			Args: []any{id, seq},
			ResultFunc: func(st *sqlite.Stmt) error {
				img.Stamp, payload, found = st.ColumnInt64(0), st.ColumnText(1), true
				return nil
			},
		})
	})
	if err != nil {
		return Image{}, fmt.Errorf("store: read image %d of step %d of session %s: %w", n, seq, id, err)
	}
	if !found {
		return Image{}, ErrNotFound
	}
	return StepImage(img.Stamp, id, seq, payload, n)
}

// StepImage is image n (from 1) of the step with seq in session id, whose
// payload (JSON) is given, the session being at change stamp: ErrNotFound
// when the step has no image n, an error that is ErrNotImage when its bytes
// are not an image served.
func StepImage(stamp int64, id string, seq int64, payload string, n int) (Image, error) {
	var p struct {
		Raw json.RawMessage `json:"raw"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return Image{}, fmt.Errorf("store: step %d of session %s payload: %w", seq, id, err)
	}
	refs := FindImages(p.Raw)
	if n < 1 || n > len(refs) {
		return Image{}, ErrNotFound
	}
	data, err := decodeImage(refs[n-1].Data)
	if err != nil {
		return Image{}, fmt.Errorf("image %d of step %d: %w", n, seq, err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || !servedFormats[format] {
		return Image{}, fmt.Errorf("image %d of step %d: %w", n, seq, ErrNotImage)
	}
	return Image{MediaType: "image/" + format, Data: data, Width: cfg.Width, Height: cfg.Height, Stamp: stamp}, nil
}

// servedFormats are the image formats served: those every browser shows.
var servedFormats = map[string]bool{"png": true, "jpeg": true, "gif": true, "webp": true}

// decodeImage decodes an image's base64 text, padded or not, within
// MaxImageBytes.
func decodeImage(text string) ([]byte, error) {
	if len(text)/4*3 > MaxImageBytes {
		return nil, fmt.Errorf("%w: larger than %d MB", ErrNotImage, MaxImageBytes>>20)
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(text, "=") && len(text)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	data, err := enc.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64", ErrNotImage)
	}
	return data, nil
}
