package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// lessonSource is bench/gpucheck/launch.cu's copy, transposes (Shared-memory tiling) and reductions (Why
// coalescing matters), as extern "C" kernels, for the virtual GPU.
const lessonSource = `
extern "C" __global__ void mem_copy(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
}
extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
#define TILED(NAME, PAD) \
extern "C" __global__ void NAME(const float* in, float* out, int rows, int cols) { \
    __shared__ float t[32][32 + PAD]; \
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32; \
    for (int j = threadIdx.y; j < 32; j += blockDim.y) \
        if (r0 + j < rows && c < cols) t[j][threadIdx.x] = in[(r0 + j) * cols + c]; \
    __syncthreads(); \
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * 32; \
    for (int j = threadIdx.y; j < 32; j += blockDim.y) \
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = t[threadIdx.x][j]; \
}
TILED(transpose_tiled, 0)
TILED(transpose_padded, 1)
extern "C" __global__ void reduce_smem(const float* in, float* out, int n) {
    __shared__ float s[256];
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
extern "C" __global__ void reduce_shfl(const float* in, float* out, int n) {
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
`

// lessonKernel is a kernel of lessonSource: its entry, its name in Nsight Compute's CSV, and
// whether it is a reduction (launched over n² floats).
type lessonKernel struct {
	Entry, NCU string
	reduce     bool
}

// lessonKernels are lessonSource's kernels, in launch.cu's order.
func lessonKernels() []lessonKernel {
	return []lessonKernel{
		{Entry: "mem_copy", NCU: "mem_copy"},
		{Entry: "transpose_naive", NCU: "transpose_naive"},
		{Entry: "transpose_tiled", NCU: "void transpose_tiled<0>"},
		{Entry: "transpose_padded", NCU: "void transpose_tiled<1>"},
		{Entry: "reduce_smem", NCU: "reduce_smem", reduce: true},
		{Entry: "reduce_shfl", NCU: "reduce_shfl", reduce: true},
	}
}

// launch is k's block and parameters at n (launch.cu: blocks of 32×8 threads, 256 for the
// reductions, which sum n² floats).
func (k lessonKernel) launch(n int, in, out *vgpu.Buffer) (block [3]int, params []vgpu.Arg) {
	if k.reduce {
		return [3]int{256, 1, 1}, []vgpu.Arg{vgpu.Ptr(in), vgpu.Ptr(out), vgpu.S32(int32(n * n))}
	}
	return [3]int{32, 8, 1}, []vgpu.Arg{vgpu.Ptr(in), vgpu.Ptr(out), vgpu.S32(int32(n)), vgpu.S32(int32(n))}
}

// dims parses Nsight Compute's "(128, 512, 1)".
func dims(s string) ([3]int, error) {
	var d [3]int
	_, err := fmt.Sscanf(s, "(%d, %d, %d)", &d[0], &d[1], &d[2])
	return d, err
}

// lessonModule compiles lessonSource for the virtual GPU with the compiler this process has.
func lessonModule(ctx context.Context) (*vgpu.Module, error) {
	nv, cl, err := nvidia.ChosenCompiler()
	if err != nil {
		return nil, err
	}
	ptx, err := nvidia.CompileWith(ctx, nv, cl, lessonSource, "lessons.cu", vgpurun.Arch)
	if err != nil {
		return nil, err
	}
	return vgpu.ParseModule(ptx)
}

// lessonCounts launches k at n in grid on zero inputs (the counts of these kernels do not depend
// on the values) with g's cache model, the occupancy from regs registers per thread (Nsight
// Compute's launch__registers_per_thread), running every block, or sample blocks spread over the
// grid when sample > 0, and returns the counts scaled to the grid.
func lessonCounts(ctx context.Context, mod *vgpu.Module, k lessonKernel, n int, grid [3]int, regs, sample int, g gpumodel.GPU) (vgpu.Counts, gpumodel.Occupancy, error) {
	in, out := vgpu.NewBuffer("in", 4*n*n), vgpu.NewBuffer("out", 4*n*n)
	block, params := k.launch(n, in, out)
	res, err := mod.Resources(k.Entry)
	if err != nil {
		return vgpu.Counts{}, gpumodel.Occupancy{}, err
	}
	lim, err := gpumodel.LookupLimits(g.CC)
	if err != nil {
		return vgpu.Counts{}, gpumodel.Occupancy{}, err
	}
	r, err := lim.Occupancy(block[0]*block[1]*block[2], regs, res.StaticShared, lim.SharedPerSM)
	if err != nil {
		return vgpu.Counts{}, gpumodel.Occupancy{}, err
	}
	o := gpumodel.Occupancy{Registers: regs, SharedBytes: res.StaticShared, Result: r}
	cfg := vgpu.LaunchConfig{Grid: grid, Block: block, Params: params, Buffers: []*vgpu.Buffer{in, out},
		Cache: gpumodel.CacheFor(g, o)}
	if total := grid[0] * grid[1] * grid[2]; sample > 0 && sample < total {
		for i := range sample {
			b := i * total / sample
			cfg.Only = append(cfg.Only, [3]int{b % grid[0], b / grid[0] % grid[1], 0})
		}
	}
	c, err := vgpu.Launch(ctx, mod, k.Entry, cfg)
	return c.Scaled(), o, err
}

// comparison is one kernel's modelled time and memory hierarchy beside Nsight Compute's.
type comparison struct {
	Kernel    string
	Counts    vgpu.Counts
	Occupancy gpumodel.Occupancy
	// Wave is how a sampled launch's DRAM reads were estimated (vgpurun.Result.Wave).
	Wave gpumodel.WaveDRAM
	// Before is the roofline the table showed before the cache model (FP32 FLOPs, 32 bytes per
	// load/store sector at the DRAM bandwidth); Limits the limits model without latency and launch
	// (gpumodel.Model); After the model with them (gpumodel.ModelAt), all on the datasheet GPU at the
	// clock Nsight Compute locked it to.
	Before, Limits, After gpumodel.Time
	HW                    map[string]string
	// SASS is the table's kernel's SASS per PTX line (vgpurun.Result.SASS), which After charges;
	// nil for the lessons' kernels, charged in PTX instructions.
	SASS gpumodel.SASSPerLine
}

func (c comparison) measuredSeconds() float64 { return num(c.HW["gpu__time_duration.sum"]) / 1e9 }

// models fills in c's Before and After from its counts on g at the measured SM clock.
func (c *comparison) models(g gpumodel.GPU) {
	at := g.AtClock(num(c.HW["sm__cycles_elapsed.avg.per_second"]))
	k := c.Counts
	c.Before = gpumodel.Roofline(float64(k.FLOPs), float64(32*(k.LoadSectors+k.StoreSectors)), at)
	c.Limits = gpumodel.Model(k, at)
	c.After = gpumodel.ModelAtSASS(k, at, c.Occupancy, c.SASS)
}

// modelTable is the markdown table of cs: modelled time before and after, measured time, hit rates
// and DRAM bytes, modelled against measured.
func modelTable(cs []comparison) string {
	var b strings.Builder
	b.WriteString("| kernel | roofline µs (bound) | limits µs (bound) | with latency and launch µs (bound) | measured µs | limits / measured | model / measured | L1 hit % model / measured | L2 hit % model / measured | DRAM read MB model / measured | DRAM write MB model / measured |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		k := c.Counts
		l1 := fmt.Sprintf("%.1f / –", k.L1HitRate())
		if v, ok := c.HW["l1tex__t_sector_hit_rate.pct"]; ok {
			l1 = fmt.Sprintf("%.1f / %s", k.L1HitRate(), f1(num(v)))
		}
		sampled := ""
		if k.Sampled {
			sampled = " (sampled)"
		}
		fmt.Fprintf(&b, "| %s%s | %.1f (%s) | %.1f (%s) | %.1f (%s) | %.1f | %.2f | %.2f | %s | %.1f / %s | %.1f / %.1f | %.1f / %.1f |\n", c.Kernel, sampled,
			c.Before.Seconds*1e6, c.Before.Bound, c.Limits.Seconds*1e6, c.Limits.Bound, c.After.Seconds*1e6, c.After.Bound, c.measuredSeconds()*1e6,
			c.Limits.Seconds/c.measuredSeconds(), c.After.Seconds/c.measuredSeconds(), l1, k.L2HitRate(), f1(num(c.HW["lts__t_sector_hit_rate.pct"])),
			float64(k.DRAMReadBytes)/1e6, num(c.HW["dram__bytes_read.sum"])/1e6, float64(k.DRAMWriteBytes)/1e6, num(c.HW["dram__bytes_write.sum"])/1e6)
	}
	return b.String()
}

// emulator runs one launch of a table kernel in the virtual GPU: vgpurun.Run, or in the tests one
// that hands a launch already run back (the tests' sharedRuns).
type emulator func(context.Context, vgpurun.Request) (vgpurun.Result, error)

// compareAll models every kernel of rows (Nsight Compute's, by name) at n on g: the GEMM ladder's
// through run (vgpurun.Run: sampled above vgpurun.MaxN), lessonSource's with lessonCounts (every
// block, or sample of them when sample > 0; skipped, with a note on stderr, without a CUDA compiler).
func compareAll(ctx context.Context, run emulator, rows map[string]map[string]string, n, sample int, g gpumodel.GPU) ([]comparison, error) {
	var out []comparison
	for _, k := range nvidia.Kernels() {
		if k.Entry == "" {
			continue
		}
		hw, ok := rows[k.LaunchFor(n, vgpurun.Arch, "float32").Entry]
		if !ok {
			continue
		}
		res, err := run(ctx, vgpurun.Request{Kernel: k.Name, N: n, DType: "float32", GPU: g, Seed: 1})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
		out = append(out, comparison{Kernel: k.Name, Counts: res.Counts, Occupancy: res.Occupancy, Wave: res.Wave, HW: hw, SASS: res.SASS})
	}
	var mod *vgpu.Module
	for _, k := range lessonKernels() {
		hw, ok := rows[k.NCU]
		if !ok {
			continue
		}
		if mod == nil {
			var err error
			if mod, err = lessonModule(ctx); err != nil {
				return nil, err
			}
		}
		grid, err := dims(hw["Grid Size"]) // launch.cu's grids changed between runs: use the measured one
		if err != nil {
			return nil, fmt.Errorf("%s: grid %q: %w", k.Entry, hw["Grid Size"], err)
		}
		c, o, err := lessonCounts(ctx, mod, k, n, grid, int(num(hw["launch__registers_per_thread"])), sample, g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Entry, err)
		}
		out = append(out, comparison{Kernel: k.Entry, Counts: c, Occupancy: o, HW: hw})
	}
	for i := range out {
		out[i].models(g)
	}
	return out, nil
}
