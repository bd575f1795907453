package vgpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
)

// loadPTX parses the embedded PTX of matmul.cu for a virtual architecture.
func loadPTX(t testing.TB, arch int) *Module {
	t.Helper()
	src, err := nvidia.PTX.ReadFile(nvidia.PTXName("matmul.cu", arch))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseModule(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reference returns A·B in float64 computed by gonum.
func reference(t testing.TB, a, b []float32, n int) []float64 {
	t.Helper()
	a64, b64 := make([]float64, len(a)), make([]float64, len(b))
	for i := range a {
		a64[i], b64[i] = float64(a[i]), float64(b[i])
	}
	c := make([]float64, n*n)
	if err := kernels.Gonum(context.Background(), c, a64, b64, n, n, n, kernels.Options{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// runMatmul launches a ladder kernel at size n (padding as the table says) and returns C (n×n).
func runMatmul(t testing.TB, m *Module, k nvidia.Kernel, arch, n int, a, b []float32, round func(float32) uint16) ([]float32, Counts) {
	t.Helper()
	l := k.LaunchFor(n, arch, "float32")
	N := l.N
	pad := func(x []float32) []float32 {
		out := make([]float32, N*N)
		for i := range n {
			copy(out[i*N:i*N+n], x[i*n:(i+1)*n])
		}
		return out
	}
	var A, B *Buffer
	if round != nil {
		conv := func(x []float32) []uint16 {
			out := make([]uint16, len(x))
			for i, v := range x {
				out[i] = round(v)
			}
			return out
		}
		A, B = Uint16Buffer("A", conv(pad(a))), Uint16Buffer("B", conv(pad(b)))
	} else {
		A, B = Float32Buffer("A", pad(a)), Float32Buffer("B", pad(b))
	}
	C := NewBuffer("C", 4*N*N)
	cnt, err := Launch(context.Background(), m, l.Entry, LaunchConfig{Grid: l.Grid, Block: l.Block,
		Params:  []Arg{Ptr(A), Ptr(B), Ptr(C), S32(int32(N)), S32(int32(N)), S32(int32(N))},
		Buffers: []*Buffer{A, B, C}})
	if err != nil {
		t.Fatalf("%s (%s) n=%d: %v", k.Name, l.Entry, n, err)
	}
	full := C.Float32s()
	out := make([]float32, n*n)
	for i := range n {
		copy(out[i*n:(i+1)*n], full[i*N:i*N+n])
	}
	return out, cnt
}

func randomMatrix(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n*n)
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	return x
}

func TestLadderKernelsMatchGonum(t *testing.T) {
	for _, arch := range nvidia.PTXArchs {
		m := loadPTX(t, arch)
		for _, k := range nvidia.Kernels() {
			if k.Entry == "" || arch < k.MinCC {
				continue
			}
			_, prec := k.On(arch, "float32")
			for _, n := range []int{1, 33, 100, 128} {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(arch)))
				a, b := randomMatrix(rng, n), randomMatrix(rng, n)
				var round func(float32) uint16
				switch prec {
				case "bf16":
					round = func(x float32) uint16 { return roundBF16(float64(x), rmNearest, 0) }
				case "f16":
					round = func(x float32) uint16 { return roundF16(float64(x), rmNearest, 0) }
				}
				if round != nil { // the reference multiplies the rounded inputs
					for i := range a {
						a[i] = float32(decodeFmt(uint64(round(a[i])), map[string]ffmt{"bf16": fmtBF16, "f16": fmtF16}[prec]))
						b[i] = float32(decodeFmt(uint64(round(b[i])), map[string]ffmt{"bf16": fmtBF16, "f16": fmtF16}[prec]))
					}
				}
				got, cnt := runMatmul(t, m, k, arch, n, a, b, round)
				want := reference(t, a, b, n)
				if e := numeric.RelFrobenius(got, want); e > numeric.Tolerance("float32") {
					t.Errorf("compute_%d %s n=%d: relative error %g over %g", arch, k.Name, n, e, numeric.Tolerance("float32"))
				}
				if cnt.ThreadInstructions == 0 {
					t.Errorf("compute_%d %s n=%d: no instructions counted", arch, k.Name, n)
				}
			}
		}
	}
}

func ptxFS(arch int) ([]byte, error) { return nvidia.PTX.ReadFile(nvidia.PTXName("matmul.cu", arch)) }
