package vgpu

// The decoder's opcode table. An instruction's opcode is split at its dots (splitOp); its base
// ("add" of "add.rn.f32", "ld" of "ld.global.v4.f32") picks a row here, and the row's decode
// function checks the type suffixes, modifiers and operand shapes the family accepts and fills in
// the inst: its registers and the exec function the interpreter calls for it (exec.go and the
// family's own file). One row is one opcode family: the names that share a decoder, as GPGPU-Sim's
// opcodes.def lists each PTX opcode once beside the function that implements it.
//
// Two families are tables of their own, one row an opcode, because their opcodes differ only in
// the lane function: arithmetic and logic (aluOps, aluops.go: source count, source types and the
// lane functions for integer and floating-point types) and atomics (atomRows, atomic.go); cvt
// picks its lane function from cvtKinds (cvt.go) by the direction of the conversion. A base
// that is in no row is a predicate operation when its one type is .pred (decodePredLogic) and an
// arithmetic one otherwise (decodeALU, which rejects what aluOps does not list).

// decodeFunc decodes one instruction of a family: m is its opcode split into parts, s the parsed
// instruction with its operands. It returns an *UnsupportedError (d.errf) for what the virtual GPU
// does not run.
type decodeFunc func(d *decoder, in *inst, m mods, s pinst) error

// opRow is one opcode family: the PTX base names it covers, the shape of one of its instructions
// (form: its types and operands, as PTX; TestOpRowsDecodeTheirForms decodes each) and the function
// that decodes it.
type opRow struct {
	names  []string
	form   string
	decode decodeFunc
}

// opRows is the opcode table. To add an opcode family, add a row (and its decode and exec
// functions in the file of its kind; see doc.go, "Adding an instruction").
var opRows = []opRow{
	// control flow (here) and barriers (decode.go)
	{[]string{"bra", "brx"}, "bra.uni done", (*decoder).decodeBra},
	{[]string{"ret", "exit"}, "exit", (*decoder).decodeRet},
	{[]string{"trap"}, "trap", (*decoder).decodeTrap},
	{[]string{"bar", "barrier"}, "bar.sync 0", (*decoder).decodeBar},
	// fences (globalrace.go) and hints the interpreter needs no work for (here)
	{[]string{"membar"}, "membar.gl", (*decoder).decodeMembar},
	{[]string{"nanosleep", "pmevent", "prefetch", "prefetchu", "discard", "applypriority", "createpolicy"},
		"nanosleep.u32 20", (*decoder).decodeNop},
	// asynchronous barriers and Hopper's single-thread and proxy instructions (mbarrier.go, hopper.go)
	{[]string{"mbarrier"}, "mbarrier.init.shared::cta.b64 [bar], %r1", (*decoder).decodeMbarrier},
	{[]string{"elect"}, "elect.sync _|%p1, 0xffffffff", (*decoder).decodeElect},
	{[]string{"setmaxnreg"}, "setmaxnreg.inc.sync.aligned.u32 240", (*decoder).decodeSetmaxnreg},
	{[]string{"fence"}, "fence.proxy.async", (*decoder).decodeFence},
	{[]string{"mapa"}, "mapa.shared::cluster.u32 %r1, %r2, %r3", (*decoder).decodeMapa}, // cluster.go
	// data movement and memory (decode.go, atomic.go, cpasync.go)
	{[]string{"mov"}, "mov.u32 %r1, %tid.x", (*decoder).decodeMov},
	{[]string{"ld", "ldu", "st"}, "ld.global.v2.f32 {%f1, %f2}, [%rd1+8]", (*decoder).decodeLdSt},
	{[]string{"cvta"}, "cvta.to.global.u64 %rd2, %rd1", (*decoder).decodeCvta},
	{[]string{"atom", "red"}, "atom.global.add.u32 %r1, [%rd1], %r2", (*decoder).decodeAtom},
	{[]string{"cp"}, "cp.async.ca.shared.global [%r1], [%rd1], 16", (*decoder).decodeCpAsync},
	// comparison, selection and conversion (alu.go, cvt.go)
	{[]string{"setp"}, "setp.lt.and.s32 %p1|%p2, %r1, %r2, !%p3", (*decoder).decodeSetp},
	{[]string{"selp", "slct"}, "selp.b32 %r1, %r2, 7, %p1", (*decoder).decodeSelp},
	{[]string{"cvt"}, "cvt.rn.f32.s32 %f1, %r1", (*decoder).decodeCvt},
	// warp-level (warplevel.go, redux.go, mma.go)
	{[]string{"shfl"}, "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1", (*decoder).decodeShfl},
	{[]string{"vote", "activemask"}, "vote.sync.ballot.b32 %r1, %p1, -1", (*decoder).decodeVote},
	{[]string{"match"}, "match.any.sync.b32 %r1, %r2, -1", (*decoder).decodeMatch},
	{[]string{"redux"}, "redux.sync.add.u32 %r1, %r2, -1", (*decoder).decodeRedux},
	{[]string{"wmma"}, "wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%r1, %r2, %r3, %r4}, [%rd1], %r5",
		(*decoder).decodeWmma},
	{[]string{"ldmatrix"}, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r2}, [%r3]", (*decoder).decodeLdmatrix},
	{[]string{"wgmma"}, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, 1, 1, 1, 0, 0",
		(*decoder).decodeWgmma},
	{[]string{"mma"}, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8}",
		(*decoder).decodeMma},
}

// opIndex is opRows by base name.
var opIndex = indexOps(opRows)

// indexOps maps each name of rows to its decode function; a name in two rows is a mistake in the
// table and panics when the package loads.
func indexOps(rows []opRow) map[string]decodeFunc {
	ix := map[string]decodeFunc{}
	for _, r := range rows {
		for _, n := range r.names {
			if _, dup := ix[n]; dup {
				panic("vgpu: opcode " + n + " is in two rows of opRows")
			}
			ix[n] = r.decode
		}
	}
	return ix
}

// decodeOp decodes an instruction by its family's row.
func (d *decoder) decodeOp(in *inst, m mods, s pinst) error {
	if f, ok := opIndex[m.base]; ok {
		return f(d, in, m, s)
	}
	if len(m.types) == 1 && m.types[0].kind == 'p' {
		return d.decodePredLogic(in, m, s)
	}
	return d.decodeALU(in, m, s)
}

func (d *decoder) decodeBra(in *inst, m mods, s pinst) error {
	if m.base == "brx" || len(s.args) != 1 || s.args[0].kind != oReg {
		return d.errf("only bra to a label is supported")
	}
	if err := d.only(m, 0); err != nil {
		return err
	}
	in.ctl, in.class = ctlBra, ClassBranch
	d.label = s.args[0].name
	return nil
}

func (d *decoder) decodeRet(in *inst, m mods, s pinst) error {
	in.ctl, in.class = ctlExit, ClassBranch
	if m.base == "ret" {
		in.ctl, in.target = ctlRet, int32(d.fidx)
	}
	return d.only(m, 0)
}

func (d *decoder) decodeTrap(in *inst, m mods, s pinst) error {
	in.ctl, in.class = ctlTrap, ClassOther
	return nil
}

// decodeNop: instructions that order or hint memory traffic the interpreter runs in order anyway.
func (d *decoder) decodeNop(in *inst, m mods, s pinst) error {
	in.ctl, in.class = ctlNop, ClassOther
	return nil
}
