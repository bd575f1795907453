package nvidia

import (
	"os"
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
