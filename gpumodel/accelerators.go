package gpumodel

import (
	"fmt"
	"strings"
)

// Accelerator is a chip's published matrix-unit figures, for modelling how long a neural-network
// workload takes on it: the peak of its tensor cores (GPUs) or matrix units (TPUs) in the 16-bit
// format AI training uses, dense, and its memory bandwidth. Modelled times from these are never
// measurements.
type Accelerator struct {
	Name string
	// Kind is "GPU" or "TPU".
	Kind string
	// Dense is the peak of the matrix units in FLOP/s for Format, without structured sparsity (NVIDIA's
	// datasheets print twice this with sparsity, marked with an asterisk).
	Dense float64
	// Format is the input format of Dense and its accumulation, e.g. "BF16, FP32 accumulate".
	Format string
	// DRAM is the memory bandwidth in bytes/s; Memory the memory's capacity in bytes (HBM or GDDR),
	// from the same Source.
	DRAM, Memory float64
	// Year is the year the chip was announced.
	Year int
	// Source is where the figures come from.
	Source string
}

// gpu returns the GPUs entry named name; it panics on a name that is not there (a programming error
// in the table below, caught by any test that loads the package).
func gpu(name string) GPU {
	g, err := LookupGPU(name)
	if err != nil {
		panic(err)
	}
	return g
}

// Accelerators are the chips a budget cell models, with their published figures. The GPUs' memory
// bandwidths are those of GPUs where the chip is there too.
var Accelerators = []Accelerator{
	{"H100 SXM", "GPU", 989e12, "BF16, FP32 accumulate", gpu("H100 SXM").DRAM, 80e9, 2022,
		"NVIDIA H100 Tensor Core GPU datasheet (2023), SXM column: BF16 Tensor Core 1,979 TFLOPS with sparsity, so 989 dense; 80 GB"},
	{"A100 SXM", "GPU", 312e12, "BF16, FP32 accumulate", gpu("A100 SXM").DRAM, 80e9, 2020,
		"NVIDIA A100 Tensor Core GPU datasheet (2021): BFLOAT16 Tensor Core 312 TFLOPS dense (624 with sparsity); 80 GB (A100 80GB SXM)"},
	{"V100 SXM2", "GPU", 125e12, "FP16, FP32 accumulate", 900e9, 32e9, 2017,
		"NVIDIA Tesla V100 GPU datasheet (2020), SXM2 column: Tensor Performance 125 TFLOPS, memory bandwidth 900 GB/s, 32 GB (the larger of its 32 and 16 GB)"},
	{"T4", "GPU", 65e12, "FP16, FP32 accumulate", gpu("T4").DRAM, 16e9, 2018,
		"NVIDIA T4 datasheet (2019): mixed precision (FP16/FP32) 65 TFLOPS, 16 GB GDDR6"},
	{"RTX 4080", "GPU", 97.5e12, "FP16 or BF16, FP32 accumulate", gpu("RTX 4080").DRAM, 16e9, 2022,
		"NVIDIA Ada GPU architecture whitepaper (2022), GeForce RTX 4080: peak FP16 Tensor TFLOPS with FP32 accumulate 97.5 (194.9 with sparsity), 16 GB GDDR6X"},
	{"TPU v4", "TPU", 275e12, "BF16, FP32 accumulate", 1200e9, 32 << 30, 2021,
		"N. P. Jouppi et al., \"TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware Support for Embeddings\", ISCA 2023: 275 TFLOPS BF16, 1,200 GB/s HBM, 32 GiB of HBM"},
	{"TPU v5e", "TPU", 197e12, "BF16, FP32 accumulate", 819e9, 16e9, 2023,
		"Google Cloud, \"TPU v5e\" (Cloud TPU documentation): peak compute per chip 197 TFLOPS BF16, HBM2 819 GB/s, 16 GB of HBM2"},
}

// LookupAccelerator finds an accelerator by name, ignoring case.
func LookupAccelerator(name string) (Accelerator, error) {
	var names []string
	for _, a := range Accelerators {
		if strings.EqualFold(a.Name, name) {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return Accelerator{}, fmt.Errorf("unknown accelerator %q; known: %s", name, strings.Join(names, ", "))
}
