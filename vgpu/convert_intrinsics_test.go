package vgpu

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Every conversion intrinsic of CUDA's cuda_fp16.h, cuda_bf16.h and cuda_fp8.h, compiled by NVRTC
// with CUDA's own headers and run in the virtual GPU, agrees bit for bit with a reference written
// here with math/big: round to nearest even (or the intrinsic's mode), subnormals, overflow to
// infinity (or, where the header says so, saturation to the largest finite number), and NaN as the
// header documents it (0 in an integer of 32 bits or fewer, 0x8000000000000000 in a 64-bit one; a
// NaN stays a NaN in a float format, compared as a NaN, its payload unchecked).

// convIn is one thread's inputs: floats x and y (y is another thread's x, for the two-source
// conversions), a double, a 16-bit pattern read as a half, a bfloat16 or a pair of fp8, another
// such pattern, and an integer.
type convIn struct {
	x, y float32
	d    float64
	h, g uint16
	l    int64
}

// fmt16 is a binary float format for the reference: mant stored mantissa bits, exp exponent bits.
type fmt16 struct {
	mant, exp uint
	e4m3      bool // fp8 E4M3: no infinity, S.1111.111 is NaN, largest finite 448
}

var (
	refF16  = fmt16{mant: 10, exp: 5}
	refBF16 = fmt16{mant: 7, exp: 8}
	refE4M3 = fmt16{mant: 3, exp: 4, e4m3: true}
	refE5M2 = fmt16{mant: 2, exp: 5}
)

func (f fmt16) bias() int       { return 1<<(f.exp-1) - 1 }
func (f fmt16) signBit() uint64 { return 1 << (f.mant + f.exp) }
func (f fmt16) expAll() uint64  { return 1<<f.exp - 1 }
func (f fmt16) maxBits() uint64 {
	if f.e4m3 {
		return f.expAll()<<f.mant | (1<<f.mant - 2)
	}
	return (f.expAll()-1)<<f.mant | (1<<f.mant - 1)
}
func (f fmt16) infBits() uint64 { return f.expAll() << f.mant }
func (f fmt16) nanBits() uint64 { return f.expAll()<<f.mant | (1<<f.mant - 1) }
func (f fmt16) isNaN(b uint64) bool {
	b &^= f.signBit()
	if f.e4m3 {
		return b == f.nanBits()
	}
	return b>>f.mant == f.expAll() && b&(1<<f.mant-1) != 0
}

// decode is the value of the bits b in f.
func (f fmt16) decode(b uint64) float64 {
	if f.isNaN(b) {
		return math.NaN()
	}
	s := 1.0
	if b&f.signBit() != 0 {
		s = -1
	}
	e, m := int(b>>f.mant&f.expAll()), float64(b&(1<<f.mant-1))
	if !f.e4m3 && uint64(e) == f.expAll() {
		return s * math.Inf(1)
	}
	if e == 0 {
		return s * math.Ldexp(m, 1-f.bias()-int(f.mant))
	}
	return s * math.Ldexp(1+m/float64(uint64(1)<<f.mant), e-f.bias())
}

// round is x (exact, any precision) rounded to f by mode; an overflow is infinity where rounding
// would go past the largest finite number (E4M3: NaN), or the largest finite number when sat.
func (f fmt16) round(x *big.Float, mode big.RoundingMode, sat bool) uint64 {
	if x == nil { // NaN
		return f.nanBits()
	}
	var sign uint64
	if x.Signbit() {
		sign = f.signBit()
	}
	if x.IsInf() && sat {
		return sign | f.maxBits()
	}
	if x.IsInf() {
		if f.e4m3 {
			return sign | f.nanBits()
		}
		return sign | f.infBits()
	}
	if x.Sign() == 0 {
		return sign
	}
	// the quantum of the subnormals and of the numbers of x's binade, whichever is larger
	e := x.MantExp(nil) - 1 // x = m·2^e with 1 <= |m| < 2
	q := max(e, 1-f.bias()) - int(f.mant)
	scaled := new(big.Float).SetMantExp(x, -q) // x / 2^q: round it to an integer
	n := refRoundInt(scaled, mode)
	r := new(big.Float).SetMantExp(new(big.Float).SetInt(n), q)
	mag := new(big.Float).Abs(r)
	maxF := new(big.Float).SetFloat64(f.decode(f.maxBits()))
	if mag.Cmp(maxF) > 0 {
		toward0 := mode == big.ToZero || mode == big.ToNegativeInf && sign == 0 || mode == big.ToPositiveInf && sign != 0
		switch {
		case sat || toward0:
			return sign | f.maxBits()
		case f.e4m3:
			return sign | f.nanBits()
		}
		return sign | f.infBits()
	}
	if mag.Sign() == 0 {
		return sign
	}
	v, _ := mag.Float64()
	fr, ex := math.Frexp(v) // v = fr·2^ex, 0.5 <= fr < 1
	if ex-1 < 1-f.bias() {  // subnormal
		return sign | uint64(math.Ldexp(v, f.bias()-1+int(f.mant)))
	}
	m := uint64(math.Ldexp(fr, int(f.mant)+1)) - 1<<f.mant
	return sign | uint64(ex-1+f.bias())<<f.mant | m
}

// refRoundInt rounds x to an integer by mode (big.ToNearestEven, ToZero, ToNegativeInf, ToPositiveInf).
func refRoundInt(x *big.Float, mode big.RoundingMode) *big.Int {
	t, _ := x.Int(nil) // toward zero
	frac := new(big.Float).Sub(x, new(big.Float).SetInt(t))
	switch mode {
	case big.ToNegativeInf:
		if frac.Sign() < 0 {
			t.Sub(t, big.NewInt(1))
		}
	case big.ToPositiveInf:
		if frac.Sign() > 0 {
			t.Add(t, big.NewInt(1))
		}
	case big.ToNearestEven:
		c := new(big.Float).Abs(frac).Cmp(big.NewFloat(0.5))
		if c > 0 || c == 0 && t.Bit(0) == 1 {
			t.Add(t, big.NewInt(int64(frac.Sign())))
		}
	}
	return t
}

func refExact(x float64) *big.Float {
	if math.IsNaN(x) {
		return nil
	}
	if math.IsInf(x, 0) {
		return new(big.Float).SetInf(x < 0)
	}
	return new(big.Float).SetFloat64(x)
}

// toInt is the integer of bits bits (signed or not) that the float x becomes by mode: NaN is 0 in
// an integer of 32 bits or fewer and 1<<63 in a 64-bit one (cuda_fp16.h); others saturate.
func toInt(x float64, mode big.RoundingMode, bits uint, signed bool) uint64 {
	if math.IsNaN(x) {
		if bits == 64 {
			return 1 << 63
		}
		return 0
	}
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), bits)
	if signed {
		lo.Neg(new(big.Int).Lsh(big.NewInt(1), bits-1))
		hi.Lsh(big.NewInt(1), bits-1)
	}
	hi.Sub(hi, big.NewInt(1))
	var n *big.Int
	switch {
	case math.IsInf(x, 1):
		n = hi
	case math.IsInf(x, -1):
		n = lo
	default:
		n = refRoundInt(refExact(x), mode)
	}
	if n.Cmp(lo) < 0 {
		n = lo
	}
	if n.Cmp(hi) > 0 {
		n = hi
	}
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits), big.NewInt(1))
	return new(big.Int).And(n, mask).Uint64()
}

// a conversion: the CUDA expression whose bytes the kernel stores (bitsOf), the reference of those
// bytes, and the float format its result has (nil for an integer: compared bit for bit).
type conversion struct {
	expr string
	ref  func(convIn) uint64
	nan  func(got, want uint64) bool // both NaN where the result is a float (nil: integers)
}

var refModes = []struct {
	suffix string
	mode   big.RoundingMode
}{{"rn", big.ToNearestEven}, {"rz", big.ToZero}, {"rd", big.ToNegativeInf}, {"ru", big.ToPositiveInf}}

// nanIn compares results of n fields of width w bits in format f, NaN fields equal to any NaN.
func nanIn(f fmt16, w uint, n int) func(got, want uint64) bool {
	return func(got, want uint64) bool {
		for i := range n {
			g, x := got>>(uint(i)*w)&(1<<w-1), want>>(uint(i)*w)&(1<<w-1)
			if g != x && !(f.isNaN(g) && f.isNaN(x)) {
				return false
			}
		}
		return true
	}
}

func f32bits(x float32) uint64 { return uint64(math.Float32bits(x)) }

// f32of is the float32 a 16-bit value widens to (exact); NaN the canonical float NaN.
func f32of(f fmt16, b uint64) uint64 {
	v := f.decode(b)
	if math.IsNaN(v) {
		return 0x7fffffff
	}
	return f32bits(float32(v))
}

// intKinds are the integer types of the conversions: CUDA's name in the intrinsic, its C type, its
// width and signedness.
var intKinds = []struct {
	name, ctype string
	bits        uint
	signed      bool
}{{"int", "int", 32, true}, {"short", "short", 16, true}, {"uint", "unsigned", 32, false},
	{"ushort", "unsigned short", 16, false}, {"ll", "long long", 64, true}, {"ull", "unsigned long long", 64, false}}

// intValue is l in the integer type of bits bits, as an exact number.
func intValue(l int64, bits uint, signed bool) *big.Float {
	switch {
	case bits == 64 && !signed:
		return new(big.Float).SetUint64(uint64(l))
	case bits == 64:
		return new(big.Float).SetInt64(l)
	case signed:
		return new(big.Float).SetInt64(int64(l<<(64-bits)) >> (64 - bits))
	}
	return new(big.Float).SetUint64(uint64(l) & (1<<bits - 1))
}

// halfConversions are the conversions of cuda_fp16.h (t "half") or cuda_bf16.h (t "bfloat16").
func halfConversions(f fmt16, t, h2, halves, pair string) []conversion {
	nan1, nan2 := nanIn(f, 16, 1), nanIn(f, 16, 2)
	rn := func(x float64) uint64 { return f.round(refExact(x), big.ToNearestEven, false) }
	c := []conversion{
		{"__float2" + t + "(x)", func(in convIn) uint64 { return rn(float64(in.x)) }, nan1},
		{"__float2" + t + "2_rn(x)", func(in convIn) uint64 { return rn(float64(in.x)) * 0x10001 }, nan2},
		{"__floats2" + pair + "_rn(x, y)", func(in convIn) uint64 { return rn(float64(in.x)) | rn(float64(in.y))<<16 }, nan2},
		{"__float22" + pair + "_rn(make_float2(x, y))", func(in convIn) uint64 { return rn(float64(in.x)) | rn(float64(in.y))<<16 }, nan2},
		{"__double2" + t + "(d)", func(in convIn) uint64 { return rn(in.d) }, nan1},
		{"__" + t + "2float(" + h2 + ")", func(in convIn) uint64 { return f32of(f, uint64(in.h)) }, nanIn(fmt16{mant: 23, exp: 8}, 32, 1)},
		{"__low2float(" + halves + ")", func(in convIn) uint64 { return f32of(f, uint64(in.h)) }, nanIn(fmt16{mant: 23, exp: 8}, 32, 1)},
		{"__high2float(" + halves + ")", func(in convIn) uint64 { return f32of(f, uint64(in.g)) }, nanIn(fmt16{mant: 23, exp: 8}, 32, 1)},
		{"__" + pair + "2float2(" + halves + ")", func(in convIn) uint64 { return f32of(f, uint64(in.h)) | f32of(f, uint64(in.g))<<32 }, nanIn(fmt16{mant: 23, exp: 8}, 32, 2)},
		{"__" + t + "_as_ushort(" + h2 + ")", func(in convIn) uint64 { return uint64(in.h) }, nil},
		{"__" + t + "_as_short(__ushort_as_" + t + "(hb))", func(in convIn) uint64 { return uint64(in.h) }, nil},
	}
	for _, m := range refModes {
		m := m
		c = append(c, conversion{"__float2" + t + "_" + m.suffix + "(x)", func(in convIn) uint64 { return f.round(refExact(float64(in.x)), m.mode, false) }, nan1})
		for _, k := range intKinds {
			k := k
			c = append(c,
				conversion{fmt.Sprintf("__%s2%s_%s(%s)", t, k.name, m.suffix, h2), func(in convIn) uint64 {
					return toInt(f.decode(uint64(in.h)), m.mode, k.bits, k.signed)
				}, nil},
				conversion{fmt.Sprintf("__%s2%s_%s((%s)l)", k.name, t, m.suffix, k.ctype), func(in convIn) uint64 {
					return f.round(intValue(in.l, k.bits, k.signed), m.mode, false)
				}, nan1})
		}
	}
	return c
}

// fp8Conversions are cuda_fp8.h's: to E4M3 and E5M2 with and without __NV_SATFINITE, and back.
func fp8Conversions() []conversion {
	var c []conversion
	for _, k := range []struct {
		name string
		f    fmt16
	}{{"__NV_E4M3", refE4M3}, {"__NV_E5M2", refE5M2}} {
		k := k
		nan1, nan2 := nanIn(k.f, 8, 1), nanIn(k.f, 8, 2)
		for _, sat := range []bool{false, true} {
			sat := sat
			arg := k.name
			if sat {
				arg = "__NV_SATFINITE, " + arg
			} else {
				arg = "__NV_NOSAT, " + arg
			}
			to := func(x float64) uint64 { return k.f.round(refExact(x), big.ToNearestEven, sat) }
			c = append(c,
				conversion{"__nv_cvt_float_to_fp8(x, " + arg + ")", func(in convIn) uint64 { return to(float64(in.x)) }, nan1},
				conversion{"__nv_cvt_double_to_fp8(d, " + arg + ")", func(in convIn) uint64 { return to(in.d) }, nan1},
				conversion{"__nv_cvt_float2_to_fp8x2(make_float2(x, y), " + arg + ")", func(in convIn) uint64 { return to(float64(in.x)) | to(float64(in.y))<<8 }, nan2},
				conversion{"__nv_cvt_double2_to_fp8x2(make_double2(d, (double)y), " + arg + ")", func(in convIn) uint64 { return to(in.d) | to(float64(in.y))<<8 }, nan2},
				conversion{"__nv_cvt_halfraw_to_fp8(hraw(hb), " + arg + ")", func(in convIn) uint64 { return to(refF16.decode(uint64(in.h))) }, nan1},
				conversion{"__nv_cvt_halfraw2_to_fp8x2(hraw2(hb, gb), " + arg + ")", func(in convIn) uint64 {
					return to(refF16.decode(uint64(in.h))) | to(refF16.decode(uint64(in.g)))<<8
				}, nan2},
				conversion{"__nv_cvt_bfloat16raw_to_fp8(braw(hb), " + arg + ")", func(in convIn) uint64 { return to(refBF16.decode(uint64(in.h))) }, nan1},
				conversion{"__nv_cvt_bfloat16raw2_to_fp8x2(braw2(hb, gb), " + arg + ")", func(in convIn) uint64 {
					return to(refBF16.decode(uint64(in.h))) | to(refBF16.decode(uint64(in.g)))<<8
				}, nan2})
		}
		back := func(b uint64) uint64 { return refF16.round(refExact(k.f.decode(b)), big.ToNearestEven, false) }
		c = append(c,
			conversion{"__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)hb, " + k.name + ")", func(in convIn) uint64 { return back(uint64(in.h & 0xff)) }, nanIn(refF16, 16, 1)},
			conversion{"__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)hb, " + k.name + ")", func(in convIn) uint64 {
				return back(uint64(in.h&0xff)) | back(uint64(in.h>>8))<<16
			}, nanIn(refF16, 16, 2)})
	}
	return c
}

const convPrelude = `#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
template <class T> __device__ unsigned long long bitsOf(T v) {
	unsigned long long u = 0;
	memcpy(&u, &v, sizeof v);
	return u;
}
__device__ __half_raw hraw(unsigned short v) { __half_raw r; r.x = v; return r; }
__device__ __half2_raw hraw2(unsigned short a, unsigned short b) { __half2_raw r; r.x = a; r.y = b; return r; }
__device__ __nv_bfloat16_raw braw(unsigned short v) { __nv_bfloat16_raw r; r.x = v; return r; }
__device__ __nv_bfloat162_raw braw2(unsigned short a, unsigned short b) { __nv_bfloat162_raw r; r.x = a; r.y = b; return r; }
extern "C" __global__ void conv(const float* xs, const double* ds, const unsigned short* hs, const long long* ls, unsigned long long* out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	int j = (i + 7) % n;
	float x = xs[i], y = xs[j];
	double d = ds[i];
	unsigned short hb = hs[i], gb = hs[j];
	long long l = ls[i];
	__half h = __ushort_as_half(hb), hg = __ushort_as_half(gb);
	__nv_bfloat16 b = __ushort_as_bfloat16(hb), bg = __ushort_as_bfloat16(gb);
	unsigned long long* o = out + (size_t)i * K;
`

// convInputs are the threads' inputs: the edges (zeros, ties at every format's rounding point,
// subnormals, the largest finite numbers and just past them, infinities, NaN, integers past each
// range) and random ones.
func convInputs(n int) []convIn {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1 + 0x1p-11, 1 + 3*0x1p-11, 1 + 0x1p-8, 1 + 3*0x1p-8,
		65504, 65519, 65520, -65520, 0x1p-24, 0x1p-25, 3 * 0x1p-25, 0x1p-26, 0x1p-14, 2.5, -2.5, 3.5, -3.5, 0.5, 1.5,
		448, 464, 465, 480, 57344, 61439, 61440, 0x1p-9, 0x1p-10, 3 * 0x1p-11, 0x1p-16, 0x1p-17, 3 * 0x1p-18,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, 0x1p-149, 0x1p-126,
		3e38, 1 + 0x1p-23, 1e10, -1e10, 70000.5, -0.4, 0.7}
	ds := []float64{1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11 - 0x1p-40, 1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-4 + 0x1p-40,
		65519.99999, 65520, 0x1p-25 + 0x1p-60, 1e300, -1e300, 0x1p-1074, math.NaN(), math.Inf(-1), 0x1p-10 + 0x1p-50}
	hs := []uint16{0, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7fff, 0xffff, 0x3c00,
		0x3800, 0x3e00, 0x4100, 0xc100, 0x7f80, 0xff80, 0x7f7f, 0x4f00, 0x4f80, 0x5f00, 0x5f80, 0x477f, 0x4780,
		0x7e7e, 0x7c7b, 0x0101, 0x7f7e, 0x8080}
	ls := []int64{0, 1, -1, 2049, 2051, 257, 259, 65504, 65519, 65520, -65520, 70000, 1 << 24, 1<<40 + 1<<33,
		-(1 << 62), math.MaxInt64 &^ (1<<40 - 1), math.MinInt64, 0x7fff, 0x8000, 0xffff, 0x10000, 1<<31 - 128,
		1 << 31, -(1 << 31), 0xffff_ff00, 3 << 20}
	rng := rand.New(rand.NewPCG(37, 5))
	in := make([]convIn, n)
	for i := range in {
		x := math.Float32frombits(rng.Uint32())
		if i%2 == 0 {
			x = float32(math.Ldexp(rng.Float64()+0.5, rng.IntN(60)-30))
		}
		in[i] = convIn{x: x, d: math.Ldexp(rng.Float64(), rng.IntN(80)-40), h: uint16(rng.Uint32()),
			l: int64(rng.Uint32()&0xffffff) << rng.IntN(40)}
		if rng.IntN(2) == 0 {
			in[i].l = -in[i].l
		}
		if i < len(xs) {
			in[i].x = xs[i]
		}
		if i < len(ds) {
			in[i].d = ds[i]
		}
		if i < len(hs) {
			in[i].h = hs[i]
		}
		if i < len(ls) {
			in[i].l = ls[i]
		}
	}
	for i := range in {
		in[i].y, in[i].g = in[(i+7)%n].x, in[(i+7)%n].h
	}
	return in
}

// compute_80 runs the headers' software paths for fp8 (and some bf16 conversions); compute_90 the
// hardware's cvt to and from .e4m3x2 and .e5m2x2 (and cvt on .bf16 with integers and .f64).
func TestConversionIntrinsicsAgreeWithTheReference(t *testing.T) {
	for _, arch := range []int{80, 90} {
		t.Run(fmt.Sprintf("compute_%d", arch), func(t *testing.T) { testConversions(t, arch) })
	}
}

func testConversions(t *testing.T, arch int) {
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	headers := nvidia.FindHeaders(n)
	if headers == "" {
		t.Skip("skipping: no CUDA headers")
	}
	var convs []conversion
	convs = append(convs, halfConversions(refF16, "half", "h", "__halves2half2(h, hg)", "half2")...)
	convs = append(convs, halfConversions(refBF16, "bfloat16", "b", "__halves2bfloat162(b, bg)", "bfloat162")...)
	convs = append(convs, fp8Conversions()...)
	var src strings.Builder
	fmt.Fprintf(&src, "#define K %d\n%s", len(convs), convPrelude)
	for i, c := range convs {
		fmt.Fprintf(&src, "\to[%d] = bitsOf(%s);\n", i, c.expr)
	}
	src.WriteString("}\n")
	ptx, err := nvidia.CompileWithHeaders(context.Background(), n, nil, headers, src.String(), "conv.cu", arch)
	if err != nil {
		t.Fatal(err)
	}
	ops := []string{"cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32"} // the two-source conversions are what these intrinsics compile to
	if arch >= 90 {
		ops = append(ops, "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f16x2", "cvt.rn.f16x2.e4m3x2")
	}
	for _, op := range ops {
		if !strings.Contains(ptx, op) {
			t.Errorf("no %s in the PTX", op)
		}
	}
	m, err := ParseModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	const threads = 256
	in := convInputs(threads)
	xs, ds, hs, ls := make([]float32, threads), make([]float64, threads), NewBuffer("hs", 2*threads), NewBuffer("ls", 8*threads)
	for i, v := range in {
		xs[i], ds[i] = v.x, v.d
		hs.Data[2*i], hs.Data[2*i+1] = byte(v.h), byte(v.h>>8)
		for k := range 8 {
			ls.Data[8*i+k] = byte(uint64(v.l) >> (8 * k))
		}
	}
	X, D, O := Float32Buffer("xs", xs), Float64Buffer("ds", ds), NewBuffer("out", 8*threads*len(convs))
	_, err = Launch(context.Background(), m, "conv", LaunchConfig{Grid: [3]int{threads / 64}, Block: [3]int{64},
		Params: []Arg{Ptr(X), Ptr(D), Ptr(hs), Ptr(ls), Ptr(O), S32(threads)}, Buffers: []*Buffer{X, D, hs, ls, O}})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, v := range in {
		for j, c := range convs {
			o := O.Data[8*(i*len(convs)+j):]
			var got uint64
			for k := range 8 {
				got |= uint64(o[k]) << (8 * k)
			}
			want := c.ref(v)
			if got == want || c.nan != nil && c.nan(got, want) {
				continue
			}
			if bad++; bad <= 30 {
				t.Errorf("%s with x=%g y=%g d=%g h=%#04x g=%#04x l=%d: got %#x, want %#x", c.expr, v.x, v.y, v.d, v.h, v.g, v.l, got, want)
			}
		}
	}
	t.Logf("%d conversions × %d inputs", len(convs), threads)
}
