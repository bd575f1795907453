package gpumodel

// The datasheet: published figures of GPUs (peak FP32 FLOP/s, DRAM bandwidth, SMs, compute
// capability, caches, latencies, with their sources) and the roofline time model.

import (
	"fmt"
	"strings"
)

// GPU is a datasheet description of a GPU, for the roofline-style time model.
type GPU struct {
	Name string `json:"name"`
	SMs  int    `json:"sms"`
	// FP32 is the peak FP32 rate (non-tensor) in FLOP/s; DRAM the memory bandwidth in bytes/s.
	FP32 float64 `json:"fp32_flops"`
	DRAM float64 `json:"dram_bytes_per_second"`
	// Clock is the boost clock in Hz, as the FP32 peak implies it: FP32 / (2 FLOPs × SMs × FP32
	// lanes per SM: 128 on Hopper, Ada and GA102, 64 on GA100 and Turing, from the architecture
	// whitepapers); it scales the atomic rates measured on an H100 to other GPUs (AtomicSeconds).
	Clock float64 `json:"boost_clock_hz"`
	// Source is where the figures come from.
	Source string `json:"source"`
	// CC is the compute capability ("9.0"), whose per-SM limits (Limits, LookupLimits) give a kernel's
	// theoretical occupancy on this GPU; from the CUDA GPUs list (developer.nvidia.com/cuda-gpus).
	CC string `json:"compute_capability"`
	// L1Shared is the combined L1 data cache and shared memory of one SM in bytes (the L1 is what
	// the shared-memory carve-out leaves); L2 the L2 cache in bytes; L2PerClock the L2's bandwidth
	// in bytes per SM clock (0: not published or measured, and the model has no L2 term). All three
	// from CacheSource.
	L1Shared    int     `json:"l1_shared_bytes_per_sm"`
	L2          int     `json:"l2_bytes"`
	L2PerClock  float64 `json:"l2_bytes_per_clock"`
	CacheSource string  `json:"cache_source"`
	// Latency is how long one warp waits for a result, by where it comes from (Model's
	// latency term); the zero value: not known, and the model has no latency term.
	Latency Latencies `json:"latency"`
}

// Latencies are the cycles (SM clocks) from issuing an instruction to its result being usable by
// the next instruction of the same warp, measured by pointer chasing and dependent chains (one warp,
// nothing else running), with where each figure comes from.
type Latencies struct {
	// L1, L2 and DRAM are a global load served by the L1, the L2, and DRAM; Shared a shared-memory
	// load; ALU a dependent FP32 or integer add, multiply or FMA; MMA a dependent tensor-core
	// mma.sync m16n8k16 (16-bit inputs, FP32 accumulation; 0: not known, and the ALU's is used).
	L1, L2, DRAM, Shared, ALU, MMA float64
	Source                         string
}

// Latency sources, cited by Latencies.Source.
const (
	// markdewing/AI_kernels, latency/README.md (github.com/markdewing/AI_kernels, 2025): pointer-chase
	// latencies in cycles on V100, A100 SXM, RTX 4090, H100 SXM, GH200 and Blackwell parts, one
	// thread, clocks not locked.
	dewingLatency = "pointer chase of github.com/markdewing/AI_kernels, latency/README.md"
	// Y. Arafa, A. A. Badawy, G. Chennupati, N. Santhi, S. Eidenbenz, "Instructions' Latencies
	// Characterization for NVIDIA GPGPUs" (arXiv:1905.08778, 2019), as tabulated in LANL's PPT-GPU
	// (arch_latencies_config.py): per-generation dependent-instruction and memory latencies in cycles.
	arafaLatency = "Arafa et al., \"Instructions' Latencies Characterization for NVIDIA GPGPUs\" (arXiv:1905.08778, 2019)"
)

// Latencies of the GPUs below. The FMA's 4 cycles are Arafa et al.'s for Volta and Turing (fma, add,
// mul: 4), as Jia et al. measured them on Volta ("Dissecting the NVIDIA Volta GPU Architecture via
// Microbenchmarking", 2018); no figure for Ampere, Ada or Hopper is stored here, so 4 is assumed. The
// shared-memory load's is Arafa et al.'s Turing figure (21 cycles; Volta 18), assumed for the later
// GPUs, for which no measurement is stored here. The mma.sync's 24 cycles are Hopper's: 24.09 on an
// H100 SXM (one warp, one accumulator chain, f32.f16.f16.f32: a run of Luo et al.'s
// microbenchmarks, github.com/Johnsonms/NVIDIA-Hopper-Benchmark,
// reproduction/H100-dapperdingo/raw/mma_m16n8k16.log) and 24.9 on an H200 with BF16 inputs
// (bench/gpucheck/mma_rate.cu, 2026-11-26); assumed for the others, for which none is stored here.
var (
	h100Latency  = Latencies{L1: 40, L2: 291, DRAM: 700, Shared: 21, ALU: 4, MMA: 24, Source: "H100 SXM: L1, L2, DRAM from the " + dewingLatency + "; shared memory and FMA from " + arafaLatency + " (Turing, assumed); mma.sync measured on an H100 SXM and an H200"}
	a100Latency  = Latencies{L1: 39, L2: 210, DRAM: 550, Shared: 21, ALU: 4, MMA: 24, Source: "A100 SXM: L1, L2, DRAM from the " + dewingLatency + "; shared memory and FMA from " + arafaLatency + " (Turing, assumed); mma.sync: Hopper's (assumed)"}
	t4Latency    = Latencies{L1: 27, L2: 234, DRAM: 424, Shared: 21, ALU: 4, MMA: 24, Source: "Turing (RTX): every figure from " + arafaLatency + "; the T4's own not stored, the same architecture's assumed; mma.sync: Hopper's (assumed)"}
	ada4Latency  = Latencies{L1: 40, L2: 296, DRAM: 636, Shared: 21, ALU: 4, MMA: 24, Source: "RTX 4090 (AD102): L1, L2, DRAM from the " + dewingLatency + ", assumed for the RTX 4080 (AD103); shared memory and FMA from " + arafaLatency + " (Turing, assumed); mma.sync: Hopper's (assumed)"}
	ga102Latency = Latencies{L1: 39, L2: 210, DRAM: 550, Shared: 21, ALU: 4, MMA: 24, Source: "A100 SXM (GA100): L1, L2, DRAM from the " + dewingLatency + ", assumed for GA102, which has no measurement stored here; shared memory and FMA from " + arafaLatency + " (Turing, assumed); mma.sync: Hopper's (assumed)"}
)

// SchedulersPerSM is the warp schedulers of an SM, each issuing at most one warp instruction per
// clock: four processing blocks per SM on Volta, Turing, Ampere, Ada and Hopper (the architecture
// whitepapers' SM diagrams: "four processing blocks", one warp scheduler and dispatch unit each).
const SchedulersPerSM = 4

// SharedBytesPerClock is the shared-memory bandwidth of an SM in bytes per clock: 32 banks of 4
// bytes, one wavefront per clock (CUDA C++ Programming Guide, "Shared Memory" of compute
// capabilities 5.x–9.0: 32 banks, successive 32-bit words in successive banks; each bank serves
// one 32-bit word per clock).
const SharedBytesPerClock = 32 * 4

// AtClock is g with its SMs running at hz: the FP32 peak and Clock scaled (the per-clock rates
// scale with them); DRAM is unchanged. A profiler that locks clocks (Nsight Compute runs an H100
// at about 1.59 GHz, not its 1.98 GHz boost) measures g.AtClock(its clock).
func (g GPU) AtClock(hz float64) GPU {
	if g.Clock > 0 && hz > 0 {
		g.FP32 *= hz / g.Clock
		g.Clock = hz
	}
	return g
}

// GPUs are the devices a simt cell can model, with their published figures.
var GPUs = []GPU{
	{"H100 SXM", 132, 67e12, 3.35e12, 1.98e9, "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM5 80 GB column; 132 SMs from the H100 architecture whitepaper", "9.0",
		256 << 10, 50 << 20, 5120,
		"NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 256 KB of combined L1 data cache and shared memory per SM, 50 MB L2 (H100 SXM5); " +
			"the L2 bandwidth per clock is not published for GH100: GA100's 5120 bytes/clk (A100 whitepaper) is assumed", h100Latency},
	{"A100 SXM", 108, 19.5e12, 2.039e12, 1.41e9, "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM 80 GB column; 108 SMs from the A100 architecture whitepaper", "8.0",
		192 << 10, 40 << 20, 5120,
		"NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 192 KB of combined L1 data cache and shared memory per SM, 40 MB L2, L2 read bandwidth 5120 bytes/clk", a100Latency},
	{"T4", 40, 8.1e12, 320e9, 1.59e9, "NVIDIA T4 datasheet (2019); 40 SMs from the Turing architecture whitepaper", "7.5",
		96 << 10, 4 << 20, 0,
		"NVIDIA Turing GPU Architecture whitepaper (2018): 96 KB of L1/shared memory per SM, 4096 KB L2 on TU104 (T4); no L2 bandwidth published", t4Latency},
	{"RTX 4080", 76, 48.7e12, 716.8e9, 2.505e9, "NVIDIA Ada GPU architecture whitepaper (2022), GeForce RTX 4080 specifications", "8.9",
		128 << 10, 64 << 20, 0,
		"NVIDIA Ada GPU Architecture whitepaper (2022): 128 KB of L1/shared memory per SM, 64 MB L2 (GeForce RTX 4080, AD103); no L2 bandwidth published", ada4Latency},
	{"RTX A6000", 84, 38.7e12, 768e9, 1.80e9, "NVIDIA RTX A6000 datasheet (2021): 10,752 CUDA cores (84 SMs of 128), 38.7 TFLOPS FP32, 768 GB/s GDDR6", "8.6",
		128 << 10, 6 << 20, 0,
		"NVIDIA Ampere GA102 GPU Architecture whitepaper (2021): 128 KB of L1/shared memory per SM, 6144 KB L2 (full GA102); no L2 bandwidth published", ga102Latency},
}

// Or returns *g, or the first of GPUs (the H100 SXM) when g is nil: the GPU a cell's modelled times
// use when it names none.
func Or(g *GPU) GPU {
	if g != nil {
		return *g
	}
	return GPUs[0]
}

// LookupGPU finds a GPU by name, ignoring case.
func LookupGPU(name string) (GPU, error) {
	var names []string
	for _, g := range GPUs {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return GPU{}, fmt.Errorf("unknown GPU %q; known: %s", name, strings.Join(names, ", "))
}

// Time is a modelled (not measured) time: the larger of the time to do the FLOPs at peak and the
// time to move the bytes at full bandwidth, the roofline bound (Williams, Waterman and Patterson,
// "Roofline", CACM 2009). It ignores latency, occupancy and caches, so real kernels are slower.
type Time struct {
	Seconds float64
	// Bound is "compute" or "memory", whichever term is larger (or, from Model, the name of
	// its largest term: "DRAM", "L2", "L1", "shared memory", "issue", "atomics", "latency", or
	// "launch" where the fixed cost of a launch is longer than all of them).
	Bound string
	// Terms are the times of every limit the model took the largest of (Model; nil for
	// Roofline).
	Terms []Term
}

// Term is one limit of a modelled time: its Name (Time.Bound when largest) and Seconds.
type Term struct {
	Name    string
	Seconds float64
}

// Roofline models flops FLOPs and bytes of DRAM traffic on g: the larger of the two times.
func Roofline(flops, bytes float64, g GPU) Time {
	compute, memory := flops/g.FP32, bytes/g.DRAM
	if compute >= memory {
		return Time{Seconds: compute, Bound: "compute"}
	}
	return Time{Seconds: memory, Bound: "memory"}
}
