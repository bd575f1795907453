package webgpu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/harness"
)

// ladderFile is the WGSL file of a ladder kernel, and the prelude static/webgpu/runner.js puts above it.
func ladderFile(k Kernel) (path, prelude string) {
	base := strings.TrimSuffix(strings.TrimPrefix(k.Name, "webgpu-"), "-f16")
	prelude = "alias T = f32;\n"
	if k.F16 {
		prelude = "enable f16;\nalias T = f16;\n"
	}
	return filepath.Join("..", "..", "..", "static", "webgpu", base+".wgsl"), prelude
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

// Each ladder kernel's Tile is the tile of C its WGSL computes per workgroup: the workgroup size,
// or the BM constant of a register-blocked kernel; and the task carries its dispatch and row length.
func TestLadderTiles(t *testing.T) {
	wg := regexp.MustCompile(`@workgroup_size\((\d+), (\d+)\)`)
	bm := regexp.MustCompile(`const BM = (\d+)u;`)
	for _, k := range Ladder {
		path, _ := ladderFile(k)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := wg.FindStringSubmatch(string(src))
		if m == nil || m[1] != m[2] {
			t.Fatalf("%s: no square @workgroup_size in %s", k.Name, path)
		}
		want := m[1]
		if b := bm.FindStringSubmatch(string(src)); b != nil {
			want = b[1]
		}
		if got := strconv.Itoa(k.Tile); got != want {
			t.Errorf("%s: Tile %s, its WGSL computes %s per workgroup", k.Name, got, want)
		}
	}
	p := &page{answer: goodAnswer(swiftshader)}
	if err := Measure(context.Background(), p, Request{Kernels: []TaskKernel{{Name: "webgpu-regblock"}, {Name: "webgpu-tiled"}}, Sizes: []int{100}, Repeats: 1}, func(harness.Result) {}); err != nil {
		t.Fatal(err)
	}
	rb, tl := p.tasks[1].Kernels[0], p.tasks[1].Kernels[1] // tasks[0] asks for the adapter
	if *rb.Dispatch != [3]int{2, 2, 1} || rb.LD != 100 || *tl.Dispatch != [3]int{7, 7, 1} || tl.LD != 100 {
		t.Errorf("regblock %v ld %d, tiled %v ld %d at n=100", *rb.Dispatch, rb.LD, *tl.Dispatch, tl.LD)
	}
}
