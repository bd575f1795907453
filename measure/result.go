package measure

// Result is one measured point: a kernel timed at one size. Kinds show it as a row of a table; its
// JSON form is what the GPU worker answers and what recordings keep.
type Result struct {
	Kernel string `json:"kernel"`
	N      int    `json:"n"`
	DType  string `json:"dtype"`
	// Seconds is the median wall-clock time of the timed runs; MinSeconds and MaxSeconds bound them.
	Seconds    float64 `json:"seconds"`
	MinSeconds float64 `json:"min_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
	// GFLOPS is 2·n³ / Seconds / 1e9 (a cuda cell's custom kernel: its problem's FLOPs, package problems).
	GFLOPS float64 `json:"gflops"`
	// RelError is ‖C − C_ref‖_F / ‖C_ref‖_F against a float64 gonum reference; math.MaxFloat64 when
	// C held NaN or Inf (JSON has no Inf).
	RelError float64 `json:"rel_error"`
	// OK reports RelError within the tolerance of the precision the kernel computes in
	// (numeric.Tolerance for FP32/FP64; gpu.Tolerance for TF32, BF16 and FP16 inputs).
	OK bool `json:"ok"`
	// H2DSeconds and D2HSeconds are the host→device copy of A and B and the device→host copy of C,
	// and TransferGBps the bytes of both over their time, for GPU runs with transfers: true.
	H2DSeconds   float64 `json:"h2d_seconds,omitempty"`
	D2HSeconds   float64 `json:"d2h_seconds,omitempty"`
	TransferGBps float64 `json:"transfer_gbps,omitempty"`
}

// Noise says when a run's timings are noisy: a point (timed at MinSeconds or more) whose repeats
// spread over Spread (max/min), or a 1-minute load average over the machine's logical CPUs (Load;
// nil: not checked), which means other work shared the cores. harness.DefaultNoise is the server's.
type Noise struct {
	// Spread is the largest trusted ratio of a point's slowest to its fastest repeat (max/min, ≥ 1).
	Spread float64
	// MinSeconds is the shortest point, in seconds, whose spread is judged (timer resolution and
	// cache state dominate below it).
	MinSeconds float64
	// Load reports the 1-minute load average and the logical CPU count; ok is false where unknown.
	Load func() (load1 float64, cpus int, ok bool)
}
