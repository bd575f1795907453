package gpu

import (
	"context"
	"strconv"
	"sync"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// Machine is a server's GPU as cell kinds use it (it satisfies cells.GPU): the device report from
// the probe, and the supervised worker that does all GPU work.
type Machine struct {
	Worker *Supervisor
	Report nvidia.Report
	// Compiler compiles learners' kernels, each in a process of its own under time and memory
	// limits; nil: one with the default limits over the Worker's Transport.
	Compiler *Compiler

	once sync.Once
}

// Unavailable says why GPU kernels cannot run here; "" when they can.
func (m *Machine) Unavailable() string { return m.Report.Unavailable }

// Device is the first GPU, or nil.
func (m *Machine) Device() *nvidia.Device {
	if m.Report.Unavailable != "" || len(m.Report.Devices) == 0 {
		return nil
	}
	return &m.Report.Devices[0]
}

// Measure times one kernel in the worker (Run); its error does not repeat the kernel and size,
// which the caller (harness.Run's note) names.
func (m *Machine) Measure(ctx context.Context, req Request, progress func(done int)) (harness.Result, error) {
	return run(ctx, m.Worker, req, progress)
}

// Compile compiles CUDA C++ to PTX for the virtual architecture arch ("80", "90a"; "": Arch's)
// with the Compiler: in a short-lived process of its own, not the GPU worker, limited in time and
// memory.
func (m *Machine) Compile(ctx context.Context, source, name, arch string) (string, error) {
	out, err := m.CompileSass(ctx, source, name, arch, nil)
	return out.PTX, err
}

// CompileSass is Compile, then ptxas -v on the PTX for each sm_<N> of sass (sm_<N>a for PTX that
// targets it) in the same confined process (Compiler.CompileSass): each kernel's registers, shared
// memory and spills.
func (m *Machine) CompileSass(ctx context.Context, source, name, arch string, sass []int) (Compiled, error) {
	return m.compiler().CompileSass(ctx, source, name, m.archOr(arch), sass)
}

// CompileSassLines is CompileSass for sm_<sm>, with the SASS instructions each line of the PTX
// became for it (Compiler.CompileSassLines), the source compiled for arch ("": Arch's).
func (m *Machine) CompileSassLines(ctx context.Context, source, name, arch string, sm int) (Compiled, error) {
	return m.compiler().CompileSassLines(ctx, source, name, m.archOr(arch), sm)
}

// Disassemble is CompileSass for sm_<sm>, with the SASS ptxas makes for it and each instruction's
// source line (Compiler.Disassemble), the source compiled for arch, or where arch is "" for the
// older of Arch and sm (a cell whose datasheet GPU is a T4 gets compute_75 PTX, which ptxas
// assembles for sm_75).
func (m *Machine) Disassemble(ctx context.Context, source, name, arch string, sm int) (Compiled, error) {
	if arch == "" {
		arch = strconv.Itoa(min(m.Arch(), sm))
	}
	return m.compiler().Disassemble(ctx, source, name, arch, sm)
}

// archOr is arch, or where it is "" Arch's ("80").
func (m *Machine) archOr(arch string) string {
	if arch == "" {
		return strconv.Itoa(m.Arch())
	}
	return arch
}

// compiler is m.Compiler, made (the default limits over the Worker's Transport) where nil.
func (m *Machine) compiler() *Compiler {
	m.once.Do(func() {
		if m.Compiler == nil {
			m.Compiler = &Compiler{Transport: m.Worker.Transport}
		}
	})
	return m.Compiler
}

// Arch is the virtual architecture learners' kernels compile for: the first device's compute
// capability, or 80 (compute_80: Ampere and newer) without one.
func (m *Machine) Arch() int {
	if d := m.Device(); d != nil {
		return d.ComputeCapability
	}
	return 80
}
