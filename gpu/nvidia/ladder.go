package nvidia

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// The GPU ladder: the one table of the GPU kernels a lesson cell may name. Everything else about them
// is derived from it: GEMMs (the names, summaries and run-time estimates the server knows), the
// worker's dispatch and launch shapes (gpu/run.go), the virtual GPU's launch shapes
// (vgpurun, for matmul, cuda and simt cells), the entry points the tests look for in src/matmul.cu and the embedded
// PTX, and docs/gpu-kernels.md (KernelsMarkdown; TestKernelsDocIsCurrent fails when it is stale).

// Kernel is one GPU kernel: one row of the table that Kernels returns.
type Kernel struct {
	// Name is what a lesson cell writes in its kernels list.
	Name string
	// Summary is one sentence for learners.
	Summary string
	// Source is the file, relative to the repository root, that holds the kernel's code: the CUDA C++
	// of the playground's own kernels, or for cuBLAS (NVIDIA's closed library) the binding that calls it.
	Source string
	// Entry is the extern "C" __global__ function of Source that is launched, which is also its PTX
	// entry point (".entry name("); "" for cuBLAS.
	Entry string
	// Precision is what the inputs are rounded to before multiplying: "" for the cell's dtype
	// (float32 or float64, accumulated in the same), or "tf32", "bf16" or "f16", accumulated in FP32.
	Precision string
	// Older, when set, replaces Entry and Precision on devices older than compute capability
	// Older.Below (BF16 tensor cores need sm_80; Volta and Turing get the FP16 kernel instead).
	Older *Older
	// MinCC, when set, is the lowest compute capability (major×10 + minor) the kernel runs on at
	// all: its Entry is compiled only from compute_MinCC (cp.async and bf16 mma.sync need sm_80,
	// PTX ISA "cp.async" and "mma"), and an older device refuses it.
	MinCC int
	// DTypes are the cell dtypes it takes; the worker refuses any other at once.
	DTypes []string
	// BLAS says which cuBLAS call runs it; nil for the playground's own kernels, launched from Entry.
	BLAS *BLAS
	// Block is the threads per block (x, y, z) of an own kernel; zero for cuBLAS, which picks its own.
	Block [3]int
	// Tile is the part of C one block computes, in elements along grid x and along grid y: the grid
	// for size n is (⌈n/Tile[0]⌉, ⌈n/Tile[1]⌉, 1). Zero for cuBLAS.
	Tile [2]int
	// AnyBlock says the kernel reads blockDim and computes one entry of C per thread, so any block
	// shape works with the grid ⌈n/block⌉ (a simt cell's `block:` key); the others' tiles are
	// compile-time constants of matmul.cu.
	AnyBlock bool
	// Pad, when over 1, rounds n up to a multiple of Pad before launching (WMMA's m16n16k16
	// fragments need multiples of 16; the host zero-pads the inputs and drops the padding of C).
	Pad int
	// Registers is the registers per thread of an own kernel's Entry as the driver compiled it for
	// an H100 SXM (sm_90) from the embedded compute_80 PTX, as Nsight Compute read them
	// (launch__registers_per_thread, 2026-11-25: bench/vgpuvsncu/testdata/h100-ncu-4096.csv and, for
	// the rungs added later, h100-ncu-newrungs-4096.csv; the tensor-core rungs cuda-mma to
	// cuda-mma-warptile on an H200, the same GH100 SM, 2026-11-26: h200-ncu-newrungs-4096.csv; a test
	// keeps them equal); ptxas for another GPU may allocate a few more or fewer (RungResources has
	// ptxas's per architecture, recorded by go generate). Zero: not measured.
	Registers int
	// Arch, when set, is the one virtual architecture the row's Entry is compiled for, from Source
	// (PTXBuilds): HopperArch ("90a") for the Hopper rungs of hopper.cu, whose PTX loads on compute
	// capability 9.0 only (MinCC 90). "" is matmul.cu's PTXArchs, the best of them per device.
	Arch string
	// TensorMaps are the tensor maps the kernel takes after (A, B, C, M, N, K), in order, each a
	// `const __grid_constant__ CUtensorMap` made by the launcher (cuTensorMapEncodeTiled on a GPU,
	// vgpu.TensorMapArg in the virtual GPU); nil for a kernel without TMA.
	TensorMaps []RungMap
	// SharedBytes is the dynamic shared memory a block is launched with, in bytes (0: none).
	SharedBytes int
	// Persistent, when over 0, makes the grid (min(Persistent, tiles), 1, 1), tiles being the
	// Tile-sized tiles of C, which the kernel's blocks loop over (a persistent tile scheduler).
	Persistent int
	// Cluster, when not zero, is the thread-block cluster the kernel is launched in, in blocks (x, y,
	// z; sm_90 and newer): the worker launches it through cuLaunchKernelEx with the cluster dimension
	// attribute (nvidia.Function.LaunchCluster), its grid a whole number of clusters.
	Cluster [3]int
	// GFLOPS is a deliberately pessimistic throughput, in GFLOP/s (10⁹ FLOP/s), for the Precision the
	// kernel runs in (FP32 for cuBLAS SGEMM), and GFLOPS64 the same for float64 (0: float64 not taken).
	// They are estimates, never measurements and never shown as such (the measurements are in
	// docs/benchmarks.md). They are set several times below what the slowest
	// device the playground supports (compute capability 7.0 and newer; e.g. an NVIDIA T4, 8.1 TFLOP/s
	// FP32 and 0.25 TFLOP/s FP64 peak per its datasheet) should reach, and are used only to refuse a
	// run that would overrun the run time limit (EstimateSeconds).
	GFLOPS, GFLOPS64 float64
}

// Older is a kernel's entry point and precision on devices older than compute capability Below
// (major×10 + minor, e.g. 80 for sm_80).
type Older struct {
	Below     int
	Entry     string
	Precision string
}

// RungMap is a tiled tensor map over one of the row-major padded n×n inputs of a kernel, in its
// input precision (2-byte BF16 for the Hopper rungs), as cuTensorMapEncodeTiled makes it.
type RungMap struct {
	// Of names the matrix: "A" or "B".
	Of string
	// Box is the copied box in elements, columns first (the innermost dimension).
	Box [2]int
	// Swizzle is the shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128.
	Swizzle int
}

// BLAS is a cuBLAS call. With GemmEx false the worker calls cublasSgemm_v2 or cublasDgemm_v2 as the
// cell's dtype says; with GemmEx true it calls cublasGemmEx with A and B of type Input (TypeF32,
// TypeBF16), C in FP32 and compute type Compute (Compute32F, Compute32FFastTF32).
type BLAS struct {
	GemmEx         bool
	Input, Compute int32
}

// Kernels returns the table of GPU kernels in ladder order: cuBLAS SGEMM/DGEMM, cuBLAS on tensor
// cores (TF32, and BF16 inputs with FP32 accumulation), and the playground's own CUDA kernels from
// src/matmul.cu, from the naive one to tensor cores through WMMA. The slice is new on every call.
func Kernels() []Kernel {
	const ownSource = "gpu/nvidia/src/matmul.cu"
	f32, both := []string{"float32"}, []string{"float32", "float64"}
	return append([]Kernel{
		{Name: "cublas", Summary: "NVIDIA cuBLAS SGEMM/DGEMM, the GPU reference",
			Source: "gpu/nvidia/cublas.go", DTypes: both, BLAS: &BLAS{},
			GFLOPS: 1000, GFLOPS64: 50},
		{Name: "cublas-tf32", Summary: "cuBLAS on tensor cores with TF32 inputs, FP32 accumulation",
			Source: "gpu/nvidia/cublas.go", Precision: "tf32", DTypes: f32,
			BLAS:   &BLAS{GemmEx: true, Input: TypeF32, Compute: Compute32FFastTF32},
			GFLOPS: 1000},
		{Name: "cublas-bf16", Summary: "cuBLAS on tensor cores with BF16 inputs, FP32 accumulation",
			Source: "gpu/nvidia/cublas.go", Precision: "bf16", DTypes: f32,
			BLAS:   &BLAS{GemmEx: true, Input: TypeBF16, Compute: Compute32F},
			GFLOPS: 1000},
		{Name: "cuda-naive", Summary: "one thread per element of C, uncoalesced",
			Source: ownSource, Entry: "cuda_naive", DTypes: f32,
			Block: [3]int{32, 8, 1}, Tile: [2]int{32, 8}, AnyBlock: true, Registers: 32, GFLOPS: 25},
		{Name: "cuda-coalesced", Summary: "one thread per element of C, warps read rows",
			Source: ownSource, Entry: "cuda_coalesced", DTypes: f32,
			Block: [3]int{32, 8, 1}, Tile: [2]int{32, 8}, AnyBlock: true, Registers: 32, GFLOPS: 100},
		{Name: "cuda-smem", Summary: "32×32 tiles staged in shared memory",
			Source: ownSource, Entry: "cuda_smem", DTypes: f32,
			Block: [3]int{32, 32, 1}, Tile: [2]int{32, 32}, Registers: 32, GFLOPS: 250},
		{Name: "cuda-blocktile1d", Summary: "1-D blocktiling: 8 outputs of a column per thread, 64×64 tiles",
			Source: ownSource, Entry: "cuda_blocktile1d", DTypes: f32,
			Block: [3]int{512, 1, 1}, Tile: [2]int{64, 64}, Registers: 52, GFLOPS: 300},
		{Name: "cuda-regblock", Summary: "2-D register blocking: 8×8 outputs per thread",
			Source: ownSource, Entry: "cuda_regblock", DTypes: f32,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Registers: 111, GFLOPS: 500},
		{Name: "cuda-vectorized", Summary: "2-D register blocking with 128-bit global and shared-memory loads",
			Source: ownSource, Entry: "cuda_vectorized", DTypes: f32,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Registers: 105, GFLOPS: 500},
		{Name: "cuda-warptile", Summary: "warptiling: each warp computes a 64×32 tile of C in 32×16 sub-tiles",
			Source: ownSource, Entry: "cuda_warptile", DTypes: f32,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Registers: 123, GFLOPS: 500},
		doublebufRow(),
		autotunedRow(),
		{Name: "cuda-wmma", Summary: "tensor cores through WMMA, BF16/FP16 inputs, FP32 accumulation",
			Source: ownSource, Entry: "cuda_wmma_bf16", Precision: "bf16", DTypes: f32,
			Older: &Older{Below: 80, Entry: "cuda_wmma_f16", Precision: "f16"},
			Block: [3]int{128, 4, 1}, Tile: [2]int{64, 64}, Pad: 16, Registers: 38, GFLOPS: 500},
		{Name: "cuda-mma", Summary: "tensor cores through mma.sync: 128×128 tiles staged in shared memory, fed by ldmatrix, BF16 inputs, FP32 accumulation",
			Source: ownSource, Entry: "cuda_mma", Precision: "bf16", DTypes: f32, MinCC: 80,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Pad: 8, Registers: 121, GFLOPS: 500},
		{Name: "cuda-mma-async", Summary: "cuda-mma with cp.async double buffering: the next tiles load while the tensor cores work",
			Source: ownSource, Entry: "cuda_mma_async", Precision: "bf16", DTypes: f32, MinCC: 80,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Pad: 8, Registers: 128, GFLOPS: 500},
		{Name: "cuda-mma-swizzle", Summary: "cuda-mma-async with an XOR-swizzled shared layout: ldmatrix without bank conflicts",
			Source: ownSource, Entry: "cuda_mma_swizzle", Precision: "bf16", DTypes: f32, MinCC: 80,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 128}, Pad: 8, Registers: 126, GFLOPS: 500},
		{Name: "cuda-mma-warptile", Summary: "cuda-mma-swizzle with 64×64 warp tiles in 256×128 block tiles: each ldmatrix'd fragment feeds more mma.sync",
			Source: ownSource, Entry: "cuda_mma_warptile", Precision: "bf16", DTypes: f32, MinCC: 80,
			Block: [3]int{256, 1, 1}, Tile: [2]int{128, 256}, Pad: 8, Registers: 236, GFLOPS: 500},
	}, hopperKernels()...)
}

// hopperKernels are the Hopper rungs of src/hopper.cu (compute_90a PTX): wgmma from shared memory,
// then TMA loads with an mbarrier pipeline, warp specialisation, a persistent tile scheduler, and
// TMA multicast within thread-block clusters.
// Their tensor maps copy 64 columns of k (A) or n (B), 128 bytes of BF16, with the 128-byte
// swizzle that wgmma's descriptors read.
func hopperKernels() []Kernel {
	const src = "gpu/nvidia/src/hopper.cu"
	maps := []RungMap{{Of: "A", Box: [2]int{64, 128}, Swizzle: 128}, {Of: "B", Box: [2]int{64, 64}, Swizzle: 128}}
	// pad: the TMA rungs' inputs are zero-padded to whole tiles, so that every box they copy lies
	// inside its tensor (a box wholly outside is a fault in the virtual GPU).
	row := func(name, summary, entry string, threads, tileN, shared, pad int) Kernel {
		return Kernel{Name: name, Summary: summary, Source: src, Entry: entry, Precision: "bf16",
			DTypes: []string{"float32"}, MinCC: 90, Arch: HopperArch, Block: [3]int{threads, 1, 1},
			Tile: [2]int{tileN, 128}, Pad: pad, SharedBytes: shared, GFLOPS: 500}
	}
	wgmma := row("cuda-wgmma", "Hopper's wgmma.mma_async: two warpgroups multiply 128×128 tiles from swizzled shared memory through descriptors, the threads staging each tile",
		"hopper_wgmma", 256, 128, 0, 8)
	tma := row("cuda-wgmma-tma", "cuda-wgmma with its tiles copied by TMA, four stages ahead on mbarriers with transaction counts",
		"hopper_wgmma_tma", 256, 128, 4*32768+4*8, 128)
	tma.TensorMaps = maps
	ws := row("cuda-wgmma-ws", "warp specialisation: a producer warpgroup issues the TMA copies, two consumer warpgroups (setmaxnreg) multiply 128×256 tiles, meeting only at full and empty mbarriers",
		"hopper_wgmma_ws", 384, 256, 4*49152+8*8, 256)
	ws.TensorMaps = maps
	persistent := row("cuda-wgmma-persistent", "cuda-wgmma-ws with a persistent tile scheduler: 132 blocks, one per H100 SM, loop over the tiles",
		"hopper_wgmma_persistent", 384, 256, 4*49152+8*8, 256)
	persistent.TensorMaps, persistent.Persistent = maps, 132
	// multicast's 1×2 clusters pair the blocks along M: Pad 256 keeps the grid's y even.
	multicast := row("cuda-wgmma-multicast", "cuda-wgmma-ws in 1×2 thread-block clusters: the two blocks share B, each loading half of it by TMA multicast into both, so a block reads 32 KiB of each 48 KiB stage",
		"hopper_wgmma_multicast", 384, 256, 4*49152+8*8, 256)
	multicast.TensorMaps = maps
	return []Kernel{wgmma, tma, ws, persistent, multicast}
}

// LookupKernel finds a row of Kernels by name.
func LookupKernel(name string) (Kernel, bool) {
	for _, k := range Kernels() {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// Launch is how one kernel runs at one size on one device.
type Launch struct {
	// Entry is the PTX entry point to launch; "" for cuBLAS.
	Entry string
	// Precision is what the inputs are rounded to: "float32", "float64", "tf32", "bf16" or "f16".
	Precision string
	// N is the size the kernel runs on: n, or n rounded up to a multiple of the row's Pad.
	N int
	// Grid and Block are the blocks per grid and threads per block (x, y, z); zero for cuBLAS.
	Grid, Block [3]int
}

// Shape returns the size an own kernel is launched on for an n×n×n product (n, or n padded) and
// its grid and block; all zero grids and blocks for cuBLAS. It does not depend on the device.
func (k Kernel) Shape(n int) (padded int, grid, block [3]int) {
	padded = n
	if k.Pad > 1 {
		padded = (n + k.Pad - 1) / k.Pad * k.Pad
	}
	if k.Tile == ([2]int{}) {
		return padded, grid, block
	}
	if k.Persistent > 0 {
		return padded, [3]int{min(k.Persistent, ceilDiv(padded, k.Tile[0])*ceilDiv(padded, k.Tile[1])), 1, 1}, k.Block
	}
	return padded, [3]int{ceilDiv(padded, k.Tile[0]), ceilDiv(padded, k.Tile[1]), 1}, k.Block
}

// On returns the entry point and input precision on a device of compute capability cc (major×10 +
// minor), with "" precision resolved to dtype.
func (k Kernel) On(cc int, dtype string) (entry, precision string) {
	entry, precision = k.Entry, k.Precision
	if k.Older != nil && cc < k.Older.Below {
		entry, precision = k.Older.Entry, k.Older.Precision
	}
	if precision == "" {
		precision = dtype
	}
	return entry, precision
}

// LaunchFor returns the launch of an n×n×n product in dtype on a device of compute capability cc.
func (k Kernel) LaunchFor(n, cc int, dtype string) Launch {
	l := Launch{}
	l.Entry, l.Precision = k.On(cc, dtype)
	l.N, l.Grid, l.Block = k.Shape(n)
	return l
}

// Takes reports whether the kernel accepts matrices of dtype.
func (k Kernel) Takes(dtype string) bool { return slices.Contains(k.DTypes, dtype) }

// EstimateSeconds is a pessimistic guess of one call's duration in seconds for an n×n×n product in
// dtype: the FLOPs actually computed (2·N³, N padded) at GFLOPS or GFLOPS64. A dtype the kernel does
// not take costs nothing (the worker refuses it at once). It is an estimate, never a measurement.
func (k Kernel) EstimateSeconds(n int, dtype string) float64 {
	if !k.Takes(dtype) {
		return 0
	}
	rate := k.GFLOPS
	if dtype == "float64" {
		rate = k.GFLOPS64
	}
	if rate <= 0 {
		return 0
	}
	p, _, _ := k.Shape(n)
	return 2 * float64(p) * float64(p) * float64(p) / (rate * 1e9)
}

// Entries returns every PTX entry point of the table with the lowest compute capability whose
// PTX has it (0: every architecture the playground supports) and the source file (base name) it is
// in, in table order. The tile search's candidates (TuneCandidates) follow the table's rows; an entry
// point is listed once, for the first row that launches it (cuda-autotuned launches a candidate's).
func Entries() []EntryPoint {
	var out []EntryPoint
	seen := map[string]bool{}
	rows := Kernels()
	for _, s := range TuneCandidates() {
		rows = append(rows, s.Kernel())
	}
	for _, k := range rows {
		if k.Entry == "" || seen[k.Entry] {
			continue
		}
		seen[k.Entry] = true
		src := path.Base(k.Source)
		if k.Older == nil {
			out = append(out, EntryPoint{Kernel: k.Name, Entry: k.Entry, MinCC: k.MinCC, Source: src})
			continue
		}
		out = append(out, EntryPoint{Kernel: k.Name, Entry: k.Entry, MinCC: k.Older.Below, Source: src},
			EntryPoint{Kernel: k.Name, Entry: k.Older.Entry, Source: src})
	}
	return out
}

// EntryPoint is one PTX entry point of a kernel, the lowest compute capability it is compiled
// for (0: all), and its source file's base name ("matmul.cu", "hopper.cu").
type EntryPoint struct {
	Kernel, Entry string
	MinCC         int
	Source        string
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// precisionNames are the usual names of the precisions, for the docs.
var precisionNames = map[string]string{"float32": "FP32", "float64": "FP64", "tf32": "TF32", "bf16": "BF16", "f16": "FP16"}

// precisionText describes what a kernel rounds its inputs to and accumulates in, for the docs.
func (k Kernel) precisionText() string {
	if k.Precision == "" {
		var ps []string
		for _, d := range k.DTypes {
			ps = append(ps, precisionNames[d])
		}
		if len(ps) == 1 {
			return ps[0]
		}
		return strings.Join(ps, " or ") + ", as the cell's dtype"
	}
	s := precisionNames[k.Precision] + " inputs"
	if k.Older != nil {
		s += fmt.Sprintf(" (%s below sm_%d)", precisionNames[k.Older.Precision], k.Older.Below)
	}
	return s + ", FP32 accumulation"
}

// computeTypeNames name the cuBLAS type constants a BLAS row uses, for the docs.
var computeTypeNames = map[int32]string{
	TypeF32: "CUDA_R_32F", TypeBF16: "CUDA_R_16BF", TypeF16: "CUDA_R_16F",
}

// KernelsMarkdown renders the table as docs/gpu-kernels.md (`go generate ./gpu/nvidia` writes it;
// TestKernelsDocIsCurrent fails when it is stale).
func KernelsMarkdown() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from gpu/nvidia/ladder.go and rungs.gen.go by `go generate ./gpu/nvidia` (or `go run ./gpu/nvidia/internal/gendoc -out docs/gpu-kernels.md`); DO NOT EDIT. -->\n\n")
	b.WriteString("# The GPU kernels\n\n")
	b.WriteString("The GPU kernels a `matmul` cell may name, in ladder order, from the one table in\n")
	b.WriteString("[gpu/nvidia/ladder.go](../gpu/nvidia/ladder.go). The server's kernel list, the GPU worker's\n")
	b.WriteString("dispatch and launch shapes, the SIMT emulator's default launch shapes (`simt` cells) and this page\n")
	b.WriteString("are all derived from it. Sizes are square: C = A·B with n×n matrices, row-major.\n\n")
	b.WriteString("| kernel | what it is | runs | inputs | dtypes | grid for n | block | source |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, k := range Kernels() {
		runs, prec, grid, block := "", k.precisionText(), "chosen by cuBLAS", "chosen by cuBLAS"
		switch {
		case k.BLAS != nil && k.BLAS.GemmEx:
			runs = fmt.Sprintf("`cublasGemmEx` (A, B %s; compute type %s)", computeTypeNames[k.BLAS.Input], computeName(k.BLAS.Compute))
		case k.BLAS != nil:
			runs = "`cublasSgemm_v2` / `cublasDgemm_v2`"
		default:
			runs = "`" + k.Entry + "`"
			if k.Older != nil {
				runs += fmt.Sprintf(" (sm_%d and newer); `%s` below", k.Older.Below, k.Older.Entry)
			}
			switch {
			case k.Arch != "":
				runs += fmt.Sprintf(" (sm_%d only: compute_%s PTX)", k.MinCC, k.Arch)
			case k.MinCC > 0:
				runs += fmt.Sprintf(" (sm_%d and newer only)", k.MinCC)
			}
			runs += launchExtras(k)
			n := "n"
			if k.Pad > 1 {
				n = "n′"
			}
			grid = fmt.Sprintf("(⌈%s/%d⌉, ⌈%s/%d⌉, 1)", n, k.Tile[0], n, k.Tile[1])
			if k.Persistent > 0 {
				grid = fmt.Sprintf("(min(%d, ⌈%s/%d⌉·⌈%s/%d⌉), 1, 1), looping over the tiles", k.Persistent, n, k.Tile[0], n, k.Tile[1])
			}
			if k.Pad > 1 {
				grid += fmt.Sprintf(", n′ = n rounded up to a multiple of %d (inputs zero-padded)", k.Pad)
			}
			block = fmt.Sprintf("(%d, %d, %d)", k.Block[0], k.Block[1], k.Block[2])
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | [%s](../%s) |\n",
			k.Name, k.Summary, runs, prec, strings.Join(k.DTypes, ", "), grid, block, k.Source, k.Source)
	}
	b.WriteString("\nThe run-time estimate the server uses to refuse a run that would overrun its time limit assumes\n")
	b.WriteString("these throughputs. They are deliberately pessimistic guesses, set several times below what the\n")
	b.WriteString("slowest supported GPU (compute capability 7.0 and newer) should reach, and are **not**\n")
	b.WriteString("measurements: for measured numbers see [benchmarks.md](benchmarks.md).\n\n")
	b.WriteString("| kernel | estimated GFLOP/s, float32 cells | estimated GFLOP/s, float64 cells |\n|---|---|---|\n")
	for _, k := range Kernels() {
		f64 := "—"
		if k.GFLOPS64 > 0 {
			f64 = fmt.Sprint(k.GFLOPS64)
		}
		fmt.Fprintf(&b, "| `%s` | %g | %s |\n", k.Name, k.GFLOPS, f64)
	}
	writeRungResources(&b)
	writeTuneRecords(&b)
	return b.String()
}

// launchExtras describes, for the docs, what an own kernel is launched with besides its grid and
// block: its tensor maps and dynamic shared memory.
func launchExtras(k Kernel) string {
	var parts []string
	for _, m := range k.TensorMaps {
		parts = append(parts, fmt.Sprintf("a tensor map of %s (box %d×%d, %d-byte swizzle)", m.Of, m.Box[0], m.Box[1], m.Swizzle))
	}
	if k.SharedBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes of dynamic shared memory", k.SharedBytes))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; with " + strings.Join(parts, ", ")
}

func computeName(c int32) string {
	switch c {
	case Compute32F:
		return "CUBLAS_COMPUTE_32F"
	case Compute32FFastTF32:
		return "CUBLAS_COMPUTE_32F_FAST_TF32"
	}
	return fmt.Sprint(c)
}
