package cellstest

import (
	"context"
	"os"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// With a Memo, a source compiled before gives what it gave then, without NVRTC (here a zero NVRTC,
// which would fail any compile); another name is another compile.
func TestCompileMemoHandsBackACompile(t *testing.T) {
	memo := &CompileMemo{done: map[[3]string]memoCompile{{"src", "cell.cu", ""}: {ptx: "kept PTX"}}}
	g := NoGPU{NVRTC: &nvidia.NVRTC{}, Memo: memo}
	if got, err := g.Compile(context.Background(), "src", "cell.cu", ""); got != "kept PTX" || err != nil {
		t.Errorf("got %q, %v; want the kept PTX", got, err)
	}
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping the compiles: no NVRTC (%v)", err)
	}
	g.NVRTC = nv
	src := "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"
	first, err := g.Compile(context.Background(), src, "k.cu", "")
	if err != nil {
		t.Fatal(err)
	}
	again, err := g.Compile(context.Background(), src, "k.cu", "")
	if err != nil || again != first || len(memo.done) != 2 {
		t.Errorf("again: %v, same PTX %v, %d compiles kept; want the first's, 2 kept", err, again == first, len(memo.done))
	}
	if want, err := (NoGPU{NVRTC: nv}).Compile(context.Background(), src, "k.cu", ""); err != nil || want != first {
		t.Errorf("without a memo: %v, same PTX %v", err, want == first)
	}
}
