package measure

// Ceilings are a machine's measured roofs.
type Ceilings struct {
	// FP32 and FP64 are the arithmetic roofs: this CPU's peak GFLOP/s per element type, measured with
	// an FMA-throughput loop on all cores (see Peak and its Method). Peak(dtype) picks one.
	FP32 Peak `json:"fp32"`
	FP64 Peak `json:"fp64"`
	// PeakGFLOPS is FP32.GFLOPS, the float32 roof, for callers that draw a single float32 roofline.
	PeakGFLOPS float64 `json:"peak_gflops"`
	// GEMMGFLOPS is not a roof but what a real kernel reaches: the best median GFLOP/s of the CPU
	// GEMM kernels on float32 products small enough to stay in cache (n = 128, 256 and 512: at most
	// 3 MiB), reached by GEMMKernel at GEMMN.
	GEMMGFLOPS float64 `json:"gemm_gflops"`
	GEMMKernel string  `json:"gemm_kernel"`
	GEMMN      int     `json:"gemm_n"`
	// BandwidthGBs is the median STREAM triad bandwidth (a[i] = b[i] + s·c[i] on float64, counted as
	// 24 bytes per element as STREAM does) over TriadMiB MiB per array, with all cores.
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	TriadMiB     int     `json:"triad_mib"`
	// CacheMiB is the last-level cache the OS reports (0 if unknown). STREAM asks for arrays at least
	// 4× the caches; when the three arrays are smaller than that, BeyondCache is false and part of the
	// bandwidth may come from cache.
	CacheMiB    int  `json:"cache_mib"`
	BeyondCache bool `json:"beyond_cache"`
	// Measured says when and on how many threads.
	Measured string `json:"measured"`
	Threads  int    `json:"threads"`
}

// Peak is the arithmetic roof for dtype: FP64 for "float64", FP32 for anything else (float32, and
// the narrower types a CPU computes in float32).
func (c Ceilings) Peak(dtype string) Peak {
	if dtype == "float64" {
		return c.FP64
	}
	return c.FP32
}

// Ridge is the arithmetic intensity (FLOP/byte) where dtype's two roofs meet: below it a kernel is
// memory bound, above it compute bound.
func (c Ceilings) Ridge(dtype string) float64 { return c.Peak(dtype).GFLOPS / c.BandwidthGBs }

// Bound is the roofline's attainable GFLOP/s for dtype at arithmetic intensity ai (FLOP/byte).
func (c Ceilings) Bound(dtype string, ai float64) float64 {
	return min(c.Peak(dtype).GFLOPS, ai*c.BandwidthGBs)
}

// Peak is this CPU's arithmetic peak for one element type, measured: an FMA-throughput loop
// (simd.FMALoop: independent multiply-adds on registers, no memory traffic) run on every core at once.
// No kernel passes a vector peak; a GEMM in cache comes closest. (Where the CPU has neither AVX2 + FMA
// nor AVX-512, the loop is scalar Go, Vector is false, and the figure is a floor: a vectorised kernel
// can beat it.)
type Peak struct {
	DType  string  `json:"dtype"`
	GFLOPS float64 `json:"gflops"`
	// Loop is the loop that reached GFLOPS (e.g. "AVX-512 FMA"), with its register width in bits
	// (the element's width for the scalar Go loop) and whether it uses the vector unit at all.
	Loop   string `json:"loop"`
	Bits   int    `json:"bits"`
	Vector bool   `json:"vector"`
	// Accumulators is the number of independent registers the loop updates (simd.FMAAcc).
	Accumulators int `json:"accumulators"`
	// Threads ran the loop at once, one per GOMAXPROCS, each locked to its OS thread; GFLOPS is the
	// median over Trials timed trials of TrialSeconds each, after one untimed warm-up trial.
	Threads      int     `json:"threads"`
	Trials       int     `json:"trials"`
	TrialSeconds float64 `json:"trial_seconds"`
	// Other is the other loop timed, if any: where the CPU has both AVX2 and AVX-512, the one that did
	// not reach the peak, with its median. Where the wider loop is no faster than the narrower, the CPU
	// splits wide vectors (AMD Zen 4 runs a 512-bit FMA as two 256-bit halves).
	Other LoopGFLOPS `json:"other,omitzero"`
	// Method says how it was measured, for display: "measured: AVX-512 FMA loop (512-bit vectors, 12
	// independent accumulators) on 2 threads, median of 5 × 50 ms; AVX2 FMA loop: 115 GFLOP/s".
	Method string `json:"method"`
}

// LoopGFLOPS is one loop's measured median GFLOP/s.
type LoopGFLOPS struct {
	Loop   string  `json:"loop"`
	GFLOPS float64 `json:"gflops"`
}
