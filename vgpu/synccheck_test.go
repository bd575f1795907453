package vgpu

import (
	"context"

	"errors"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// launchSync runs kernel k(float* out, int n) of src, compiled by NVRTC, over 2 blocks of 64
// threads with n = 100.
func launchSync(t *testing.T, src string) error {
	t.Helper()
	m := compileCUDA(t, src)
	out := NewBuffer("out", 4*128)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{64},
		Params: []Arg{Ptr(out), S32(100)}, Buffers: []*Buffer{out}})
	return err
}

// A __syncthreads() that some threads of a block go past without waiting, and then exit, is a
// barrier fault on the barrier's line naming a skipping thread and the line it went on to
// (compute-sanitizer's synccheck); before, the barrier was released once the skipping threads had
// exited and the kernel passed.
func TestSynccheckBarrierSkippedBySomeThreads(t *testing.T) {
	for _, tc := range []struct {
		name, src       string
		barLine, goLine int // source lines of the barrier and of where a skipping thread went
	}{
		{"if (t < k) { …; __syncthreads(); }", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x;
	if (t < 32) {
		s[t] = t;
		__syncthreads();
		s[t] += s[31 - t];
	}
	out[blockIdx.x * 64 + t] = s[t];
}
`, 6, 9},
		{"if (t % 2 == 0) __syncthreads();", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x;
	s[t] = t;
	if (t % 2 == 0) __syncthreads();
	out[blockIdx.x * 64 + t] = s[t] * 2;
}
`, 5, 6},
		{"a second barrier skipped after a first that all reach", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64], r[64];
	int t = threadIdx.x;
	s[t] = t;
	__syncthreads();
	float v = s[63 - t];
	if (v > 20) {
		r[t] = v;
		__syncthreads();
		v += r[t];
	}
	out[blockIdx.x * 64 + t] = v;
}
`, 9, 12},
		{"a value stored before the barrier, stored again after it", bpSkip, 6, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := launchSync(t, tc.src)
			var f *Fault
			if !errors.As(err, &f) || f.Kind != "barrier" {
				t.Fatalf("got %v, want a barrier fault", err)
			}
			if !strings.HasSuffix(f.Source, ":"+strconv.Itoa(tc.barLine)) || !strings.HasSuffix(f.OtherSource, ":"+strconv.Itoa(tc.goLine)) {
				t.Errorf("fault at %q, the skipping thread at %q; want lines %d and %d: %v", f.Source, f.OtherSource, tc.barLine, tc.goLine, err)
			}
			if !strings.Contains(err.Error(), "went past") || !strings.Contains(err.Error(), "synccheck") {
				t.Errorf("message %q does not say a thread went past the barrier", err)
			}
		})
	}
}

// Threads that exit take no part in a barrier (sm_70 and later): an early return before the
// barrier, an exit from a loop after its barriers and a return inside such a loop pass.
func TestSynccheckExitedThreadsAreNotSkips(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"early return", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x, i = blockIdx.x * 64 + t;
	if (i >= n) return;
	s[t] = i;
	__syncthreads();
	out[i] = s[t ^ 1];
}
`},
		{"early return with its own store", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x, i = blockIdx.x * 64 + t;
	if (i >= n) { out[i] = -1; return; }
	s[t] = i;
	__syncthreads();
	out[i] = s[t];
}
`},
		{"exit from a loop after its barriers", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x;
	float acc = 0;
	for (int it = 0; it < 8; it++) {
		s[t] = acc + it;
		__syncthreads();
		acc += s[63 - t];
		__syncthreads();
		if (acc > 100 + t) { out[blockIdx.x * 64 + t] = acc; return; }
	}
	out[blockIdx.x * 64 + t] = acc;
}
`},
		{"tree reduction", `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x, i = blockIdx.x * 64 + t;
	s[t] = i < n ? i : 0;
	__syncthreads();
	for (int h = 32; h > 0; h >>= 1) {
		if (t < h) s[t] += s[t + h];
		__syncthreads();
	}
	if (t == 0) out[blockIdx.x] = s[0];
}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "early return with its own store" && nvrtcMajor(t) >= 12 {
				// NVRTC 12.4 merges the early return's store with the barrier path's into one
				// instruction tagged with the later line: from the branch on, the PTX is bpSkip's
				// (TestSynccheckEarlyReturnIsASkipsPTX), and synccheck reports both
				// (docs/vgpu-sanitizer.md, Limits). NVRTC 11.8 tags the merged store line 0.
				t.Skip("known false alarm under NVRTC 12: the early return's store merged with the barrier path's")
			}
			if err := launchSync(t, tc.src); err != nil {
				t.Errorf("got %v, want no fault", err)
			}
		})
	}
}

// nvrtcMajor is the major version of the NVRTC that compileCUDA uses (skipping without one).
func nvrtcMajor(t *testing.T) int {
	t.Helper()
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	v, err := n.Version()
	if err != nil {
		t.Fatal(err)
	}
	major, _, _ := strings.Cut(v, ".")
	m, err := strconv.Atoi(major)
	if err != nil {
		t.Fatalf("NVRTC version %q", v)
	}
	return m
}

// bpSkip is a real skipped barrier: odd threads go past the __syncthreads() on line 6 and store on
// line 7 what they stored to shared memory on line 5.
const bpSkip = `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x, i = blockIdx.x * 64 + t;
	float v = i < n ? i : -1;
	s[t] = v;
	if (t % 2 == 0) __syncthreads();
	out[i] = s[t];
}
`

// Why the early return with its own store cannot be told from a skip under NVRTC 12: its predicated
// branch around the barrier, and its PTX from the barrier to the end (instructions and .loc lines,
// registers aside), are bpSkip's: what a skipping thread runs and what synccheck judges it by. The thread that returns early executes no ret before the barrier: it
// branches to the code both paths share, runs the merged store (line 7) and only then the one ret.
// When a later NVRTC compiles the two differently this test fails: look again at the skip test.
func TestSynccheckEarlyReturnIsASkipsPTX(t *testing.T) {
	if nvrtcMajor(t) < 12 {
		t.Skip("NVRTC 11 tags the merged store line 0")
	}
	const early = `extern "C" __global__ void k(float* out, int n) {
	__shared__ float s[64];
	int t = threadIdx.x, i = blockIdx.x * 64 + t;
	if (i >= n) { out[i] = -1; return; }
	s[t] = i;
	__syncthreads();
	out[i] = s[t];
}
`
	got, want := tailFromBranch(t, early), tailFromBranch(t, bpSkip)
	if got != want || !strings.Contains(got, "bar.sync") {
		t.Errorf("the early return's branch and PTX from its barrier on:\n%s\nthe skip's:\n%s", got, want)
	}
}

// tailFromBranch is the first predicated branch of kernel k of src and its PTX from the first
// bar.sync to the end, one instruction or .loc per line, with register numbers left out.
func tailFromBranch(t *testing.T, src string) string {
	t.Helper()
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	ptx, _, err := n.Compile(src, "k.cu", "compute_80", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	_, br, ok1 := strings.Cut(ptx, "@%p")
	_, tail, ok2 := strings.Cut(ptx, "bar.sync")
	if !ok1 || !ok2 {
		t.Fatalf("no predicated branch or no barrier in\n%s", ptx)
	}
	br, _, _ = strings.Cut(br, "\n")
	tail, _, _ = strings.Cut(tail, "\n}")
	var b strings.Builder
	for _, f := range strings.Split("@%p"+br+"\nbar.sync"+tail, "\n") {
		b.WriteString(regNumber.ReplaceAllString(strings.Join(strings.Fields(f), " "), "$1") + "\n")
	}
	return b.String()
}

var regNumber = regexp.MustCompile(`(%[a-z]+)[0-9]+`)
