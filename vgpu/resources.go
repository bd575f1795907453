package vgpu

import "fmt"

// Resources is what a kernel's PTX says about the resources its occupancy depends on.
type Resources struct {
	// StaticShared is the bytes of static shared memory a block has: module-level .shared variables,
	// then the kernel's and its .funcs' (aligned as the virtual GPU lays them out); dynamic (extern)
	// shared memory comes on top, per launch.
	StaticShared int
	// DeclaredRegisters is the 32-bit registers the .reg declarations of the kernel and its .funcs
	// name: a 64-bit register counts two, a 16- or 32-bit one one, a predicate none. PTX registers
	// are virtual (one per value NVRTC produced, never reused): ptxas allocates far fewer (it reuses
	// them), or more for what it needs itself, so this is not a register count to compute occupancy
	// from, only the size of the code's name space.
	DeclaredRegisters int
	// MaxNReg, MinNCTAPerSM, MaxNTID and ReqNTID are the kernel's performance-tuning directives (zero
	// when absent; Function).
	MaxNReg, MinNCTAPerSM int
	MaxNTID, ReqNTID      [3]int
}

// Resources returns kernel entry's Resources.
func (m *Module) Resources(entry string) (Resources, error) {
	f := m.Function(entry)
	if f == nil || f.decl || !f.Entry {
		return Resources{}, fmt.Errorf("no kernel %q in the PTX module", entry)
	}
	prog, err := f.decoded()
	if err != nil {
		return Resources{}, err
	}
	r := Resources{StaticShared: prog.sharedTop, MaxNReg: f.MaxNReg, MinNCTAPerSM: f.MinNCTAPerSM, MaxNTID: f.MaxNTID, ReqNTID: f.ReqNTID}
	for _, fi := range prog.funcs {
		for _, in := range fi.fn.body {
			if d := in.decl; d != nil && d.typ != "pred" {
				r.DeclaredRegisters += len(d.names) * max(1, typeSizes[d.typ]/4)
			}
		}
	}
	return r, nil
}
