package nvidia

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// requireClang finds clang; in CI (CI=true) a missing clang fails the test, elsewhere it skips.
func requireClang(t *testing.T) *Clang {
	t.Helper()
	c, err := SharedClang()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("clang is required in CI (Debian: apt-get install clang): %v", err)
		}
		t.Skipf("skipping: no clang (%v); Debian: apt-get install clang", err)
	}
	return c
}

func TestNVRTCStyleLog(t *testing.T) {
	in := "In file included from <built-in>:1:\n" +
		"cell.cu:12:7: error: use of undeclared identifier 'nope'\n" +
		"cell.cu:3:1: warning: unused variable 'x' [-Wunused-variable]\n" +
		"./clang_prelude.h:40:2: note: candidate function\n" +
		"2 errors generated when compiling for sm_80.\n"
	want := "In file included from <built-in>:1:\n" +
		"cell.cu(12): error: use of undeclared identifier 'nope'\n" +
		"cell.cu(3): warning: unused variable 'x' [-Wunused-variable]\n" +
		"./clang_prelude.h(40): note: candidate function\n" +
		"2 errors generated when compiling for sm_80.\n"
	if got := NVRTCStyleLog(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestChooseCompiler(t *testing.T) {
	nv := &NVRTC{}
	cl := &Clang{Path: "/usr/bin/clang", Version: "14.0.6"}
	haveNV := func([]string) (*NVRTC, error) { return nv, nil }
	noNV := func([]string) (*NVRTC, error) {
		return nil, &NotFoundError{Names: NVRTCNames, Tried: []string{"loader path"}}
	}
	haveCl := func() (*Clang, error) { return cl, nil }
	noCl := func() (*Clang, error) { return nil, errors.New("clang not found on PATH") }

	if n, c, err := chooseCompiler("", haveNV, haveCl); n != nv || c != nil || err != nil {
		t.Errorf("both present: got %v %v %v, want NVRTC", n, c, err)
	}
	if n, c, err := chooseCompiler("", noNV, haveCl); n != nil || c != cl || err != nil {
		t.Errorf("no NVRTC: got %v %v %v, want clang", n, c, err)
	}
	if n, c, err := chooseCompiler("clang", haveNV, haveCl); n != nil || c != cl || err != nil {
		t.Errorf("clang forced: got %v %v %v, want clang", n, c, err)
	}
	if n, c, err := chooseCompiler("nvrtc", noNV, haveCl); n != nil || c != nil || err == nil {
		t.Errorf("NVRTC forced but missing: got %v %v %v, want an error", n, c, err)
	}
	_, _, err := chooseCompiler("", noNV, noCl)
	if err == nil || !strings.HasPrefix(err.Error(), NoCompiler) || !strings.Contains(err.Error(), "libnvrtc11.2") ||
		!strings.Contains(err.Error(), "apt-get install clang") || strings.Contains(err.Error(), "does not compile") {
		t.Errorf("neither: got %v, want %q and why", err, NoCompiler)
	}
	if _, _, err := chooseCompiler("gcc", haveNV, haveCl); err == nil {
		t.Error("an unknown forced compiler was accepted")
	}
	// A forced NVRTC version asks only for its soname, and never falls back to clang.
	var asked []string
	only := func(names []string) (*NVRTC, error) {
		asked = names
		if names[0] == "libnvrtc.so.11.2" {
			return nv, nil
		}
		return nil, &NotFoundError{Names: names}
	}
	if n, c, err := chooseCompiler("nvrtc11", only, haveCl); n != nv || c != nil || err != nil || !reflect.DeepEqual(asked, []string{"libnvrtc.so.11.2"}) {
		t.Errorf("nvrtc11 forced: got %v %v %v asking %q, want NVRTC from libnvrtc.so.11.2", n, c, err, asked)
	}
	if n, c, err := chooseCompiler("nvrtc12", only, haveCl); n != nil || c != nil || err == nil || !strings.Contains(err.Error(), "nvrtc12 allows no other") {
		t.Errorf("nvrtc12 forced but missing: got %v %v %v, want an error", n, c, err)
	}
	if _, _, err := chooseCompiler("", only, haveCl); !reflect.DeepEqual(asked, NVRTCNames) {
		t.Errorf("unforced: asked for %q (%v), want NVRTCNames", asked, err)
	}
	if got := CompilerName(nil, cl); got != "clang 14.0.6" {
		t.Errorf("CompilerName(clang) = %q", got)
	}
	if got := CompilerName(nil, nil); got != "none" {
		t.Errorf("CompilerName() = %q", got)
	}
}

func TestClangArch(t *testing.T) {
	for cc, want := range map[int]int{70: 70, 75: 70, 80: 80, 86: 80, 90: 80} {
		if got, err := ClangArch(cc); got != want || err != nil {
			t.Errorf("ClangArch(%d) = %d, %v; want %d", cc, got, err, want)
		}
	}
	if _, err := ClangArch(61); err == nil {
		t.Error("ClangArch(61) accepted an architecture older than the oldest target")
	}
}

func TestFindClangReportsAVersion(t *testing.T) {
	c := requireClang(t)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(c.Version) {
		t.Errorf("version %q", c.Version)
	}
}

// FindClang reads a clang's version and back ends in one run of it (-v -print-targets: the version
// on stderr, the targets on stdout), and says which fails: checked with stand-in clangs that log
// their runs.
func TestFindClangRunsClangOnce(t *testing.T) {
	for _, tt := range []struct{ name, version, targets, want string }{
		{"fits", "Debian clang version 14.0.6", "nvptx64 x86-64", "14.0.6"},
		{"old", "clang version 13.0.1", "nvptx64", "older than 14"},
		{"no nvptx", "clang version 16.0.6", "x86-64", "has no NVPTX back end"},
		{"no version", "cc", "nvptx64", "no version in \"cc\""},
	} {
		dir := t.TempDir()
		runs := dir + "/runs"
		script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\n[ \"$*\" = \"-v -print-targets\" ] || exit 1\necho '%s' >&2\necho '  Registered Targets:'\necho '    %s'\n",
			runs, tt.version, tt.targets)
		if err := os.WriteFile(dir+"/clang", []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		c, err := FindClang()
		if got := fmt.Sprint(c, err); !strings.Contains(got, tt.want) {
			t.Errorf("%s: got %s, want %q", tt.name, got, tt.want)
		}
		if log, err := os.ReadFile(runs); err != nil || string(log) != "-v -print-targets\n" {
			t.Errorf("%s: clang ran %q (%v), want once, with -v -print-targets", tt.name, log, err)
		}
	}
}

func TestFindClangWithoutOneSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if c, err := FindClang(); err == nil || !strings.Contains(err.Error(), "clang not found on PATH") {
		t.Errorf("got %v, %v; want clang not found on PATH", c, err)
	}
}

// clang compiles every kernel of matmul.cu, the WMMA inline PTX included, for both targets (the
// compiles TestClangLadderKernelsMatchGonum runs: ClangMatmul).
func TestClangCompilesEveryKernel(t *testing.T) {
	c := requireClang(t)
	for _, arch := range PTXArchs {
		ptx, log, err := ClangMatmul(c, arch)
		if err != nil {
			t.Fatalf("compute_%d: %v", arch, err)
		}
		if strings.TrimSpace(log) != "" {
			t.Errorf("compute_%d: clang warns:\n%s", arch, log)
		}
		if !strings.Contains(ptx, ".target sm_"+strconv.Itoa(arch)) {
			t.Errorf("compute_%d: PTX is not for sm_%d", arch, arch)
		}
		for _, e := range Entries() {
			if e.Source != "matmul.cu" {
				continue
			}
			want := arch >= e.MinCC
			if got := strings.Contains(ptx, ".entry "+e.Entry+"("); got != want {
				t.Errorf("compute_%d: entry %s present = %v, want %v", arch, e.Entry, got, want)
			}
		}
	}
}

// A compile error comes back in NVRTC's form on the source's own line numbers, and a message from
// the prelude never stands in for the learner's line.
func TestClangCompileErrorHasLineNumbers(t *testing.T) {
	c := requireClang(t)
	src := "// a comment\nextern \"C\" __global__ void k(float* x) {\n  x[threadIdx.x] = nope;\n}\n"
	_, _, err := c.Compile(context.Background(), src, "cell.cu", 80)
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "cell.cu(3): error: use of undeclared identifier 'nope'") {
		t.Fatalf("got %v, want a CompileError with cell.cu(3): error: …", err)
	}
	if strings.Contains(err.Error(), "cell.cu:3:") {
		t.Errorf("clang's own form is left in the log: %v", err)
	}
}

// A kernel written for NVRTC without any #include uses the built-in variables, vector types,
// __ldg, shuffles, votes, atomics and math functions; with the prelude, clang takes it too.
func TestClangPreludeCoversNVRTCBuiltins(t *testing.T) {
	c := requireClang(t)
	src := `
template <typename T, int N> __device__ __forceinline__ T warpSum(T v) {
#pragma unroll
    for (int o = N / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
extern "C" __global__ void __launch_bounds__(128) every(const float4* __restrict__ in, float* out, double* d,
                                                        unsigned int* u, int* s, size_t n) {
    __shared__ int tile[128];
    dim3 bd = blockDim;
    uint3 t = threadIdx;
    size_t i = blockIdx.x * bd.x + t.x;
    float4 v = i < n ? __ldg(&in[i]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    int2 p = make_int2(1, 2);
    double2 q = make_double2(1.0, 2.0);
    float x = v.x + v.y + v.z + v.w + p.x + (float)q.y;
    x += expf(x) + exp2f(x) + exp10f(x) + expm1f(x) + logf(x) + log2f(x) + log10f(x) + log1pf(x);
    x += sinf(x) + cosf(x) + tanf(x) + tanhf(x) + sinhf(x) + coshf(x) + atanf(x) + atan2f(x, v.y);
    x += asinf(x) + acosf(x) + powf(x, 2.5f) + sqrtf(x) + rsqrtf(x) + hypotf(x, v.w) + fabsf(x) + fmaf(x, x, x);
    x += fminf(x, 1.0f) + fmaxf(x, 2.0f) + floorf(x) + ceilf(x) + truncf(x) + roundf(x) + rintf(x) + copysignf(x, -1.0f);
    x += __expf(x) + __logf(x) + __sinf(x) + __cosf(x) + __powf(x, 2.0f) + __fdividef(x, 3.0f) + __saturatef(x);
    x += min(x, 1.0f) + max(1, (int)t.y) + warpSum<float, 32>(x) + (float)warpSize;
    d[i] = exp(d[i]) + log(d[i]) + pow(d[i], 1.5) + sqrt(d[i]) + fabs(d[i]) + floor(d[i]) + warpSum<double, 32>(d[i]);
    tile[t.x] = __popc(u[i]) + __clz(s[i]) + __ffs(s[i]) + (int)__brev(u[i]) + __mulhi(s[i], 3) + abs(s[i]);
    __syncthreads();
    unsigned int b = __ballot_sync(0xffffffffu, tile[t.x ^ 1] > 0) + __all_sync(0xffffffffu, x > 0) + __any_sync(0xffffffffu, x < 0);
    b += __shfl_sync(0xffffffffu, b, 0) + __shfl_xor_sync(0xffffffffu, b, 1) + __shfl_up_sync(0xffffffffu, b, 1) + __activemask();
    atomicAdd(out, x);
    atomicAdd(d, 1.0);
    atomicAdd(u, b);
    atomicAdd(&tile[0], 1);
    atomicSub(s, 1); atomicExch(u + 1, b); atomicMin(s + 1, (int)b); atomicMax(u + 2, b); atomicInc(u + 3, 7u);
    atomicDec(u + 4, 7u); atomicCAS(s + 2, 0, 1); atomicAnd(u + 5, b); atomicOr(u + 6, b); atomicXor(u + 7, b);
    __syncwarp();
    __threadfence();
    if (__syncthreads_count(x > 0) > 3) out[1 + i] = x;
    if (i == 0) printf("%f\n", x);
}
`
	ptx, log, err := c.Compile(context.Background(), src, "cell.cu", 80)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(log) != "" {
		t.Errorf("clang warns:\n%s", log)
	}
	// Everything is inline or an instruction: the only call is printf's vprintf.
	for _, line := range strings.Split(ptx, "\n") {
		if strings.Contains(line, ".extern") && !strings.Contains(line, "vprintf") {
			t.Errorf("PTX calls out of the module: %s", strings.TrimSpace(line))
		}
	}
	for _, want := range []string{`shfl\.sync\.down`, `vote\.sync\.ballot`, `atom(\.global)?\.add\.f32`, `atom(\.global)?\.add\.f64`,
		`ld\.global\.nc\.v4\.f32`, `bar\.sync`} {
		if !regexp.MustCompile(want).MatchString(ptx) {
			t.Errorf("PTX has no %s", want)
		}
	}
}

func TestBareFileNames(t *testing.T) {
	in := "\t.file\t1 \"/work/main/cell.cu\"\n\t.file 2 \"/usr/include/x.h\", 0, 0\n\t.loc\t1 3 4\n// \"/a/b\"\n"
	want := "\t.file\t1 \"cell.cu\"\n\t.file 2 \"x.h\", 0, 0\n\t.loc\t1 3 4\n// \"/a/b\"\n"
	if got := bareFileNames(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
