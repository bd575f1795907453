package vgpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// BenchmarkNaive256 runs cuda_naive at n = 256 with counting on (the speed target: about
// 130 million thread instructions in at most 1.5 s on 2 cores) and reports thread instructions per
// second. (The Go-port emulator it replaced, measured beside it in the same run before it was
// retired, is in docs/benchmarks.md.)
func BenchmarkNaive256(b *testing.B) {
	benchLadder(b, "cuda-naive", 256, false, nil)
}

// BenchmarkNaive256Cached is BenchmarkNaive256 with the cache model on (H100 sizes: an L1 share of
// 30 KiB per block, a 50 MiB L2), as emulate runs it; the issue allows it 25% over the plain run.
func BenchmarkNaive256Cached(b *testing.B) {
	benchLadder(b, "cuda-naive", 256, false, &CacheConfig{L1Bytes: 30 << 10, L2Bytes: 50 << 20})
}

// BenchmarkSmem256 runs cuda_smem (32×32 tiles in shared memory, two barriers per tile) at n = 256
// with counting, the hazard check and the initcheck on: the shared-memory path of the sanitizer,
// which BenchmarkNaive256 does not reach. It reports thread instructions per second.
func BenchmarkSmem256(b *testing.B) {
	benchLadder(b, "cuda-smem", 256, true, nil)
}

// BenchmarkRegblock256 runs cuda_regblock at n = 256 (vector shared loads, 8×8 outputs per thread).
func BenchmarkRegblock256(b *testing.B) {
	benchLadder(b, "cuda-regblock", 256, true, nil)
}

// BenchmarkSmem256Cached and BenchmarkRegblock256Cached are BenchmarkSmem256 and
// BenchmarkRegblock256 with the cache model on, sized as BenchmarkNaive256Cached's.
func BenchmarkSmem256Cached(b *testing.B) {
	benchLadder(b, "cuda-smem", 256, true, &CacheConfig{L1Bytes: 30 << 10, L2Bytes: 50 << 20})
}

func BenchmarkRegblock256Cached(b *testing.B) {
	benchLadder(b, "cuda-regblock", 256, true, &CacheConfig{L1Bytes: 30 << 10, L2Bytes: 50 << 20})
}

// BenchmarkWmma256 and BenchmarkMma256 run the tensor-core rungs (wmma and mma.sync on BF16
// inputs, with ldmatrix) at n = 256, as the other ladder benchmarks.
func BenchmarkWmma256(b *testing.B) {
	benchLadder(b, "cuda-wmma", 256, true, nil)
}

func BenchmarkMma256(b *testing.B) {
	benchLadder(b, "cuda-mma", 256, true, nil)
}

// bf16Buffer holds xs rounded to BF16.
func bf16Buffer(name string, xs []float32) *Buffer {
	u := make([]uint16, len(xs))
	for i, x := range xs {
		u[i] = roundBF16(float64(x), rmNearest, 0)
	}
	return Uint16Buffer(name, u)
}

// benchLadder launches a ladder kernel at n with every count on (C poisoned, as emulate makes it,
// when poisoned: the initcheck then marks C's stores; the cache model when cache is set) and
// reports thread instructions per second and per launch.
func benchLadder(b *testing.B, kernel string, n int, poisoned bool, cache *CacheConfig) {
	b.Helper()
	m := loadPTX(b, 80)
	k, _ := nvidia.LookupKernel(kernel)
	l := k.LaunchFor(n, 80, "float32")
	rng := rand.New(rand.NewPCG(1, 2))
	A, B := Float32Buffer("A", randomMatrix(rng, n)), Float32Buffer("B", randomMatrix(rng, n))
	if _, prec := k.On(80, "float32"); prec == "bf16" {
		A, B = bf16Buffer("A", randomMatrix(rng, n)), bf16Buffer("B", randomMatrix(rng, n))
	}
	C := NewBuffer("C", 4*n*n)
	if poisoned {
		C = NewOutput("C", 4*n*n, Poisoned)
	}
	cfg := LaunchConfig{Grid: l.Grid, Block: l.Block, Buffers: []*Buffer{A, B, C}, Cache: cache,
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(int32(n)), S32(int32(n)), S32(int32(n))}}
	var thread int64
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		c, err := Launch(context.Background(), m, l.Entry, cfg)
		if err != nil {
			b.Fatal(err)
		}
		thread = c.ThreadInstructions
	}
	b.ReportMetric(float64(thread)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mthreadinst/s")
	b.ReportMetric(float64(thread)/1e6, "Mthreadinst/op")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		// the process's CPU time per launch: on a busy machine the wall time also counts the
		// time other processes had the core
		b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
	}
}
