package static

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every colour of text in the palette reads against every background it
// may sit on with a contrast of at least 4.5:1 (WCAG 2 AA for text of any
// size), in light and in dark: the app's smallest text is 12 px. An
// agent's badge colour (--aN) sits on its own background (--aN-bg) only.
func TestPaletteContrast(t *testing.T) {
	light, dark, ok := strings.Cut(Palette, "@media (prefers-color-scheme: dark)")
	if !ok {
		t.Fatal("palette.css has no dark scheme")
	}
	text := []string{"fg", "muted", "faint", "accent", "ok", "bad", "warn",
		"hl-keyword", "hl-string", "hl-number", "hl-comment", "hl-name", "hl-type", "t-cyan"}
	backgrounds := []string{"bg", "surface", "surface-2", "sunken", "add-bg", "del-bg", "accent-bg", "ok-bg", "bad-bg", "warn-bg"}
	for _, scheme := range []struct {
		name   string
		colors map[string]string
	}{{"light", paletteColors(light)}, {"dark", paletteColors(dark)}} {
		check := func(fg, bg string) {
			f, b := scheme.colors[fg], scheme.colors[bg]
			if f == "" || b == "" {
				t.Errorf("%s: --%s or --%s is missing", scheme.name, fg, bg)
				return
			}
			if c := contrast(t, f, b); c < 4.5 {
				t.Errorf("%s: --%s %s on --%s %s has contrast %.2f; want at least 4.5", scheme.name, fg, f, bg, b, c)
			}
		}
		for _, fg := range text {
			for _, bg := range backgrounds {
				check(fg, bg)
			}
		}
		for n := 1; n <= 9; n++ {
			check(fmt.Sprintf("a%d", n), fmt.Sprintf("a%d-bg", n))
		}
	}
}

var paletteColor = regexp.MustCompile(`--([a-z0-9-]+):\s*(#[0-9a-fA-F]{6})\b`)

// paletteColors is the colour tokens a block of palette.css sets.
func paletteColors(css string) map[string]string {
	m := map[string]string{}
	for _, kv := range paletteColor.FindAllStringSubmatch(css, -1) {
		m[kv[1]] = kv[2]
	}
	return m
}

// contrast is WCAG 2's contrast ratio of two #rrggbb colours.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func luminance(t *testing.T, hex string) float64 {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	channel := func(shift uint) float64 {
		c := float64(v>>shift&0xff) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	return 0.2126*channel(16) + 0.7152*channel(8) + 0.0722*channel(0)
}
