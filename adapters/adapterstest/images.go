package adapterstest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// ImageSample is the Claude Code sample of a create-read-edit-delete
// session, with images where Claude Code writes them: a PNG pasted into
// the first prompt and a PNG that the Read call read.
type ImageSample struct {
	Path      string // the derived transcript
	SessionID string
	Prompt    []byte // the pasted PNG
	Read      []byte // the PNG the Read call returned
	ReadID    string // the Read call's tool_use id: its step's id
}

// ImageSampleSource is the real sample ImageSample derives from, from the
// repository root.
const ImageSampleSource = "../shared/samples/claude-code/agentlogs_crud.jsonl"

// MustImageSample writes the image variant of ImageSampleSource (a path
// relative to the package under test, like "../") into a temporary folder.
func MustImageSample(t testing.TB, src string) ImageSample {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatalf("open sample: %v", err)
	}
	defer f.Close()
	s := ImageSample{Prompt: MustPNG(t, 40, 30), Read: MustPNG(t, 64, 48)}
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	prompted := false
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("sample line: %v", err)
		}
		msg, _ := rec["message"].(map[string]any)
		switch content := msg["content"].(type) {
		case string: // the first prompt: its text and a pasted image
			if rec["type"] == "user" && !prompted {
				prompted = true
				s.SessionID, _ = rec["sessionId"].(string)
				msg["content"] = []any{map[string]any{"type": "text", "text": content}, imageBlock(s.Prompt)}
				rec["imagePasteIds"] = []any{1}
			}
		case []any:
			for _, b := range content {
				b, _ := b.(map[string]any)
				if b["type"] == "tool_use" && b["name"] == "Read" && s.ReadID == "" {
					s.ReadID, _ = b["id"].(string)
					b["input"] = map[string]any{"file_path": "/tmp/screenshot.png"}
				}
				if b["type"] == "tool_result" && s.ReadID != "" && b["tool_use_id"] == s.ReadID {
					b["content"] = []any{imageBlock(s.Read)}
					rec["toolUseResult"] = map[string]any{"type": "image", "file": map[string]any{
						"base64": base64.StdEncoding.EncodeToString(s.Read), "type": "image/png", "originalSize": len(s.Read),
						"dimensions": map[string]any{"originalWidth": 64, "originalHeight": 48, "displayWidth": 64, "displayHeight": 48},
					}}
				}
			}
		}
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil || !prompted || s.ReadID == "" {
		t.Fatalf("sample %s: %v; a prompt %v, a Read call %q", src, err, prompted, s.ReadID)
	}
	s.Path = filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(s.Path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// imageBlock is an image content block as Claude Code writes one.
func imageBlock(png []byte) map[string]any {
	return map[string]any{"type": "image", "source": map[string]any{
		"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(png)}}
}

// MustPNG encodes a w×h PNG of a gradient.
func MustPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(255 * x / w), uint8(255 * y / h), 160, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
