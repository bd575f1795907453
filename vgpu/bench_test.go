package vgpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/kernels/simt"
)

// BenchmarkNaive256 runs cuda_naive at n = 256 with counting on (the speed target: about
// 130 million thread instructions in at most 1.5 s on 2 cores) and reports thread instructions per
// second. BenchmarkSIMTNaive256 runs the Go-port emulator (kernels/simt) on the same kernel.
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

func BenchmarkSIMTNaive256(b *testing.B) {
	const n = 256
	mm, err := simt.LadderKernel("naive")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	A := simt.NewGlobal("A", randomMatrix(rng, n))
	B := simt.NewGlobal("B", randomMatrix(rng, n))
	C := simt.NewGlobal("C", make([]float32, n*n))
	for b.Loop() {
		grid, block, kern := mm.Launch(A, B, C, n, simt.Shape{})
		if _, err := simt.Launch(context.Background(), simt.Config{Grid: grid, Block: block}, kern); err != nil {
			b.Fatal(err)
		}
	}
}
