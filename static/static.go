// Package static embeds the browser side: plain JavaScript modules and CSS, no build step.
package static

import "embed"

// FS holds app.js and style.css, served under /static/.
//
//go:embed *.js *.css
var FS embed.FS
