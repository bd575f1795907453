// Package layout holds no code: its test checks rules of the module's package layout that the
// compiler does not (no package imports its namesake; chart imports no GPU or harness package; vgpu
// imports no timing model) by parsing every Go file's imports.
package layout
