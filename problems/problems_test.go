package problems

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func lookup(t *testing.T, name string) *Problem {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func prec(t *testing.T, name string) Precision {
	t.Helper()
	p, err := LookupPrecision(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every problem: one output, its reference passes its own check exactly, and a perturbed output
// fails it; Encode and Decode round-trip its buffers.
func TestEveryProblemChecksItsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fp32 := prec(t, "fp32")
	for _, p := range All() {
		for _, dtype := range []string{"float32", "float64"} {
			n := 37
			bufs := p.Inputs(rng, n, dtype)
			want, _, err := p.ref(context.Background(), n, bufs)
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Check(context.Background(), n, bufs, want, nil, DefaultPrecision(dtype), dtype)
			if err != nil || !v.OK || v.Err != 0 || v.Checked != len(want) {
				t.Errorf("%s %s: the reference itself: got %+v, %v", p.Name, dtype, v, err)
			}
			bad := slices.Clone(want)
			bad[len(bad)-1] += 1
			if v, _ := p.Check(context.Background(), n, bufs, bad, nil, fp32, dtype); v.OK {
				t.Errorf("%s %s: an output off by one in its last entry passed: %+v", p.Name, dtype, v)
			}
			bad[0] = math.NaN()
			if v, _ := p.Check(context.Background(), n, bufs, bad, nil, fp32, dtype); v.OK || v.Err != math.MaxFloat64 {
				t.Errorf("%s %s: NaN: got %+v, want error MaxFloat64", p.Name, dtype, v)
			}
			for i, b := range p.Buffers {
				if b.Output != (bufs[i] == nil) {
					t.Errorf("%s %s: buffer %s: output %v, host values %d", p.Name, dtype, b.Name, b.Output, len(bufs[i]))
				}
				if got := b.Decode(b.Encode(bufs[i], dtype), dtype); !slices.Equal(got, bufs[i]) {
					t.Errorf("%s %s: buffer %s does not round-trip", p.Name, dtype, b.Name)
				}
			}
		}
	}
}

// The tolerances as the docs give them.
func TestTolerances(t *testing.T) {
	for _, tt := range []struct {
		problem, precision, dtype string
		n                         int
		want                      float64
	}{
		{"matmul", "fp32", "float32", 512, 1e-4},
		{"matmul", "fp64", "float64", 512, 1e-12},
		{"matmul", "fp16", "float32", 1, 4.0 / 2048},
		{"matmul", "bf16", "float32", 64, 4 * 8.0 / 256},
		{"transpose", "fp32", "float32", 100, math.Ldexp(1, -24)},
		{"reduce", "fp32", "float32", 1 << 22, 0},
		{"reduce", "fp32", "float32", MaxVector, 0},
		{"reduce", "fp32", "float32", MaxVector + 1, 1},
		{"reduce", "bf16", "float32", 64, 0},
		{"reduce", "bf16", "float32", 65, 64.0 / 256},
		{"scan", "fp16", "float32", 512, 0},
		{"scan", "fp16", "float32", 513, 512.0 / 2048},
		{"histogram", "bf16", "float32", 100, 0},
		{"softmax", "fp32", "float32", 96, 128 * math.Ldexp(1, -24)},
	} {
		p := lookup(t, tt.problem)
		pr := DefaultPrecision(tt.dtype)
		if tt.precision != pr.Name {
			pr = prec(t, tt.precision)
		}
		if got := p.tol(tt.n, pr, tt.dtype); got != tt.want {
			t.Errorf("%s in %s at n=%d: got tolerance %g, want %g", tt.problem, tt.precision, tt.n, got, tt.want)
		}
	}
}

// A sum of the inputs drawn for reduce is exact in float32 in any order, at any n a cell may ask.
func TestWholesSumExactlyInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := lookup(t, "reduce")
	for _, n := range []int{100000, 1<<22 + 1, MaxVector} {
		if b := wholeBound(n); b*n > 1<<24 {
			t.Errorf("n=%d: bound %d, b·n = %d over 2^24", n, b, b*n)
		}
	}
	bufs := p.Inputs(rng, 100000, "float32")
	want, _, _ := p.ref(context.Background(), 100000, bufs)
	rng.Shuffle(len(bufs[0]), func(i, j int) { bufs[0][i], bufs[0][j] = bufs[0][j], bufs[0][i] })
	var s float32
	for _, x := range bufs[0] {
		s += float32(x)
	}
	if float64(s) != want[0] {
		t.Errorf("got %g, want %g", s, want[0])
	}
}

func TestLookupErrorsListTheNames(t *testing.T) {
	if _, err := Lookup("sort"); err == nil || !strings.Contains(err.Error(), "matmul, transpose, reduce, histogram, softmax, scan") {
		t.Errorf("got %v", err)
	}
	if _, err := LookupPrecision("fp8"); err == nil || !strings.Contains(err.Error(), "fp32, tf32, bf16, fp16") {
		t.Errorf("got %v", err)
	}
}

// A sampled check compares only the listed entries; matmul's uses one dot product per entry.
func TestCheckWhich(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := lookup(t, "matmul")
	n := 1100 // over fullRef: the full reference is refused
	bufs := p.Inputs(rng, n, "float32")
	got := make([]float64, n*n)
	for i := range got {
		got[i] = math.NaN()
	}
	which := []int{0, 5, n*n - 1}
	for _, i := range which {
		got[i] = p.refAt(n, bufs, i)
	}
	v, err := p.Check(context.Background(), n, bufs, got, which, DefaultPrecision("float32"), "float32")
	if err != nil || !v.OK || v.Checked != 3 {
		t.Errorf("got %+v, %v; want ok over 3 entries", v, err)
	}
	if _, err := p.Check(context.Background(), n, bufs, got, nil, DefaultPrecision("float32"), "float32"); err == nil {
		t.Error("a full check above fullRef: got no error")
	}
}

// A histogram's inputs are unsigned int whatever the dtype; a matmul's are the dtype.
func TestInputTypes(t *testing.T) {
	for name, want := range map[string]string{"histogram": "uint32", "matmul": "float64", "transpose": "float64"} {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.InputTypes("float64"); got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

// Only matmul (above 1024) and attention (above 512) need a sampled check; attention's one-entry
// reference agrees with its full reference, and a sampled check above 512 passes a right output and
// fails a wrong one.
func TestSampledCheck(t *testing.T) {
	for _, p := range All() {
		got, want := p.SampledCheck(p.MaxN), p.Name == "matmul" || p.Name == "attention"
		if got != want || p.SampledCheck(512) {
			t.Errorf("%s: SampledCheck at MaxN %d = %v, at 512 = %v; want %v, false", p.Name, p.MaxN, got, p.SampledCheck(512), want)
		}
	}
	p := lookup(t, "attention")
	if p.SampledCheck(512) || !p.SampledCheck(513) {
		t.Errorf("attention: got sampled at 512 %v, at 513 %v; want false, true", p.SampledCheck(512), p.SampledCheck(513))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	n := 70
	bufs := p.Inputs(rng, n, "float32")
	full, _, err := p.ref(context.Background(), n, bufs)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range full {
		if g := p.refAt(n, bufs, i); math.Abs(g-w) > 1e-12*math.Max(1, math.Abs(w)) {
			t.Fatalf("attention at n=%d, entry %d: refAt %g, ref %g", n, i, g, w)
		}
	}
	n = 600
	bufs = p.Inputs(rng, n, "float32")
	out := make([]float64, n*HeadDim)
	which := []int{0, 1, 64*HeadDim + 5, n*HeadDim - 1}
	for _, i := range which {
		out[i] = float64(float32(p.refAt(n, bufs, i)))
	}
	v, err := p.Check(context.Background(), n, bufs, out, which, DefaultPrecision("float32"), "float32")
	if err != nil || !v.OK || v.Checked != len(which) {
		t.Errorf("right output at n=%d: got %+v, %v; want ok over %d entries", n, v, err, len(which))
	}
	out[which[2]] *= 1.5
	if v, err := p.Check(context.Background(), n, bufs, out, which, DefaultPrecision("float32"), "float32"); err != nil || v.OK {
		t.Errorf("a wrong entry at n=%d: got %+v, %v; want not ok", n, v, err)
	}
}
