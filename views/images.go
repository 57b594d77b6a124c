package views

import (
	"fmt"
	"strconv"
	"strings"
)

// ImageView is an image of a step: a thumbnail that opens it whole.
type ImageView struct {
	N         int    // its number in the step, from 1
	MediaType string // as the writer claims it
	Size      string // decoded, for reading: 312 KB
	Src       string // its URL; empty where it is left out (an export without images)
	Data      string // its base64 text, for an export that includes it; never rendered as is
}

// Alt names the image for whoever cannot see it.
func (i ImageView) Alt(seq int64) string {
	return fmt.Sprintf("Image %d of step %s (%s, %s)", i.N, strconv.FormatInt(seq, 10), i.MediaType, i.Size)
}

// Inline reports an image carried in its page (an export's data: URI).
func (i ImageView) Inline() bool { return strings.HasPrefix(i.Src, "data:") }

// ExportImagesCSP is the export's policy when it carries its images, as
// data: URIs: the only images it may show.
var ExportImagesCSP = ExportCSP + "; img-src data:"

// CSP is the export's Content-Security-Policy.
func (p ExportPage) CSP() string {
	if p.Images {
		return ExportImagesCSP
	}
	return ExportCSP
}
