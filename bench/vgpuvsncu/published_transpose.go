package main

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// transposeSource is the transpose steps as a learner writes them (testdata/transpose_steps.cu).
//
//go:embed testdata/transpose_steps.cu
var transposeSource string

// transposeStep is one step of a published, measured transpose table, beside the kernel of
// transposeSource that takes the same step, launched with the same block.
type transposeStep struct {
	// Step is the publication's name for the step; GBps what it measured, in GB/s (2·n²·4 bytes,
	// the matrix read and written once, over the kernel's time).
	Step  string
	GBps  float64
	Entry string
	Block [3]int
}

// yencalH100 is Yen Cal's transpose table on an NVIDIA H100 at n = 32768, float32 ("Optimizing GPU
// Matrix Transpose: From 14% to 88% of Peak Bandwidth", 2025-12-24,
// yencal.github.io/gpu-matrix-transpose-optimization; code github.com/yencal/gpu-matrix-transpose):
// its "Theoretical Peak: 3352.3 GB/s" is the H100 SXM5's 3.35 TB/s. The steps are Mark Harris's:
// the naive transpose, a 32×32 shared-memory tile with bank conflicts, the tile padded to 33
// columns, and the padded tile with each thread moving 4 rows (his "Coarsen4"); his vectorised and
// 64×64 variants have no kernel here.
var yencalH100 = []transposeStep{
	{"Naive (32×32)", 475.5, "transpose_naive", [3]int{32, 32, 1}},
	{"Tiled (32×32)", 996.1, "transpose_smem", [3]int{32, 32, 1}},
	{"TiledPadded (32×32)", 1693.4, "transpose_smem_padded", [3]int{32, 32, 1}},
	{"Coarsen4 (32×8)", 2772.4, "transpose_padded_4rows", [3]int{32, 8, 1}},
}

// yencalN is the size Yen Cal's table was measured at: 32768×32768 floats, 4 GiB a matrix.
const yencalN = 32768

// transposeSampledBlocks is the run of consecutive blocks (in dispatch order) the comparison
// emulates of each step's grid of (n/32)² blocks: one row of the grid at n = 32768, the blocks a
// whole H100 (132 SMs × 2 blocks of 1024 threads, or × 8 of 256) runs about 4 and 1 waves of.
const transposeSampledBlocks = 1024

// transposeModule compiles transposeSource for the virtual GPU with the compiler this process has.
func transposeModule(ctx context.Context) (*vgpu.Module, error) {
	nv, cl, err := nvidia.ChosenCompiler()
	if err != nil {
		return nil, err
	}
	ptx, err := nvidia.CompileWith(ctx, nv, cl, transposeSource, "transpose_steps.cu", vgpurun.Arch)
	if err != nil {
		return nil, err
	}
	return vgpu.ParseModule(ptx)
}

// modelledTranspose is a step with the virtual GPU's counts and modelled time of its kernel at N.
type modelledTranspose struct {
	transposeStep
	N      int
	Counts vgpu.Counts
	Model  gpumodel.Time
}

// GBps is the modelled bandwidth, in GB/s, counted as the publication counts it.
func (m modelledTranspose) GBps() float64 {
	return 2 * 4 * float64(m.N) * float64(m.N) / m.Model.Seconds / 1e9
}

// transposeOccupancy is the theoretical occupancy of entry in blocks of block threads on g: the
// kernels need fewer than 32 registers a thread (a few indices and one value), so blocks are
// limited by threads, never by registers, whatever ptxas allocates below 32.
func transposeOccupancy(mod *vgpu.Module, entry string, block [3]int, g gpumodel.GPU) (gpumodel.Occupancy, error) {
	res, err := mod.Resources(entry)
	if err != nil {
		return gpumodel.Occupancy{}, err
	}
	lim, err := gpumodel.LookupLimits(g.CC)
	if err != nil {
		return gpumodel.Occupancy{}, err
	}
	const regs = 32
	r, err := lim.Occupancy(block[0]*block[1]*block[2], regs, res.StaticShared, lim.SharedPerSM)
	if err != nil {
		return gpumodel.Occupancy{}, err
	}
	return gpumodel.Occupancy{Registers: regs, SharedBytes: res.StaticShared, Result: r}, nil
}

// modelTranspose launches each step's kernel at n on g (grid of (n/32)² blocks; at most sample
// consecutive blocks run, from block 0, and the counts are scaled to the grid) on zero inputs (the
// counts of these kernels do not depend on the values) with g's cache model, and returns its
// modelled time (gpumodel.ModelAt). The buffers are n² floats each: at n = 32768 two of 4 GiB,
// of which only the pages the sampled blocks touch are ever written.
func modelTranspose(ctx context.Context, mod *vgpu.Module, steps []transposeStep, n, sample int, g gpumodel.GPU) ([]modelledTranspose, error) {
	var out []modelledTranspose
	for _, s := range steps {
		in, freeIn, err := bigBuffer("in", 4*n*n)
		if err != nil {
			return nil, err
		}
		dst, freeOut, err := bigBuffer("out", 4*n*n)
		if err != nil {
			freeIn()
			return nil, err
		}
		c, o, err := launchTranspose(ctx, mod, s, n, sample, in, dst, g)
		freeIn()
		freeOut()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Entry, err)
		}
		out = append(out, modelledTranspose{transposeStep: s, N: n, Counts: c, Model: gpumodel.ModelAt(c, g, o)})
	}
	return out, nil
}

// launchTranspose runs s's kernel at n from in to dst as modelTranspose says, and returns its
// counts scaled to the grid and its occupancy on g.
func launchTranspose(ctx context.Context, mod *vgpu.Module, s transposeStep, n, sample int, in, dst *vgpu.Buffer, g gpumodel.GPU) (vgpu.Counts, gpumodel.Occupancy, error) {
	o, err := transposeOccupancy(mod, s.Entry, s.Block, g)
	if err != nil {
		return vgpu.Counts{}, o, err
	}
	grid := [3]int{n / 32, n / 32, 1}
	cfg := vgpu.LaunchConfig{Grid: grid, Block: s.Block, Params: []vgpu.Arg{vgpu.Ptr(in), vgpu.Ptr(dst), vgpu.S32(int32(n))},
		Buffers: []*vgpu.Buffer{in, dst}, Cache: gpumodel.CacheFor(g, o)}
	if total := grid[0] * grid[1]; sample > 0 && sample < total {
		for i := range sample {
			cfg.Only = append(cfg.Only, [3]int{i % grid[0], i / grid[0], 0})
		}
	}
	c, err := vgpu.Launch(ctx, mod, s.Entry, cfg)
	return c.Scaled(), o, err
}

// transposeTable is the markdown table of ms: published and modelled GB/s, their ratio and the
// model's dominant term.
func transposeTable(ms []modelledTranspose) string {
	var b strings.Builder
	b.WriteString("| published step | measured GB/s | kernel (testdata/transpose_steps.cu) | modelled GB/s | modelled / measured | bound |\n|---|---|---|---|---|---|\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.1f | %.2f | %s |\n", m.Step, m.transposeStep.GBps, m.Entry, m.GBps(), m.GBps()/m.transposeStep.GBps, m.Model.Bound)
	}
	return b.String()
}
