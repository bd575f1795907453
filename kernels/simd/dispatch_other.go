//go:build !amd64

package simd

// Other architectures (arm64 among them) use the portable Go micro-kernel.

func bestF32() Micro[float32] { return GoF32 }
func bestF64() Micro[float64] { return GoF64 }

// All lists every micro-kernel this CPU can run.
func All() ([]Micro[float32], []Micro[float64]) {
	return []Micro[float32]{GoF32}, []Micro[float64]{GoF64}
}

// FMALoops lists every FMA-throughput loop this CPU can run: here only the portable Go one.
func FMALoops() ([]FMALoop[float32], []FMALoop[float64]) {
	return []FMALoop[float32]{GoFMAF32}, []FMALoop[float64]{GoFMAF64}
}
