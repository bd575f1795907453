package measure

// Request asks the GPU worker (package gpu, docs/worker.md) to do one thing.
type Request struct {
	ID int64 `json:"id"`
	// Op is "probe" (answer with the device report), "compile" (CUDA C++ Source, named Name in the
	// compiler's log, to PTX for compute_<Arch> with NVRTC, or clang where NVRTC is missing; Arch
	// as PTX writes it after "compute_": "80", "90a", nvidia.CompileFor) or
	// "run" (time Kernel on n×n×n).
	Op     string `json:"op"`
	Source string `json:"source,omitempty"`
	Name   string `json:"name,omitempty"`
	Arch   string `json:"arch,omitempty"`
	// MemoryLimit (compile), when set, makes the worker limit its own data (RLIMIT_DATA) to that
	// many bytes before it loads NVRTC or starts clang (which inherits the limit), confine itself
	// (compileHere), and exit after answering: the Compiler's one-compile workers.
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// Sass (compile), when set, asks the worker to assemble the PTX with ptxas -v for each sm_<N>
	// (at most gpu.MaxSass) in the same confinement, and report each kernel's registers, shared
	// memory and spills (gpu.Response's Resources).
	Sass []int `json:"sass,omitempty"`
	// Disassemble (compile, with Sass) also asks for the SASS of the first of Sass's architectures:
	// ptxas -lineinfo, then nvdisasm -g, in the same confinement (gpu.Response's SASS).
	Disassemble bool `json:"disassemble,omitempty"`
	// SassLines (compile, with Sass) also asks for the SASS instructions that each line of the PTX
	// became for the first of Sass's architectures (nvidia.SASSPerPTXLine: ptxas -lineinfo on the PTX
	// with a line table of its own lines, nvdisasm -g), which the time model charges (gpu.Response's
	// SASSLines).
	SassLines bool `json:"sass_lines,omitempty"`

	// run: the kernel (a name of the GPU kernel table, nvidia.Kernels: docs/gpu-kernels.md; or custom
	// with PTX, Entry, Block and Grid: the PTX of a learner's kernel, compiled beforehand by the
	// sandboxed Compiler, for the device's architecture or an older one; the worker compiles no
	// learner source), the size, precision, timed repeats after one warm-up, and whether to time the
	// copies too. A custom kernel computes Problem (a name of the problems table; "" is matmul),
	// launched with SharedBytes of dynamic shared memory per block and checked at Precision
	// (fp32, tf32, bf16, fp16; "" is the dtype's own).
	Kernel      string `json:"kernel,omitempty"`
	N           int    `json:"n,omitempty"`
	DType       string `json:"dtype,omitempty"`
	Repeats     int    `json:"repeats,omitempty"`
	Transfers   bool   `json:"transfers,omitempty"`
	PTX         string `json:"ptx,omitempty"`
	Entry       string `json:"entry,omitempty"`
	Block       [3]int `json:"block,omitempty"`
	Grid        [3]int `json:"grid,omitempty"`
	Problem     string `json:"problem,omitempty"`
	SharedBytes int    `json:"shared_bytes,omitempty"`
	Precision   string `json:"precision,omitempty"`
	// TensorMaps (custom) are the tiled tensor maps the kernel takes after its problem's parameters,
	// in order, as `const __grid_constant__ CUtensorMap` parameters: the worker makes each with
	// cuTensorMapEncodeTiled over the problem's matrix (at most MaxTensorMaps).
	TensorMaps []TensorMap `json:"tensor_maps,omitempty"`
}

// MaxTensorMaps bounds a request's tensor maps (a kernel's parameters are 4 KiB at most; a map is
// 128 bytes).
const MaxTensorMaps = 8

// TensorMap is a tiled tensor map (TMA) of one of a problem's row-major n×n matrices: Param (the
// kernel parameter, for errors), Of (the problem's buffer name), Box (the box one copy moves, in
// elements, columns first, as cuTensorMapEncodeTiled's boxDim) and Swizzle (the shared-memory swizzle
// span in bytes: 0, 32, 64 or 128).
type TensorMap struct {
	Param   string `json:"param"`
	Of      string `json:"of"`
	Box     [2]int `json:"box"`
	Swizzle int    `json:"swizzle,omitempty"`
}

// Device describes one GPU as the driver reports it.
type Device struct {
	Ordinal int    `json:"ordinal"`
	Name    string `json:"name"`
	// ComputeCapability is major*10+minor, e.g. 90 for sm_90 (Hopper).
	ComputeCapability int `json:"compute_capability"`
	SMs               int `json:"sms"`
	// MemoryBytes is the total device memory in bytes.
	MemoryBytes uint64 `json:"memory_bytes"`
	// ClockKHz is the SM clock and MemoryClockKHz the memory clock, in kHz; MemoryBusBits the memory
	// bus width in bits.
	ClockKHz       int `json:"clock_khz"`
	MemoryClockKHz int `json:"memory_clock_khz"`
	MemoryBusBits  int `json:"memory_bus_bits"`
	L2Bytes        int `json:"l2_bytes"`
}

// fp32LanesPerSM is FP32 fused multiply-add results per clock per SM, from the CUDA C++ Programming
// Guide, "Arithmetic Instructions" (throughput of native arithmetic instructions), by compute
// capability.
var fp32LanesPerSM = map[int]int{70: 64, 72: 64, 75: 64, 80: 64, 86: 128, 87: 128, 89: 128, 90: 128, 100: 128, 120: 128}

// PeakFP32 is the device's FP32 peak in FLOP/s derived from its attributes: SMs × FP32 lanes per SM ×
// 2 (an FMA is two FLOPs) × SM clock. ok is false for a compute capability not in the table. A
// derived figure, not a measurement; boost clocks make real peaks differ.
func (d Device) PeakFP32() (flops float64, ok bool) {
	lanes, ok := fp32LanesPerSM[d.ComputeCapability]
	if !ok {
		return 0, false
	}
	return float64(d.SMs) * float64(lanes) * 2 * float64(d.ClockKHz) * 1e3, true
}

// Bandwidth is the device memory bandwidth in bytes/s derived from its attributes: 2 transfers per
// memory clock (double data rate) × bus width in bytes. A derived figure, not a measurement.
func (d Device) Bandwidth() float64 {
	return 2 * float64(d.MemoryClockKHz) * 1e3 * float64(d.MemoryBusBits) / 8
}
