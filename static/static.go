// Package static holds the review app's embedded CSS and scripts.
package static

import "embed"

// FS is served under /static/.
//
//go:embed *.css *.js *.svg vendor
var FS embed.FS
