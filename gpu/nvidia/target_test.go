package nvidia

import (
	"context"
	"testing"
)

// Architectures read as PTX writes them after "compute_"; anything else is refused.
func TestArchNumber(t *testing.T) {
	for _, c := range []struct {
		in       string
		cc       int
		specific bool
		ok       bool
	}{{"80", 80, false, true}, {"90a", 90, true, true}, {"a", 0, false, false}, {"90b", 0, false, false}, {"-5", 0, false, false}, {"", 0, false, false}} {
		cc, specific, err := ArchNumber(c.in)
		if cc != c.cc || specific != c.specific || (err == nil) != c.ok {
			t.Errorf("ArchNumber(%q) = %d, %v, %v; want %d, %v, ok %v", c.in, cc, specific, err, c.cc, c.specific, c.ok)
		}
	}
}

// ptxas is given sm_90a for PTX that targets it (it refuses that PTX for sm_90), sm_<cc> otherwise.
func TestPtxasArch(t *testing.T) {
	a := ".version 8.4\n.target sm_90a\n.address_size 64\n"
	b := ".version 8.4\n.target sm_90\n"
	if got := PtxasArch(a, 90); got != "sm_90a" {
		t.Errorf("sm_90a PTX: got %s", got)
	}
	if got := PtxasArch(b, 90); got != "sm_90" {
		t.Errorf("sm_90 PTX: got %s", got)
	}
	if got := PtxasArch(a, 100); got != "sm_100" {
		t.Errorf("sm_90a PTX for sm_100: got %s", got)
	}
}

// NVRTC 12 compiles compute_90a; NVRTC 11.8 cannot, and CompileFor gives compute_90 instead.
func TestCompileForArchSpecific(t *testing.T) {
	src := `extern "C" __global__ void k(float* x) { asm volatile("wgmma.fence.sync.aligned;"); x[0] = 1; }`
	for _, c := range []struct{ lib, want string }{{"libnvrtc.so.12", "sm_90a"}, {"libnvrtc.so.11.2", "sm_90"}} {
		nv, err := LoadNVRTCFrom([]string{c.lib})
		if err != nil {
			t.Logf("skipping %s: %v", c.lib, err)
			continue
		}
		ptx, err := CompileFor(context.Background(), nv, nil, "", src, "cell.cu", "90a")
		if err != nil || PTXTarget(ptx) != c.want {
			t.Errorf("%s: target %q, %v; want %s", c.lib, PTXTarget(ptx), err, c.want)
		}
	}
}

// An arch string is compiled for as its number, whatever way a request spelled it: "+090" is
// compute_90, never passed on as sent.
func TestCompileForCanonicalArch(t *testing.T) {
	nv, err := LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	src := `extern "C" __global__ void k(float* x) { x[0] = 1; }`
	for arch, want := range map[string]string{"+090": "sm_90", "0080": "sm_80", "090a": "sm_90a"} {
		ptx, err := CompileFor(context.Background(), nv, nil, "", src, "cell.cu", arch)
		if err != nil || PTXTarget(ptx) != want {
			t.Errorf("%q: target %q, %v; want %s", arch, PTXTarget(ptx), err, want)
		}
	}
}
