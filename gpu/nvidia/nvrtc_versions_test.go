package nvidia

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requireNVRTCVersion opens the NVRTC of soname; in CI (CI=true, where .ci/run unpacks CUDA 12.4 and
// installs CUDA 11.8's) a missing one fails the test, elsewhere it skips.
func requireNVRTCVersion(t *testing.T, soname string) *NVRTC {
	t.Helper()
	n, err := LoadNVRTCFrom([]string{soname})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", soname, err)
		}
		t.Skipf("skipping: no %s (%v); .ci/run installs them", soname, err)
	}
	return n
}

// Both NVRTCs live in one process: each is bound by its own handle, compiles with its own PTX ISA
// and gets its own version's headers; opened again by soname (now on the loader path), each still
// names its own file, whichever was opened first.
func TestEachNVRTCVersionSideBySide(t *testing.T) {
	cases := []struct{ soname, version, isa string }{
		{"libnvrtc.so.12", "12.4", ".version 8.4"},
		{"libnvrtc.so.11.2", "11.8", ".version 7.8"},
	}
	files := map[string]string{}
	for _, c := range cases {
		n := requireNVRTCVersion(t, c.soname)
		if v, err := n.Version(); v != c.version || err != nil {
			t.Errorf("%s: version %q (%v), want %s", c.soname, v, err, c.version)
		}
		ptx, err := CompileArch(n, "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n", "k.cu", 80)
		if err != nil || !strings.Contains(ptx, c.isa+"\n") {
			t.Errorf("%s: PTX without %q (%v):\n%.200s", c.soname, c.isa, err, ptx)
		}
		headers := FindHeaders(n)
		if got, want := HeadersVersion(headers), map[string]int{"12.4": 12040, "11.8": 11080}[c.version]; got != want {
			t.Errorf("%s: headers %s are CUDA %d's, want %d", c.soname, headers, got, want)
		}
		// Its own builtins, and only those, are opened beside it.
		opened := n.PreloadBuiltins()
		for _, f := range opened {
			if !strings.HasPrefix(filepath.Base(f), "libnvrtc-builtins.so."+c.version) {
				t.Errorf("%s: opened %s, not its own builtins", c.soname, f)
			}
		}
		if len(opened) == 0 {
			t.Errorf("%s: no builtins opened beside %s", c.soname, n.Lib.Path)
		}
		files[c.soname] = resolvedFile(n.Lib.Path)
	}
	for _, c := range cases {
		again, err := Loader{}.NVRTCFrom([]string{c.soname})
		if err != nil {
			t.Fatal(err)
		}
		if again.Lib.Via != "loader path" || resolvedFile(again.Lib.Path) != files[c.soname] {
			t.Errorf("%s opened again: %s via %s, want %s via the loader path", c.soname, again.Lib.Path, again.Lib.Via, files[c.soname])
		}
	}
}

// CUDA 12.4 is the default where it is unpacked (.ci/run): LoadNVRTC prefers it to 11.8.
func TestDefaultNVRTCIsTheNewest(t *testing.T) {
	requireNVRTCVersion(t, "libnvrtc.so.12")
	n, err := LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.Version(); v != "12.4" {
		t.Errorf("LoadNVRTC opened NVRTC %s (%s), want 12.4", v, n.Lib.Path)
	}
}

// CUDA 12.4's headers serve cells under NVRTC 12.4: libcu++'s cuda::barrier and cuda::pipeline (its
// own "chrono", "new", <cstddef> … are read, not the stand-ins of those names), cuda_fp8.h, and a
// stand-in the source names itself (<cstdio>) beside them.
func TestCUDA12HeadersServeCells(t *testing.T) {
	n := requireNVRTCVersion(t, "libnvrtc.so.12")
	headers := FindHeaders(n)
	if !hasLibcuxx(headers) {
		t.Fatalf("%s holds no libcu++ (%s)", headers, libcuxxDir)
	}
	cases := map[string]struct{ src, want string }{
		"barrier": {`#include <cstdio>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
extern "C" __global__ void k(const float* in, float* out) {
    __shared__ float tile[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cooperative_groups::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, tile, in, sizeof(tile), bar);
    bar.arrive_and_wait();
    out[threadIdx.x] = tile[threadIdx.x] * 2.0f;
}
`, "mbarrier."},
		"fp8": {`#include <cuda_fp8.h>
extern "C" __global__ void k(const float* in, __nv_fp8_e4m3* out) {
    out[threadIdx.x] = __nv_fp8_e4m3(in[threadIdx.x]);
}
`, "e4m3"},
	}
	for name, c := range cases {
		ptx, err := CompileWithHeaders(context.Background(), n, nil, headers, c.src, "cell.cu", 90)
		if err != nil || !strings.Contains(ptx, c.want) {
			t.Errorf("%s: got %v, want PTX with %q:\n%.300s", name, err, c.want, ptx)
		}
	}
}

// With libcu++ in the headers' folder NVRTC gets only the stand-ins the source names.
func TestIncludedOnly(t *testing.T) {
	own := StandInHeaders()
	got := includedOnly(own, "#include <cstdio>\n  #  include \"cstdint\"\n#include <cuda/barrier>\n// #include <chrono> is a comment\nint x;\n")
	if len(got) != 2 || got["cstdio"] != own["cstdio"] || got["cstdint"] != own["cstdint"] {
		t.Errorf("got %v, want cstdio and cstdint", slices.Sorted(maps.Keys(got)))
	}
}

// Under NVRTC 12.4 every CUDA header a learner may include compiles alone with CUDA 12.4's headers
// (given only the stand-ins the source names, none here), but the .hpp files (which say to include
// their .h), type_traits and limits by those names (libcu++ 2.3 has them under cuda/std/) and the
// clang prelude.
func TestEveryAllowedHeaderUnderNVRTC12(t *testing.T) {
	n := requireNVRTCVersion(t, "libnvrtc.so.12")
	headers := FindHeaders(n)
	for _, h := range AllowedHeaders() {
		if strings.HasSuffix(h, ".hpp") || h == "type_traits" || h == "limits" || h == "clang_prelude.h" {
			continue // excused: what their compile gives is no verdict (about 0.1 CPU s each)
		}
		src := "#include <" + h + ">\nextern \"C\" __global__ void k(int* x) { x[0] = 1; }\n"
		if _, err := CompileWithHeaders(context.Background(), n, nil, headers, src, "cell.cu", 90); err != nil {
			t.Errorf("%s: %.600v", h, err)
		}
	}
}
