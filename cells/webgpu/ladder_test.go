package webgpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ladderFile is the WGSL file of a ladder kernel, and the prelude static/webgpu/runner.js puts above it.
func ladderFile(k Kernel) (path, prelude string) {
	base := strings.TrimSuffix(strings.TrimPrefix(k.Name, "webgpu-"), "-f16")
	prelude = "alias T = f32;\n"
	if k.F16 {
		prelude = "enable f16;\nalias T = f16;\n"
	}
	return filepath.Join("..", "..", "static", "webgpu", base+".wgsl"), prelude
}

// Every ladder kernel has its WGSL file, with the entry point and bindings the runner uses; where
// naga (wgpu's compiler, as in Firefox) or tint (Dawn's, as in Chrome) is installed, each kernel,
// the f16 variants included, validates with it. (The browser test runs the f32 kernels; SwiftShader
// offers no shader-f16, so only these compilers check the f16 variants here.)
func TestLadderWGSL(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, k := range Ladder {
		path, prelude := ladderFile(k)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		for _, want := range []string{"fn main(", "@binding(0)", "@binding(1)", "@binding(2)", "@binding(3) var<uniform> dims: vec4<u32>"} {
			if !strings.Contains(string(src), want) {
				t.Errorf("%s: %s lacks %q", k.Name, path, want)
			}
		}
		f := filepath.Join(dir, k.Name+".wgsl")
		if err := os.WriteFile(f, []byte(prelude+string(src)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	checked := 0
	for _, tool := range [][]string{{"naga"}, {"tint", "--format", "wgsl", "-o", os.DevNull}} {
		exe, err := exec.LookPath(tool[0])
		if err != nil {
			t.Logf("%s is not installed: not validating with it", tool[0])
			continue
		}
		checked++
		for _, f := range files {
			if out, err := exec.Command(exe, append(tool[1:], f)...).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", tool[0], filepath.Base(f), err, out)
			}
		}
	}
	if checked == 0 {
		t.Skip("neither naga nor tint is installed: the WGSL was not compiled here")
	}
}
