package vgpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// BenchmarkSmem256 runs cuda_smem (32×32 tiles in shared memory, two barriers per tile) at n = 256
// with counting, the hazard check and the initcheck on: the shared-memory path of the sanitizer,
// which BenchmarkNaive256 does not reach. It reports thread instructions per second.
func BenchmarkSmem256(b *testing.B) {
	benchLadder(b, "cuda-smem", 256)
}

// BenchmarkRegblock256 runs cuda_regblock at n = 256 (vector shared loads, 8×8 outputs per thread).
func BenchmarkRegblock256(b *testing.B) {
	benchLadder(b, "cuda-regblock", 256)
}

func benchLadder(b *testing.B, kernel string, n int) {
	b.Helper()
	m := loadPTX(b, 80)
	k, _ := cuda.LookupKernel(kernel)
	l := k.LaunchFor(n, 80, "float32")
	rng := rand.New(rand.NewPCG(1, 2))
	A, B := Float32Buffer("A", randomMatrix(rng, n)), Float32Buffer("B", randomMatrix(rng, n))
	C := NewOutput("C", 4*n*n, Poisoned) // as emulate makes it: the initcheck marks C's stores
	cfg := LaunchConfig{Grid: l.Grid, Block: l.Block, Buffers: []*Buffer{A, B, C},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(int32(n)), S32(int32(n)), S32(int32(n))}}
	var thread int64
	b.ResetTimer()
	for b.Loop() {
		c, err := Launch(context.Background(), m, l.Entry, cfg)
		if err != nil {
			b.Fatal(err)
		}
		thread = c.ThreadInstructions
	}
	b.ReportMetric(float64(thread)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mthreadinst/s")
	b.ReportMetric(float64(thread)/1e6, "Mthreadinst/op")
}
