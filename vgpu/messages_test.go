package vgpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// What a learner reads: faults name the buffer by its parameter name and the element (row and
// column of a matrix), the source line and both threads of a hazard; a divergent warp
// synchronisation is the kernel's bug; an unsupported instruction names its source line and the
// CUDA feature (issue 24, item 7).

const messageCorpus = `
extern "C" __global__ void rowpast(const float *A, float *out, int n) {
	int r = threadIdx.y, c = threadIdx.x;
	out[r * n + c] = A[(r + 1) * n + c]; // PAST
}

extern "C" __global__ void before(const float *A, float *out) {
	int t = threadIdx.x;
	out[t] = A[t - 1]; // BEFORE
}

extern "C" __global__ void halfshfl(float *out) {
	float v = threadIdx.x;
	if (threadIdx.x < 16)
		v += __shfl_down_sync(0xffffffff, v, 1); // SHFL
	out[threadIdx.x] = v;
}

extern "C" __global__ void halfmask(float *out) {
	out[threadIdx.x] = __shfl_sync(0x0000ffff, (float)threadIdx.x, 0); // HALFMASK
}

extern "C" __global__ void count(int *out) {
	out[threadIdx.x] = __syncthreads_count(threadIdx.x & 1); // COUNT
}

extern "C" __global__ void tex(cudaTextureObject_t tx, float *out) {
	out[threadIdx.x] = tex1Dfetch<float>(tx, threadIdx.x);
}

extern "C" __global__ void cpasync(const float *in, float *out) {
	__shared__ float s[32];
	unsigned dst = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(in + threadIdx.x)); // CPASYNC
	asm volatile("cp.async.wait_all;");
	out[threadIdx.x] = s[threadIdx.x];
}

extern "C" __global__ void race(int *out) {
	__shared__ int s[64];
	int t = threadIdx.x;
	s[t] = t; // STORE
	out[t] = s[(t + 32) & 63]; // LOAD
}
`

// wantFault runs entry and returns its fault's message, failing unless it is a *Fault of kind.
func wantFault(t *testing.T, m *Module, kind, entry string, block [3]int, bufs []*Buffer, extra ...Arg) string {
	t.Helper()
	var params []Arg
	for _, b := range bufs {
		params = append(params, Ptr(b))
	}
	_, err := Launch(t.Context(), m, entry, LaunchConfig{Grid: [3]int{1, 1, 1}, Block: block, Params: append(params, extra...), Buffers: bufs})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != kind {
		t.Fatalf("got %v, want a %q fault", err, kind)
	}
	return err.Error()
}

func wantAll(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("got %q, want it to contain %q", got, w)
		}
	}
}

func TestMessages(t *testing.T) {
	m := compileCUDA(t, messageCorpus)
	line := func(mark string) string { return fmt.Sprintf("k.cu:%d", srcLine(t, messageCorpus, mark)) }
	matrix := Shape{Elem: 4, Type: "float", Rows: 16, Cols: 16}
	t.Run("past the end of a matrix", func(t *testing.T) {
		A := NewBuffer("A", 4*256)
		A.Shape = matrix
		out := NewOutput("out", 4*256, Poisoned)
		got := wantFault(t, m, "out of bounds", "rowpast", [3]int{16, 16, 1}, []*Buffer{A, out}, S32(16))
		wantAll(t, got, "thread (0,15,0) of block (0,0,0), ", "4-byte global load past the end of buffer \"A\" (16×16 floats): element 256 = row 16, col 0 (rows 0–15), byte 1024 of 1024 (PTX line ", line("PAST")+": 4-byte", "ld.global.f32 %f1, [%rd")
	})
	t.Run("before the start", func(t *testing.T) {
		A := NewBuffer("A", 4*32)
		A.Shape = Shape{Elem: 4, Type: "float"}
		out := NewOutput("out", 4*32, Poisoned)
		got := wantFault(t, m, "out of bounds", "before", [3]int{32, 1, 1}, []*Buffer{A, out})
		wantAll(t, got, line("BEFORE")+": 4-byte global load before the start of buffer \"A\" (32 floats): element -1, byte -4")
	})
	t.Run("a vector without a shape", func(t *testing.T) {
		A := NewBuffer("A", 4*16)
		out := NewOutput("out", 4*256, Poisoned)
		got := wantFault(t, m, "out of bounds", "rowpast", [3]int{16, 16, 1}, []*Buffer{A, out}, S32(16))
		wantAll(t, got, `past the end of buffer "A" (64 bytes): byte 64`)
	})
	t.Run("divergent shuffle", func(t *testing.T) {
		got := wantFault(t, m, "divergent warp sync", "halfshfl", [3]int{32, 1, 1}, []*Buffer{NewOutput("out", 4*32, Poisoned)})
		wantAll(t, got, line("SHFL")+": shfl.sync with member mask 0xffffffff, but only lanes 0–15 reached it (lanes 16–31 took another path)", "Warp Shuffle Functions")
	})
	t.Run("lanes outside the mask", func(t *testing.T) {
		got := wantFault(t, m, "divergent warp sync", "halfmask", [3]int{32, 1, 1}, []*Buffer{NewOutput("out", 4*32, Poisoned)})
		wantAll(t, got, "thread (16,0,0) of block (0,0,0), ", line("HALFMASK")+": shfl.sync with member mask 0x0000ffff, executed by lanes 16–31, which the mask does not name")
	})
	t.Run("hazard", func(t *testing.T) {
		got := wantFault(t, m, "hazard", "race", [3]int{64, 1, 1}, []*Buffer{NewOutput("out", 4*64, Poisoned)})
		wantAll(t, got, "hazard: thread (", line("LOAD"), line("STORE"), "; the other access: thread (", " (PTX line ")
		if strings.Contains(got, ";;") || strings.Contains(got, "(-1,-1,-1)") {
			t.Errorf("got %q, want no \";;\" and real threads", got)
		}
	})
	t.Run("unsupported", func(t *testing.T) {
		_, err := launch1(t, m, "count", 1, 32, []*Buffer{NewOutput("out", 4*32, Poisoned)})
		var u *UnsupportedError
		if !errors.As(err, &u) {
			t.Fatalf("got %v, want an *UnsupportedError", err)
		}
		wantAll(t, err.Error(), line("COUNT")+": barrier reductions (__syncthreads_count", "(PTX line ", "bar.red.popc")
	})
	t.Run("unsupported texture", func(t *testing.T) {
		// its operands are beyond the parser: still an *UnsupportedError naming the feature (its
		// .loc is NVRTC's builtin header, where tex1Dfetch is defined)
		_, err := Launch(t.Context(), m, "tex", LaunchConfig{Block: [3]int{32, 1, 1}, Params: []Arg{U64(0), U64(0)}})
		var u *UnsupportedError
		if !errors.As(err, &u) {
			t.Fatalf("got %v, want an *UnsupportedError", err)
		}
		wantAll(t, err.Error(), "texture fetches (tex1Dfetch", "(PTX line ", ": tex.1d.v4.f32.s32 {%f")
	})
	t.Run("cp.async runs", func(t *testing.T) {
		in := make([]float32, 32)
		for i := range in {
			in[i] = float32(i) + 0.5
		}
		out := NewOutput("out", 4*32, Poisoned)
		if _, err := launch1(t, m, "cpasync", 1, 32, []*Buffer{Float32Buffer("in", in), out}); err != nil {
			t.Fatal(err)
		}
		for i, v := range out.Float32s() {
			if v != in[i] {
				t.Fatalf("out[%d] = %v, want %v", i, v, in[i])
			}
		}
	})
}

func TestFeature(t *testing.T) {
	for _, tt := range []struct{ op, want string }{
		{"tex.1d.v4.f32.s32", "texture fetches"},
		{"cp.async.mbarrier.arrive.shared.b64", "asynchronous copies"},
		{"cp.async.bulk.tensor.2d.shared::cluster.global", "tensor memory accelerator"},
		{"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "warpgroup"},
		{"mbarrier.init.shared.b64", "asynchronous barriers"},
		{"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync"},
		{"add.f32", ""},
	} {
		if got := Feature(tt.op); !strings.Contains(got, tt.want) || (tt.want == "") != (got == "") {
			t.Errorf("Feature(%q) = %q, want it to name %q", tt.op, got, tt.want)
		}
	}
}

func TestLanesText(t *testing.T) {
	for _, tt := range []struct {
		mask uint32
		want string
	}{
		{1 << 3, "lane 3"}, {0xffff, "lanes 0–15"}, {0b1_0111_0000_1111, "lanes 0–3, 8–10 and 12"},
	} {
		if got := lanesText(tt.mask); got != tt.want {
			t.Errorf("lanesText(%#x) = %q, want %q", tt.mask, got, tt.want)
		}
	}
}

// A null pointer and an access past a block's shared memory say where they went.
func TestMessagesOutsideBuffers(t *testing.T) {
	m := mustParse(t, header+`.visible .entry k()
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	mov.u64 %rd1, 8;
	ld.global.u32 %r1, [%rd1];
	ret;
}
.visible .entry s()
{
	.shared .align 4 .b8 buf[64];
	.reg .b32 %r<2>;
	ld.shared.u32 %r1, [buf+64];
	ret;
}
`)
	for _, tt := range []struct{ entry, want string }{
		{"k", "4-byte global load at 0x8, outside every buffer (a null pointer, or an offset from one)"},
		{"s", "4-byte shared load at 0x40, past the end of the 64-byte shared region"},
	} {
		_, err := Launch(t.Context(), m, tt.entry, LaunchConfig{Block: [3]int{1, 1, 1}})
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "out of bounds" {
			t.Fatalf("%s: got %v, want an out-of-bounds fault", tt.entry, err)
		}
		wantAll(t, err.Error(), tt.want)
	}
}
