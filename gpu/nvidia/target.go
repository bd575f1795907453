package nvidia

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A virtual architecture is written as PTX writes it after "compute_": "80", "90", or "90a", the
// architecture-specific target (PTX ISA 8.0, CUDA 12.0) whose PTX may use Hopper's wgmma and
// setmaxnreg and runs on compute capability 9.0 exactly (Kernel.Arch, PTXFile, HopperArch).

// ArchNumber is the compute capability of the virtual architecture arch ("90a" → 90, "80" → 80),
// and whether arch is architecture-specific (ends in "a"); an error where arch is neither.
func ArchNumber(arch string) (cc int, specific bool, err error) {
	num, specific := strings.CutSuffix(arch, "a")
	cc, err = strconv.Atoi(num)
	if err != nil || cc <= 0 || cc >= 1000 {
		return 0, false, fmt.Errorf("architecture %q is not compute_<N> or compute_<N>a", arch)
	}
	return cc, specific, nil
}

// ArchSpecific says whether this NVRTC compiles for architecture-specific targets (compute_90a):
// NVRTC 12.0 and newer do; 11.8, whose PTX ISA is 7.8, does not.
func (n *NVRTC) ArchSpecific() bool {
	v, err := n.Version()
	if err != nil {
		return false
	}
	major, _, _ := strings.Cut(v, ".")
	m, err := strconv.Atoi(major)
	return err == nil && m >= 12
}

// CompileFor is CompileWithHeaders for the virtual architecture arch ("80", "90a"). An
// architecture-specific arch the compiler cannot target (NVRTC before 12.0, clang) compiles for
// its compute capability alone ("90a" → compute_90; clang then for the newest it has, ClangArch):
// the PTX's .target line (PTXTarget) says what it got.
func CompileFor(ctx context.Context, nv *NVRTC, cl *Clang, headers, src, name, arch string) (string, error) {
	if err := refuse(src, name); err != nil {
		return "", err
	}
	cc, specific, err := ArchNumber(arch)
	if err != nil {
		return "", err
	}
	arch = strconv.Itoa(cc) // canonical: "+90" or "0090" from a request never reaches a flag as sent
	if specific && nv != nil && nv.ArchSpecific() {
		arch += "a"
	}
	device, left := DeviceOnly(src)
	ptx, err := compileDevice(ctx, nv, cl, headers, device, name, arch)
	var ce *CompileError
	if len(left) > 0 && errors.As(err, &ce) && !errors.As(err, new(refused)) {
		ce.Log = strings.TrimRight(ce.Log, "\n") + "\n" + hostNote(name, left)
	}
	return ptx, err
}

// ptxTarget finds a PTX module's .target directive's first architecture.
var ptxTarget = regexp.MustCompile(`(?m)^\s*\.target\s+(sm_[0-9]+a?)\b`)

// PTXTarget is the architecture ptx's .target directive names ("sm_90a"), or "" where it has none.
func PTXTarget(ptx string) string {
	if m := ptxTarget.FindStringSubmatch(ptx); m != nil {
		return m[1]
	}
	return ""
}

// PtxasArch is the real architecture ptxas assembles ptx for on compute capability cc: sm_<cc>, or
// sm_<cc>a where ptx targets that architecture-specific variant (ptxas refuses sm_90a PTX for
// sm_90).
func PtxasArch(ptx string, cc int) string {
	arch := fmt.Sprintf("sm_%d", cc)
	if PTXTarget(ptx) == arch+"a" {
		return arch + "a"
	}
	return arch
}
