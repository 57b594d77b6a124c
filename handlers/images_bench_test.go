package handlers

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"testing"
)

// screenshotBatch is a session whose step 5 is a tool call that returned
// a screenshot: a noisy 360x280 PNG, about 400 KB of base64, as Claude
// Code writes an MCP screenshot's result.
func screenshotBatch(b *testing.B) obj {
	b.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 360, 280))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range 280 {
		for x := range 360 {
			img.Set(x, y, color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(x), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	batch := newBatch("shot")
	steps := batch["steps"].(arr)
	steps[4].(obj)["payload"] = obj{"tool_name": "mcp__browser__screenshot", "raw": obj{
		"input": obj{"url": "http://localhost:3000"},
		"result": arr{obj{"type": "text", "text": "Took a screenshot"}, obj{"type": "image",
			"source": obj{"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(buf.Bytes())}}},
	}}
	return batch
}

// BenchmarkScreenshotStep reads what the review app sends for a session
// with a 400 KB screenshot: its page, the step opened, the step shown
// whole, and the export; B/page is the bytes sent.
func BenchmarkScreenshotStep(b *testing.B) {
	s := newTestService(b)
	s.mustPush(screenshotBatch(b), http.StatusCreated)
	for _, bc := range []struct{ name, path string }{
		{"Page", "/session?id=shot"},
		{"Step", "/session/step?id=shot&seq=5"},
		{"StepAll", "/session/step?id=shot&seq=5&all=1"},
		{"Export", "/api/sessions/shot/export"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				rec := s.get(bc.path)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s = %d", bc.path, rec.Code)
				}
				n = rec.Body.Len()
			}
			b.ReportMetric(float64(n), "B/page")
		})
	}
}
