package cuda

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/cells"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
)

// hopperCC is the compute capability whose architecture-specific target, compute_90a, a cell
// naming a Hopper datasheet GPU compiles for.
const hopperCC = "9.0"

// compileArch is the virtual architecture the cell's kernel compiles for, as PTX writes it after
// "compute_": "90a" (kcuda.HopperArch: wgmma, setmaxnreg, TMA, clusters) where the cell's `gpu:`
// key names a Hopper (the H100 SXM), as nvcc -arch=sm_90a would; "" otherwise, which is the
// server's own (its device's compute capability, or compute_80 without one: cells.GPU.Arch), so a
// cell naming no GPU compiles as it always has.
func (s Spec) compileArch() string {
	if s.GPU != nil && s.GPU.CC == hopperCC {
		return kcuda.HopperArch
	}
	return ""
}

// compiledArch is the virtual architecture ptx was compiled for, from its .target line
// ("sm_90a" → "90a"), or g's Arch where the PTX names none.
func compiledArch(ptx string, g cells.GPU) string {
	if t := kcuda.PTXTarget(ptx); t != "" {
		return strings.TrimPrefix(t, "sm_")
	}
	return strconv.Itoa(g.Arch())
}

// targetNote says what the kernel compiled for, and where the cell asked for compute_90a and this
// server's compiler could not give it (NVRTC 11.8, clang), what it got instead and what that loses.
func (s Spec) targetNote(ptx string, g cells.GPU) (level, msg string) {
	got := compiledArch(ptx, g)
	msg = fmt.Sprintf("custom: %s compiles for compute_%s", s.Kernel, got)
	if want := s.compileArch(); want != "" && got != want {
		return "warning", msg + fmt.Sprintf(", not the %s's compute_%s: this server's compiler has no architecture-specific targets (NVRTC 12.0 or newer has them; NVRTC 11.8 and clang do not), so wgmma and setmaxnreg do not assemble for a GPU (docs/gpu.md, \"Compilers\")", s.GPU.Name, want)
	}
	return "info", msg
}

// archUnavailable says why this server's GPU cannot run PTX compiled for arch ("90a"), "" when it
// can (or the device is unknown): architecture-specific PTX runs on its own compute capability
// only (compute_90a on sm_90), other PTX on its compute capability and newer ones.
func archUnavailable(g cells.GPU, arch string) string {
	d := g.Device()
	if arch == "" || d == nil {
		return ""
	}
	cc, specific, err := kcuda.ArchNumber(arch)
	switch {
	case err != nil:
		return ""
	case specific && d.ComputeCapability != cc:
		return fmt.Sprintf("the kernel is compute_%s PTX, which runs on sm_%d GPUs only, and this server's GPU (%s) is sm_%d: the virtual GPU runs it instead, and nothing is timed on the GPU", arch, cc, d.Name, d.ComputeCapability)
	case d.ComputeCapability < cc:
		return fmt.Sprintf("the kernel is compute_%s PTX, which this server's GPU (%s, sm_%d) cannot run: the virtual GPU runs it instead, and nothing is timed on the GPU", arch, d.Name, d.ComputeCapability)
	}
	return ""
}
