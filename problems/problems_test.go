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
				if got := b.Decode(b.Encode(bufs[i], dtype), dtype); !slices.EqualFunc(got, bufs[i], sameFloat) {
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
		{"softmax", "fp16", "float32", 96, (128 + 2*MaxLogit) * math.Ldexp(1, -11)},
		{"softmax", "fp32", "float64", 96, (128 + 2*MaxLogit) * math.Ldexp(1, -24)},
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

// sameFloat is x == y, NaN equal to NaN.
func sameFloat(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }

// The softmax inputs reach float32's edges: every row's logits lie in the hundreds (positive and
// negative rows), some entries are −∞ (masked): a softmax that exponentiates without subtracting
// the row's max overflows (or underflows) float32 and fails; one that subtracts it passes, its masked
// entries exactly 0.
func TestSoftmaxInputsNeedTheMaxSubtracted(t *testing.T) {
	p := lookup(t, "softmax")
	rng := rand.New(rand.NewPCG(3, 7))
	const n = 40
	bufs := p.Inputs(rng, n, "float32")
	masked := 0
	for i := range n {
		row := bufs[0][i*n : (i+1)*n]
		if math.IsInf(row[0], 0) {
			t.Fatalf("row %d starts with %g", i, row[0])
		}
		for _, x := range row {
			switch {
			case math.IsInf(x, -1):
				masked++
			case math.Abs(x) < 96 || math.Abs(x) >= MaxLogit:
				t.Fatalf("row %d: logit %g, want magnitude in [96, %d)", i, x, MaxLogit)
			}
		}
	}
	if masked == 0 {
		t.Error("no masked (−∞) logits")
	}
	for _, tc := range []struct {
		name    string
		shifted bool
		ok      bool
	}{{"exp(x − max)", true, true}, {"exp(x)", false, false}} {
		got := make([]float64, n*n)
		for i := range n {
			row := bufs[0][i*n : (i+1)*n]
			m := float32(math.Inf(-1))
			for _, x := range row {
				m = max(m, float32(x))
			}
			if !tc.shifted {
				m = 0
			}
			var s float32
			for _, x := range row {
				s += float32(math.Exp(float64(float32(x) - m)))
			}
			for j, x := range row {
				got[i*n+j] = float64(float32(math.Exp(float64(float32(x)-m))) / s)
			}
		}
		v, err := p.Check(context.Background(), n, bufs, got, nil, prec(t, "fp32"), "float32")
		if err != nil || v.OK != tc.ok {
			t.Errorf("%s: got %+v, %v; want ok=%v", tc.name, v, err, tc.ok)
		}
	}
}

// Half the histogram's inputs fall in one bin: counters of 8 bits (wrapping at 256) fail at n = 3000,
// where uniform inputs (about 12 per bin) would have passed them.
func TestHistogramInputsAreSkewed(t *testing.T) {
	p := lookup(t, "histogram")
	bufs := p.Inputs(rand.New(rand.NewPCG(9, 9)), 3000, "float32")
	want, _, _ := p.ref(context.Background(), 3000, bufs)
	if top := slices.Max(want); top < 1200 {
		t.Fatalf("the fullest bin holds %g of 3000, want about half", top)
	}
	wrapped := make([]float64, 256)
	for i, c := range want {
		wrapped[i] = float64(uint8(c))
	}
	if v, _ := p.Check(context.Background(), 3000, bufs, wrapped, nil, prec(t, "fp32"), "float32"); v.OK {
		t.Errorf("8-bit counters passed: %+v", v)
	}
}

// The transpose's input holds a NaN and both infinities, which must arrive as they are: a kernel
// that moves them passes, one that turns them into numbers fails.
func TestTransposeMovesNaNAndInfinities(t *testing.T) {
	p := lookup(t, "transpose")
	const n = 33
	bufs := p.Inputs(rand.New(rand.NewPCG(4, 4)), n, "float32")
	want, _, _ := p.ref(context.Background(), n, bufs)
	var nan, inf int
	for _, x := range want {
		switch {
		case math.IsNaN(x):
			nan++
		case math.IsInf(x, 0):
			inf++
		}
	}
	if nan != 1 || inf != 2 {
		t.Fatalf("%d NaN and %d infinities in the input, want 1 and 2", nan, inf)
	}
	if v, err := p.Check(context.Background(), n, bufs, want, nil, prec(t, "fp32"), "float32"); err != nil || !v.OK || v.Err != 0 {
		t.Errorf("the exact transpose: %+v, %v", v, err)
	}
	for _, bad := range []func(float64) float64{
		func(x float64) float64 { return max(min(x, 1e30), -1e30) }, // infinities clamped
		func(x float64) float64 { // NaN becomes 0
			if math.IsNaN(x) {
				return 0
			}
			return x
		},
	} {
		got := slices.Clone(want)
		for i := range got {
			got[i] = bad(got[i])
		}
		if v, _ := p.Check(context.Background(), n, bufs, got, nil, prec(t, "fp32"), "float32"); v.OK {
			t.Errorf("a transpose changing the specials passed: %+v", v)
		}
	}
}

// A failed check names the `precision:` the kernel's executed code computes in when its error fits
// that precision's tolerance; nothing when the kernel computes in the cell's precision, when the
// error is over that tolerance too, or when the check passed.
func TestPrecisionNote(t *testing.T) {
	p := lookup(t, "matmul")
	fp32 := prec(t, "fp32")
	v := Verdict{Err: 0.01, Tol: MatmulTolerance(64, fp32, "float32")}
	note := p.PrecisionNote(64, v, fp32, "float32", "fp16")
	for _, want := range []string{"`precision: fp16`", "0.01", "fp32's tolerance 0.0001", "fp16's 0.0156"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}
	for _, tc := range []struct {
		v              Verdict
		prec, computes string
	}{
		{v, "fp32", ""},                     // no lower format ran: the kernel is wrong
		{Verdict{Err: 0.5}, "fp32", "fp16"}, // over fp16's tolerance too
		{Verdict{Err: 0.01, OK: true}, "fp32", "fp16"},
		{v, "fp16", "fp16"}, // already declared
		{Verdict{Err: math.MaxFloat64}, "fp32", "bf16"},
	} {
		if got := p.PrecisionNote(64, tc.v, prec(t, tc.prec), "float32", tc.computes); got != "" {
			t.Errorf("%+v at %s computing in %q: got %q, want no note", tc.v, tc.prec, tc.computes, got)
		}
	}
}

// The attention problem's scores reach past float32's exp: every even row has a score above 88.7
// (exp overflows) and every odd row has all its scores below −88.7, and no score's magnitude
// exceeds maxLogit, the bound the tolerance assumes.
func TestAttentionLogitsReachTheEdges(t *testing.T) {
	p := lookup(t, "attention")
	n, d := 64, HeadDim
	bufs := p.Inputs(rand.New(rand.NewPCG(3, 4)), n, "float32")
	for i := range n {
		top := math.Inf(-1)
		for j := range n {
			var s float64
			for c := range d {
				s += bufs[0][i*d+c] * bufs[1][j*d+c]
			}
			s /= math.Sqrt(float64(d))
			top = math.Max(top, s)
			if math.Abs(s) > maxLogit() {
				t.Fatalf("row %d, key %d: score %g, over the bound %g", i, j, s, maxLogit())
			}
		}
		if i%2 == 0 && top <= 88.7 || i%2 == 1 && top >= -88.7 {
			t.Errorf("row %d: largest score %g; want above 88.7 in even rows, below −88.7 in odd ones", i, top)
		}
	}
}
