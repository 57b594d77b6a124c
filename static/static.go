// Package static holds the review app's embedded CSS and scripts.
package static

import "embed"

// FS is served under /static/.
//
//go:embed *.css *.js *.svg vendor
var FS embed.FS

// Palette is palette.css, the colours, type scale and spacing of the app,
// light and dark; an exported report embeds it in its own style sheet.
//
//go:embed palette.css
var Palette string
