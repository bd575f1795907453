package measure

import "time"

// Limits bound what one run may ask for.
type Limits struct {
	// MaxN is the largest allowed matrix size n.
	MaxN int
	// GPUMaxN is the largest n for a cell whose kernels all run on the GPU (no CPU kernel and no CPU
	// reference at that size); 0 means MaxN.
	GPUMaxN int
	// MemoryBytes bounds the bytes of the three matrices A, B and C of the largest size. The run also
	// holds a float64 reference (and float64 copies of A and B for float32 runs), not counted here.
	MemoryBytes int64
	// RunTimeout is the run time limit; a spec whose estimated time exceeds it is refused.
	RunTimeout time.Duration
}

// DefaultLimits are the server's defaults, the one place they are written: n ≤ 4096 (8192 for
// GPU-only cells), 1 GiB, 120 s.
func DefaultLimits() Limits {
	return Limits{MaxN: 4096, GPUMaxN: 8192, MemoryBytes: 1 << 30, RunTimeout: 120 * time.Second}
}

// WithDefaults fills the zero fields of l from DefaultLimits; GPUMaxN is at least MaxN.
func (l Limits) WithDefaults() Limits {
	def := DefaultLimits()
	if l.MaxN <= 0 {
		l.MaxN = def.MaxN
	}
	if l.GPUMaxN <= 0 {
		l.GPUMaxN = def.GPUMaxN
	}
	l.GPUMaxN = max(l.GPUMaxN, l.MaxN)
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = def.MemoryBytes
	}
	if l.RunTimeout <= 0 {
		l.RunTimeout = def.RunTimeout
	}
	return l
}
