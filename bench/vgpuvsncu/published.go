package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// rung is one step of a published, measured SGEMM ladder, beside the project's kernel that takes
// the same step (gpu/nvidia/src/matmul.cu).
type rung struct {
	// Step is the publication's name for the step; GFLOPS what it measured, in GFLOP/s.
	Step   string
	GFLOPS float64
	// Kernel is the project's kernel of the same step (the kernel table's name).
	Kernel string
}

// boehmA6000 is Simon Boehm's SGEMM ladder measured on an NVIDIA RTX A6000 at M = N = K = 4092
// ("How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance: a Worklog", 2022,
// siboehm.com/articles/22/CUDA-MMM; the table of github.com/siboehm/SGEMM_CUDA's README), for the
// steps the project's ladder has: the naive kernel whose threadIdx.x walks a column of C (his 1),
// the coalesced one (2), 32×32 shared-memory tiles (3), 1-D blocktiling (4), 2-D blocktiling with
// 128×128 tiles of C, 8×8 outputs per thread and BK = 8 (5), the same with 128-bit loads and a
// transposed A tile (6), and warptiling (10; his is autotuned and ours is not). His
// bank-conflict, autotuning and double-buffering steps (7, 8, 9, 11) have no kernel here.
var boehmA6000 = []rung{
	{"1: Naive", 309.0, "cuda-naive"},
	{"2: GMEM Coalescing", 1986.5, "cuda-coalesced"},
	{"3: SMEM Caching", 2980.3, "cuda-smem"},
	{"4: 1D Blocktiling", 8474.7, "cuda-blocktile1d"},
	{"5: 2D Blocktiling", 15971.7, "cuda-regblock"},
	{"6: Vectorized Mem Access", 18237.3, "cuda-vectorized"},
	{"10: Warptiling", 21779.3, "cuda-warptile"},
}

// boehmN is the size Boehm's table was measured at.
const boehmN = 4092

// modelledRung is a rung with the virtual GPU's modelled time of the project's kernel.
type modelledRung struct {
	rung
	Model gpumodel.Time
	// FLOPs is the GEMM's 2·n³.
	FLOPs float64
}

// GFLOPS is the modelled rate, in GFLOP/s.
func (m modelledRung) GFLOPS() float64 { return m.FLOPs / m.Model.Seconds / 1e9 }

// modelLadder runs each rung's kernel in the virtual GPU with run (vgpurun.Run) at n (sampled, as
// a cell runs it) on g and returns its modelled time.
func modelLadder(ctx context.Context, run emulator, rungs []rung, n int, g gpumodel.GPU) ([]modelledRung, error) {
	var out []modelledRung
	for _, r := range rungs {
		res, err := run(ctx, vgpurun.Request{Kernel: r.Kernel, N: n, DType: "float32", GPU: g, Seed: 1})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Kernel, err)
		}
		out = append(out, modelledRung{rung: r, Model: res.Model, FLOPs: 2 * float64(n) * float64(n) * float64(n)})
	}
	return out, nil
}

// ladderTable is the markdown table of ms: published and modelled GFLOP/s, their ratio and the
// model's dominant term.
func ladderTable(ms []modelledRung) string {
	var b strings.Builder
	b.WriteString("| published step | measured GFLOP/s | project kernel | modelled GFLOP/s | modelled / measured | bound |\n|---|---|---|---|---|---|\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.1f | %.2f | %s |\n", m.Step, m.rung.GFLOPS, m.Kernel, m.GFLOPS(), m.GFLOPS()/m.rung.GFLOPS, m.Model.Bound)
	}
	return b.String()
}

// printPublished prints ladderTable for boehmA6000 on the RTX A6000's gpumodel.
func printPublished() {
	g, err := gpumodel.LookupGPU("RTX A6000")
	if err != nil {
		log.Fatal(err)
	}
	ms, err := modelLadder(context.Background(), vgpurun.Run, boehmA6000, boehmN, g)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("n = %d; virtual GPU modelled on the %s datasheet; measured: Boehm (2022), same GPU, same size\n\n", boehmN, g.Name)
	fmt.Print(ladderTable(ms))

	h, err := gpumodel.LookupGPU("H100 SXM")
	if err != nil {
		log.Fatal(err)
	}
	mod, err := transposeModule(context.Background())
	if err != nil {
		log.Fatalf("the transpose steps need a CUDA compiler: %v", err)
	}
	ts, err := modelTranspose(context.Background(), mod, yencalH100, yencalN, transposeSampledBlocks, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nn = %d, float32; virtual GPU modelled on the %s datasheet (%d consecutive blocks run, scaled); measured: Yen Cal (2025), H100, same size\n\n", yencalN, h.Name, transposeSampledBlocks)
	fmt.Print(transposeTable(ts))
}
