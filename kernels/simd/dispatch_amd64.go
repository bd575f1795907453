package simd

import "golang.org/x/sys/cpu"

// x/sys/cpu reports AVX-512 and AVX2 only when the OS also saves the wider registers (XSAVE/OSXSAVE).

// The best micro-kernel is the last All lists: they come in increasing order of speed.

func bestF32() Micro[float32] { f32, _ := All(); return f32[len(f32)-1] }
func bestF64() Micro[float64] { _, f64 := All(); return f64[len(f64)-1] }

// All lists every micro-kernel this CPU can run, slowest first: the portable Go one, then AVX2 + FMA,
// then AVX-512. Tests check that they all agree.
func All() ([]Micro[float32], []Micro[float64]) {
	f32, f64 := []Micro[float32]{GoF32}, []Micro[float64]{GoF64}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		f32 = append(f32, Micro[float32]{Name: "AVX2+FMA 6×16", MR: 6, NR: 16, Fn: microF32AVX2})
		f64 = append(f64, Micro[float64]{Name: "AVX2+FMA 6×8", MR: 6, NR: 8, Fn: microF64AVX2})
	}
	if cpu.X86.HasAVX512F {
		f32 = append(f32, Micro[float32]{Name: "AVX-512 6×32", MR: 6, NR: 32, Fn: microF32AVX512})
		f64 = append(f64, Micro[float64]{Name: "AVX-512 6×16", MR: 6, NR: 16, Fn: microF64AVX512})
	}
	return f32, f64
}

// FMALoops lists every FMA-throughput loop this CPU can run, narrowest first: the portable Go one,
// then AVX2 + FMA (256-bit), then AVX-512 (512-bit).
func FMALoops() ([]FMALoop[float32], []FMALoop[float64]) {
	f32, f64 := []FMALoop[float32]{GoFMAF32}, []FMALoop[float64]{GoFMAF64}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		f32 = append(f32, FMALoop[float32]{Name: "AVX2 FMA", Bits: 256, Lanes: 8, Vector: true, fn: fmaF32AVX2})
		f64 = append(f64, FMALoop[float64]{Name: "AVX2 FMA", Bits: 256, Lanes: 4, Vector: true, fn: fmaF64AVX2})
	}
	if cpu.X86.HasAVX512F {
		f32 = append(f32, FMALoop[float32]{Name: "AVX-512 FMA", Bits: 512, Lanes: 16, Vector: true, fn: fmaF32AVX512})
		f64 = append(f64, FMALoop[float64]{Name: "AVX-512 FMA", Bits: 512, Lanes: 8, Vector: true, fn: fmaF64AVX512})
	}
	return f32, f64
}
