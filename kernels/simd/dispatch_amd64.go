package simd

import "golang.org/x/sys/cpu"

// x/sys/cpu reports AVX-512 and AVX2 only when the OS also saves the wider registers (XSAVE/OSXSAVE).

func bestF32() Micro[float32] {
	switch {
	case cpu.X86.HasAVX512F:
		return Micro[float32]{Name: "AVX-512 6×32", MR: 6, NR: 32, Fn: microF32AVX512}
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return Micro[float32]{Name: "AVX2+FMA 6×16", MR: 6, NR: 16, Fn: microF32AVX2}
	}
	return GoF32
}

func bestF64() Micro[float64] {
	switch {
	case cpu.X86.HasAVX512F:
		return Micro[float64]{Name: "AVX-512 6×16", MR: 6, NR: 16, Fn: microF64AVX512}
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return Micro[float64]{Name: "AVX2+FMA 6×8", MR: 6, NR: 8, Fn: microF64AVX2}
	}
	return GoF64
}

// All lists every micro-kernel this CPU can run, for tests: each must agree with the others.
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
