// Package static embeds the browser side: plain JavaScript modules and CSS, no build step.
package static

import "embed"

// FS holds app.js, style.css and the WebGPU runner with its WGSL ladder (webgpu/), served under
// /static/.
//
//go:embed *.js *.css webgpu
var FS embed.FS
