package vgpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// BenchmarkNaive256 runs cuda_naive at n = 256 with counting on (the speed target: about
// 130 million thread instructions in at most 1.5 s on 2 cores) and reports thread instructions per
// second. (The Go-port emulator it replaced, measured beside it in the same run before it was
// retired, is in docs/benchmarks.md.)
func BenchmarkNaive256(b *testing.B) {
	const n = 256
	m := loadPTX(b, 80)
	k, _ := cuda.LookupKernel("cuda-naive")
	l := k.LaunchFor(n, 80, "float32")
	rng := rand.New(rand.NewPCG(1, 2))
	A, B := Float32Buffer("A", randomMatrix(rng, n)), Float32Buffer("B", randomMatrix(rng, n))
	C := NewBuffer("C", 4*n*n)
	cfg := LaunchConfig{Grid: l.Grid, Block: l.Block, Buffers: []*Buffer{A, B, C},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(n), S32(n), S32(n)}}
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

// BenchmarkNaive256Cached is BenchmarkNaive256 with the cache model on (H100 sizes: an L1 share of
// 30 KiB per block, a 50 MiB L2), as emulate runs it; the issue allows it 25% over the plain run.
func BenchmarkNaive256Cached(b *testing.B) {
	const n = 256
	m := loadPTX(b, 80)
	k, _ := cuda.LookupKernel("cuda-naive")
	l := k.LaunchFor(n, 80, "float32")
	rng := rand.New(rand.NewPCG(1, 2))
	A, B := Float32Buffer("A", randomMatrix(rng, n)), Float32Buffer("B", randomMatrix(rng, n))
	C := NewBuffer("C", 4*n*n)
	cfg := LaunchConfig{Grid: l.Grid, Block: l.Block, Buffers: []*Buffer{A, B, C},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(n), S32(n), S32(n)}, Cache: &CacheConfig{L1Bytes: 30 << 10, L2Bytes: 50 << 20}}
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
}
