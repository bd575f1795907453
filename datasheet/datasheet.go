// Package datasheet holds published figures of GPUs (peak FP32 FLOP/s, DRAM bandwidth, SMs, compute
// capability, with their sources) and the roofline time model that turns counts into a modelled, never measured, time.
package datasheet

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
	// lanes per SM: 128 on Hopper and Ada, 64 on GA100 and Turing, from the architecture
	// whitepapers); it scales the atomic rates measured on an H100 to other GPUs (emulate.AtomicSeconds).
	Clock float64 `json:"boost_clock_hz"`
	// Source is where the figures come from.
	Source string `json:"source"`
	// CC is the compute capability ("9.0"), whose per-SM limits (package occupancy) give a kernel's
	// theoretical occupancy on this GPU; from the CUDA GPUs list (developer.nvidia.com/cuda-gpus).
	CC string `json:"compute_capability"`
}

// GPUs are the devices a simt cell can model, with their published figures.
var GPUs = []GPU{
	{"H100 SXM", 132, 67e12, 3.35e12, 1.98e9, "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM5 80 GB column; 132 SMs from the H100 architecture whitepaper", "9.0"},
	{"A100 SXM", 108, 19.5e12, 2.039e12, 1.41e9, "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM 80 GB column; 108 SMs from the A100 architecture whitepaper", "8.0"},
	{"T4", 40, 8.1e12, 320e9, 1.59e9, "NVIDIA T4 datasheet (2019); 40 SMs from the Turing architecture whitepaper", "7.5"},
	{"RTX 4080", 76, 48.7e12, 716.8e9, 2.505e9, "NVIDIA Ada GPU architecture whitepaper (2022), GeForce RTX 4080 specifications", "8.9"},
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

// Model is a modelled (not measured) time: the larger of the time to do the FLOPs at peak and the
// time to move the bytes at full bandwidth, the roofline bound (Williams, Waterman and Patterson,
// "Roofline", CACM 2009). It ignores latency, occupancy and caches, so real kernels are slower.
type Model struct {
	Seconds float64
	// Bound is "compute" or "memory", whichever term is larger (or "atomics": emulate.Model).
	Bound string
}

// Roofline models flops FLOPs and bytes of DRAM traffic on g: the larger of the two times.
func Roofline(flops, bytes float64, g GPU) Model {
	compute, memory := flops/g.FP32, bytes/g.DRAM
	if compute >= memory {
		return Model{compute, "compute"}
	}
	return Model{memory, "memory"}
}
