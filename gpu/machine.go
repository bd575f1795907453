package gpu

import (
	"context"
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

// Compile compiles CUDA C++ to PTX for Arch with the Compiler: in a short-lived process of its own,
// not the GPU worker, limited in time and memory.
func (m *Machine) Compile(ctx context.Context, source, name string) (string, error) {
	out, err := m.CompileSass(ctx, source, name, nil)
	return out.PTX, err
}

// CompileSass is Compile, then ptxas -v on the PTX for each sm_<N> of sass in the same confined
// process (Compiler.CompileSass): each kernel's registers, shared memory and spills.
func (m *Machine) CompileSass(ctx context.Context, source, name string, sass []int) (Compiled, error) {
	return m.compiler().CompileSass(ctx, source, name, m.Arch(), sass)
}

// CompileSassLines is CompileSass for sm_<sm>, with the SASS instructions each line of the PTX
// became for it (Compiler.CompileSassLines), the source compiled for Arch.
func (m *Machine) CompileSassLines(ctx context.Context, source, name string, sm int) (Compiled, error) {
	return m.compiler().CompileSassLines(ctx, source, name, m.Arch(), sm)
}

// Disassemble is CompileSass for sm_<sm>, with the SASS ptxas makes for it and each instruction's
// source line (Compiler.Disassemble), the source compiled for the older of Arch and sm (a cell
// whose datasheet GPU is a T4 gets compute_75 PTX, which ptxas assembles for sm_75).
func (m *Machine) Disassemble(ctx context.Context, source, name string, sm int) (Compiled, error) {
	return m.compiler().Disassemble(ctx, source, name, min(m.Arch(), sm), sm)
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
