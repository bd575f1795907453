package vgpu

import (
	"fmt"
	"math"
	"strings"
)

// Decoding: each parsed instruction becomes an inst the interpreter runs without looking at text.
// Every operand becomes a register index: immediates, special registers (%tid.x …) and symbol
// addresses get constant registers that are filled once per warp, so that the hot loop reads only
// [32]uint64 rows of the register file.

// UnsupportedError is an instruction the interpreter does not implement: its PTX line and text,
// the .loc source line it came from (if the PTX has one), and the CUDA feature it belongs to, in
// words (Feature).
type UnsupportedError struct {
	Line   int
	Opcode string
	Why    string
	// Source is "file:line" from the instruction's .loc; Instr the PTX line's text.
	Source string
	Instr  string
}

func (e *UnsupportedError) Error() string {
	what := e.Opcode + " is not supported by the virtual GPU"
	if f := Feature(e.Opcode); f != "" {
		what = fmt.Sprintf("%s (%s) are not supported by the virtual GPU", f, e.Opcode)
	}
	if e.Why != "" {
		what += ": " + e.Why
	}
	return "unsupported: " + where(e.Source, e.Line, e.Instr, what)
}

// features maps PTX opcode prefixes to the CUDA features that compile to them (PTX ISA 8.x,
// chapter 9.7; CUDA C++ Programming Guide, sections named in each entry), longest prefix first
// where one is a prefix of another.
var features = []struct{ prefix, feature string }{
	{"tex.", "texture fetches (tex1Dfetch, tex2D, texture objects: \"Texture Memory\")"},
	{"tld4", "texture gathers (tex2Dgather: \"Texture Memory\")"},
	{"txq", "texture queries (\"Texture Memory\")"},
	{"suld", "surface loads (surf2Dread: \"Surface Memory\")"},
	{"sust", "surface stores (surf2Dwrite: \"Surface Memory\")"},
	{"sured", "surface reductions (\"Surface Memory\")"},
	{"suq", "surface queries (\"Surface Memory\")"},
	{"cp.async.bulk", "Hopper's tensor memory accelerator copies other than tile loads completing on an mbarrier (multicast included) and stores (im2col, prefetch; TMA, cp.async.bulk: \"Asynchronous Data Copies using the Tensor Memory Accelerator\")"},
	{"cp.reduce.async.bulk", "Hopper's tensor memory accelerator reductions (TMA: \"Asynchronous Data Copies using the Tensor Memory Accelerator\")"},
	{"cp.async", "asynchronous copies to shared memory other than cp.async.ca/.cg.shared.global with commit_group, wait_group/wait_all and cp.async.mbarrier.arrive (\"Asynchronous Data Copies\")"},
	{"wgmma", "Hopper's warpgroup matrix multiply-accumulate (wgmma) shapes and types other than m64nNk16 with f16 or bf16 inputs and f32 accumulators"},
	{"mbarrier", "asynchronous barriers other than a block's own in its shared memory (mbarrier on .shared::cluster other than arrive, pending_count, arrive.noComplete: \"Asynchronous Barrier\")"},
	{"ldmatrix", "tensor-core fragment loads other than ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16"},
	{"stmatrix", "tensor-core fragment stores (stmatrix)"},
	{"mma", "warp-level matrix multiply-accumulate (mma.sync) shapes and types other than m16n8k16 and m16n8k8 .row.col with f16 or bf16 inputs and f32 accumulators"},
	{"wmma", "wmma shapes and types other than m16n16k16 with f16 or bf16 inputs and f32 accumulators (\"Warp Matrix Functions\")"},
	{"bar.red", "barrier reductions (__syncthreads_count, __syncthreads_and, __syncthreads_or)"},
	{"barrier.red", "barrier reductions (__syncthreads_count, __syncthreads_and, __syncthreads_or)"},
	{"griddepcontrol", "programmatic dependent launch (cudaGridDependencySynchronize)"},
	{"brx.idx", "indirect branches (a switch compiled to a jump table)"},
	{"testp", "floating-point class tests (isinf, isfinite, isnormal: testp)"},
	{"alloca", "dynamic stack allocation (alloca)"},
	{"multimem", "multimem (NVLink multicast) accesses"},
	{"red.async", "distributed shared memory (red.async: \"Distributed Shared Memory\")"},
	{"st.async", "distributed shared memory (st.async: \"Distributed Shared Memory\")"},
}

// Feature names in words the CUDA feature the PTX opcode op (with its modifiers, "tex.2d.v4.f32.f32")
// belongs to, for those the virtual GPU does not run; "" for others.
func Feature(op string) string {
	for _, f := range features {
		if strings.HasPrefix(op, f.prefix) {
			return f.feature
		}
	}
	return ""
}

// control kinds of an instruction, handled by the scheduler loop itself.
const (
	ctlNone uint8 = iota
	ctlBra
	ctlExit // exit: ends the thread
	ctlRet  // ret: returns from a .func, or ends the thread in the kernel itself
	ctlCall // call to a .func (target: the callee's index in program.funcs)
	ctlBar
	ctlTrap
	ctlNop
	ctlMbWait   // mbarrier.test_wait / try_wait (mbarrier.go)
	ctlNamedBar // bar.sync/arrive with a thread count or a register operand (namedbar.go)
)

// instruction classes for counts.
const (
	ClassFMA32 = iota // fma/mad on f32 (2 FLOPs a lane)
	ClassFP           // other floating point
	ClassInt          // integer, logic, predicate, conversions, moves
	ClassLoad
	ClassStore
	ClassBranch
	ClassBarrier
	ClassAtomic
	ClassShuffle // shfl, vote
	ClassTensor  // wmma
	ClassOther
	NumClasses
)

// ClassNames are the names of the instruction classes, by index.
var ClassNames = [NumClasses]string{"fp32-fma", "fp-other", "integer", "load", "store", "branch",
	"barrier", "atomic", "shuffle", "tensor", "other"}

// state spaces
const (
	spGeneric uint8 = iota
	spGlobal
	spShared
	spLocal
	spParam
	spConst
	spDsmem // .shared::cluster: the CTA's own shared memory or, mapped by mapa, another CTA's (cluster.go)
)

var spaceNames = [...]string{"generic", "global", "shared", "local", "param", "const", "shared::cluster"}

type inst struct {
	exec     func(w *warp, in *inst, m uint32)
	ctl      uint8
	class    uint8
	guardNot bool
	space    uint8
	size     uint8  // bytes of one element of a memory access
	nvec     uint8  // elements of a vector access (1, 2, 4)
	signed   bool   // sign-extending narrow loads
	mode     uint8  // rounding mode / op variant
	flops    uint16 // FLOPs per active lane
	guard    int32  // predicate register, or -1
	d, d2    int32
	a, b, c  int32
	vec      [8]int32 // vector registers of ld/st (and wmma fragments, see wmma.go)
	off      int64
	target   int32
	line     int32
	loc      int32
	self     int32 // this instruction's index in the program
	barID    int32
	nbar     *namedBarOp                 // bar/barrier with a thread count or register operands (namedbar.go)
	f        func(a, b, c uint64) uint64 // per-lane ALU function
	cmp      func(a, b uint64) bool      // setp comparison
	boolop   uint8
	wm       *wmmaOp
	ldm      *ldmatrixOp // ldmatrix (mma.go)
	mma      *mmaOp      // mma.sync (mma.go)
	cp       *cpAsyncOp  // cp.async and its commit and wait (cpasync.go)
	mb       *mbarOp     // mbarrier and cp.async.mbarrier.arrive (mbarrier.go)
	bulk     *bulkOp     // cp.async.bulk{.tensor} (tma.go)
	proxy    bool        // fence.proxy.async (hopper.go)
	wg       *wgmmaOp    // wgmma (wgmma.go)
	atom     *atomOp
	call     *callSite
	sem      uint8  // memory-ordering bits for the global race check (globalrace.go)
	strong   bool   // ld/st .volatile, .relaxed, .acquire, .release: atomic on global memory
	past     uint64 // bit k: in the past set of barrier prog.bars[k] (synccheck.go)
}

// constant register kinds, filled per warp
const (
	ckImm = iota
	ckTid
	ckNtid
	ckCtaid
	ckNctaid
	ckLaneid
	ckWarpid
	ckNwarpid
	ckSmid
	ckGridid
	ckLanemaskEq
	ckLanemaskLt
	ckLanemaskLe
	ckLanemaskGt
	ckLanemaskGe
	ckDynSmem
	ckTotalSmem
	ckClusterCtarank // the cluster registers (cluster.go)
	ckClusterNctarank
	ckClusterid
	ckNclusterid
	ckClusterCtaid
	ckClusterNctaid
	ckExplicitCluster
)

type constReg struct {
	reg  int32
	kind uint8
	dim  uint8
	val  uint64
}

type program struct {
	fn        *Function
	code      []inst
	nregs     int // data registers, constants included
	npreds    int
	consts    []constReg
	shared    map[string]int // static shared variables' offsets
	sharedTop int            // bytes of static shared memory
	dynAlign  int
	localSize int // bytes of local memory (the whole stack) per thread
	params    map[string]Param
	funcs     []*funcInfo // funcs[0] is the kernel; the rest the .funcs it can call
	calls     bool        // the kernel calls .funcs
	recursive bool
	bars      []int32 // the barrier instructions checked for skips (synccheck.go)
}

type decoder struct {
	mod    *Module
	fn     *Function
	p      *program
	scopes []map[string]regInfo
	immIdx map[[2]uint64]int32
	spIdx  map[[2]int]int32
	line   int
	op     string
	fi     *funcInfo
	fidx   int
	funcIx map[string]int
	label  string // the label a branch being decoded jumps to (decodeBra)
}

type regInfo struct {
	idx   int32
	pred  bool
	typ   string
	frame bool // a .local or call-sequence .param variable: idx holds its local address
	size  int  // frame variables: bytes
}

func (d *decoder) errf(format string, args ...any) error {
	return &UnsupportedError{Line: d.line, Opcode: d.op, Why: fmt.Sprintf(format, args...)}
}

func (d *decoder) lookup(name string) (regInfo, bool) {
	for i := len(d.scopes) - 1; i >= 0; i-- {
		if r, ok := d.scopes[i][name]; ok {
			return r, true
		}
	}
	return regInfo{}, false
}

func (d *decoder) newReg() int32 {
	d.p.nregs++
	return int32(d.p.nregs - 1)
}

func decodeFunction(mod *Module, f *Function) (*program, error) {
	p := &program{fn: f, shared: map[string]int{}, params: map[string]Param{}, dynAlign: 16}
	d := &decoder{mod: mod, fn: f, p: p, immIdx: map[[2]uint64]int32{}, spIdx: map[[2]int]int32{}}
	d.newReg() // register 0: a zero constant for absent sources
	p.consts = append(p.consts, constReg{reg: 0, kind: ckImm})
	for _, pr := range f.Params {
		p.params[pr.Name] = pr
	}
	order, callees, err := callGraph(mod, f)
	if err != nil {
		return nil, err
	}
	d.funcIx = map[string]int{}
	for i, g := range order {
		p.funcs = append(p.funcs, &funcInfo{fn: g, callees: callees[i]})
		d.funcIx[g.Name] = i
	}
	p.calls = len(order) > 1
	// shared: module-level .shared first, then the functions'; extern (dynamic) arrays start after
	// all static shared memory (PTX ISA 8.x, section 5.1.5 "Shared State Space").
	alloc := func(v Var, top *int, into map[string]int) {
		a := max(v.Align, 1)
		*top = (*top + a - 1) / a * a
		into[v.Name] = *top
		*top += v.Size
	}
	var externs []Var
	for _, v := range mod.Vars {
		if v.Space == "shared" {
			if v.Extern {
				externs = append(externs, v)
				continue
			}
			alloc(v, &p.sharedTop, p.shared)
		}
	}
	for _, g := range order {
		for _, v := range g.vars {
			if v.Space == "shared" {
				if v.Extern {
					externs = append(externs, v)
					continue
				}
				alloc(v, &p.sharedTop, p.shared)
			}
		}
	}
	for _, v := range externs {
		p.dynAlign = max(p.dynAlign, v.Align)
	}
	dynBase := (p.sharedTop + p.dynAlign - 1) / p.dynAlign * p.dynAlign
	for _, v := range externs {
		p.shared[v.Name] = dynBase
	}
	for i := range order {
		if err := d.decodeBody(i); err != nil {
			return nil, err
		}
	}
	if err := p.layoutStack(); err != nil {
		return nil, err
	}
	p.markPastBarriers(d.mod.Locs)
	holdWgmmaResults(p) // wgmmahold.go
	return p, nil
}

// decodeBody decodes function p.funcs[i], appending its code to the program.
func (d *decoder) decodeBody(i int) error {
	p := d.p
	fi := p.funcs[i]
	f := fi.fn
	d.fn, d.fi, d.fidx = f, fi, i
	d.scopes = []map[string]regInfo{{}}
	fi.regLo, fi.predLo = int32(p.nregs), int32(p.npreds)
	fi.entry = int32(len(p.code))
	if !f.Entry {
		for _, pr := range f.Params {
			fi.params = append(fi.params, d.frameVar(pr.Name, pr.Size, pr.Align))
		}
		for _, pr := range f.Returns {
			fi.rets = append(fi.rets, d.frameVar(pr.Name, pr.Size, pr.Align))
		}
	}
	for _, v := range f.vars {
		if v.Space == "local" {
			d.frameVar(v.Name, v.Size, v.Align)
		}
	}
	labels := map[string]int32{}
	var fixes []labelFix
	for _, s := range f.body {
		d.line = s.line
		switch {
		case s.scopeDelta > 0:
			d.scopes = append(d.scopes, map[string]regInfo{})
		case s.scopeDelta < 0:
			d.scopes = d.scopes[:len(d.scopes)-1]
		case s.pvar != nil:
			d.frameVar(s.pvar.Name, s.pvar.Size, s.pvar.Align)
		case s.decl != nil:
			if err := d.declareRegs(s); err != nil {
				return err
			}
		case s.label != "":
			if _, dup := labels[s.label]; dup {
				return &ParseError{s.line, fmt.Sprintf("label %s defined twice", s.label)}
			}
			labels[s.label] = int32(len(p.code))
		default:
			in, label, err := d.decode(s)
			if u, ok := err.(*UnsupportedError); ok {
				u.Source, u.Instr = d.mod.source(s.loc), d.mod.Line(s.line)
			}
			if err != nil {
				return err
			}
			in.line = int32(s.line)
			in.loc = int32(s.loc)
			in.self = int32(len(p.code))
			if label != "" {
				fixes = append(fixes, labelFix{len(p.code), label, s.line})
			}
			p.code = append(p.code, in)
		}
	}
	// falling off the end of a function returns (PTX ISA 8.x, section 9.7.12.7 "ret")
	p.code = append(p.code, inst{ctl: ctlRet, class: ClassBranch, guard: -1, line: int32(f.Line), loc: -1,
		self: int32(len(p.code)), target: int32(i)})
	for _, fx := range fixes {
		t, ok := labels[fx.label]
		if !ok {
			return &ParseError{fx.line, fmt.Sprintf("branch to undefined label %s", fx.label)}
		}
		p.code[fx.at].target = t
	}
	fi.frameSize = (fi.frameSize + 15) / 16 * 16
	fi.regHi, fi.predHi = int32(p.nregs), int32(p.npreds)
	return nil
}

// labelFix is a branch at code[at] to a label, resolved once the function is decoded.
type labelFix struct {
	at    int
	label string
	line  int
}

// frameVar places a variable of the function being decoded in its frame: the .func's parameters
// and results, then .local variables and call-sequence .params, each in the thread's local memory
// at the frame's base (0 for the kernel). Its name becomes a register holding its local address;
// it returns its offset in the frame.
func (d *decoder) frameVar(name string, size, align int) int {
	p, fi := d.p, d.fi
	a := max(align, 1)
	fi.frameSize = (fi.frameSize + a - 1) / a * a
	off := fi.frameSize
	fi.frameSize += size
	r := d.newReg()
	if d.fidx == 0 {
		p.consts = append(p.consts, constReg{reg: r, kind: ckImm, val: uint64(off)})
	} else {
		fi.frameRegs = append(fi.frameRegs, frameReg{reg: r, off: uint32(off)})
	}
	d.scopes[len(d.scopes)-1][name] = regInfo{idx: r, frame: true, size: size}
	return off
}

// declareRegs declares the registers of a .reg statement in the innermost scope.
func (d *decoder) declareRegs(s pinst) error {
	p := d.p
	for _, n := range s.decl.names {
		if _, dup := d.scopes[len(d.scopes)-1][n]; dup {
			return &ParseError{s.line, fmt.Sprintf("register %s declared twice", n)}
		}
		ri := regInfo{typ: s.decl.typ}
		if s.decl.typ == "pred" {
			ri.pred = true
			ri.idx = int32(p.npreds)
			p.npreds++
		} else {
			ri.idx = d.newReg()
		}
		d.scopes[len(d.scopes)-1][n] = ri
	}
	if p.nregs+p.npreds > MaxRegisters {
		return &ParseError{s.line, fmt.Sprintf("more than %d registers", MaxRegisters)}
	}
	return nil
}

// ptype is a PTX fundamental type (PTX ISA 8.x, section 5.2.1 "Fundamental Types").
type ptype struct {
	name  string
	size  int  // bytes
	kind  byte // 's', 'u', 'b', 'f', 'p'
	valid bool
}

func parseType(s string) ptype {
	switch s {
	case "s8", "s16", "s32", "s64":
		return ptype{s, typeSizes[s], 's', true}
	case "u8", "u16", "u32", "u64":
		return ptype{s, typeSizes[s], 'u', true}
	case "b8", "b16", "b32", "b64", "b128":
		return ptype{s, typeSizes[s], 'b', true}
	case "f16", "bf16", "f32", "f64", "tf32", "f16x2", "bf16x2":
		return ptype{s, typeSizes[s], 'f', true}
	case "pred":
		return ptype{s, 1, 'p', true}
	}
	return ptype{}
}

func (t ptype) bits() uint { return uint(t.size) * 8 }

// mods is an opcode split into its parts.
type mods struct {
	base   string
	types  []ptype
	space  uint8
	hasSp  bool
	vec    int
	rnd    string
	ftz    bool
	sat    bool
	approx bool
	full   bool
	wide   bool
	lo, hi bool
	uni    bool
	words  []string // the remaining op-specific parts
}

var ignorable = map[string]bool{
	"volatile": true, "relaxed": true, "acquire": true, "release": true, "acq_rel": true, "weak": true,
	"sys": true, "gpu": true, "cta": true, "cluster": true, "ca": true, "cg": true, "cs": true, "lu": true,
	"cv": true, "wb": true, "wt": true, "nc": true, "noftz": true, "mmio": true,
}

func splitOp(op string) mods {
	parts := strings.Split(op, ".")
	m := mods{base: parts[0], vec: 1}
	for _, w := range parts[1:] {
		if t := parseType(w); t.valid {
			m.types = append(m.types, t)
			continue
		}
		switch w {
		case "global":
			m.space, m.hasSp = spGlobal, true
		case "shared", "shared::cta":
			m.space, m.hasSp = spShared, true
		case "shared::cluster":
			m.space, m.hasSp = spDsmem, true
		case "local":
			m.space, m.hasSp = spLocal, true
		case "param":
			m.space, m.hasSp = spParam, true
		case "const":
			m.space, m.hasSp = spConst, true
		case "v2", "v4":
			m.vec = int(w[1] - '0')
		case "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna":
			m.rnd = w
		case "ftz":
			m.ftz = true
		case "sat":
			m.sat = true
		case "approx":
			m.approx = true
		case "full":
			m.full = true
		case "wide":
			m.wide = true
		case "lo":
			m.lo = true
		case "hi":
			m.hi = true
		case "uni":
			m.uni = true
		default:
			if !ignorable[w] {
				m.words = append(m.words, w)
			}
		}
	}
	return m
}

// imm returns the constant register holding an immediate's bits, converted to type t (a float
// constant written for an integer instruction keeps its bits; PTX ISA 8.x, section 4.5).
func (d *decoder) imm(o operand, t ptype) (int32, error) {
	bits := o.bits
	if t.kind == 'f' {
		switch {
		case t.name == "f32" && o.num == numF64, t.name == "f32" && o.num == numFloat:
			bits = uint64(math.Float32bits(float32(math.Float64frombits(bits))))
		case t.name == "f64" && o.num == numF32:
			bits = math.Float64bits(float64(math.Float32frombits(uint32(bits))))
		case t.name == "f32" && o.num == numInt:
			bits = uint64(math.Float32bits(float32(int64(bits))))
		case t.name == "f64" && o.num == numInt:
			bits = math.Float64bits(float64(int64(bits)))
		case (t.name == "f16" || t.name == "bf16") && o.num != numInt:
			f := math.Float64frombits(bits)
			if o.num == numF32 {
				f = float64(math.Float32frombits(uint32(bits)))
			}
			if t.name == "f16" {
				bits = uint64(roundF16(f, rmNearest, 0))
			} else {
				bits = uint64(roundBF16(f, rmNearest, 0))
			}
		}
	}
	if t.size > 0 && t.size < 8 {
		bits &= 1<<(8*uint(t.size)) - 1
	}
	return d.constant(bits), nil
}

func (d *decoder) constant(bits uint64) int32 {
	k := [2]uint64{bits, 0}
	if r, ok := d.immIdx[k]; ok {
		return r
	}
	r := d.newReg()
	d.p.consts = append(d.p.consts, constReg{reg: r, kind: ckImm, val: bits})
	d.immIdx[k] = r
	return r
}

var specialRegs = map[string]uint8{
	"%tid": ckTid, "%ntid": ckNtid, "%ctaid": ckCtaid, "%nctaid": ckNctaid, "%laneid": ckLaneid,
	"%warpid": ckWarpid, "%nwarpid": ckNwarpid, "%smid": ckSmid, "%gridid": ckGridid,
	"%lanemask_eq": ckLanemaskEq, "%lanemask_lt": ckLanemaskLt, "%lanemask_le": ckLanemaskLe,
	"%lanemask_gt": ckLanemaskGt, "%lanemask_ge": ckLanemaskGe,
	"%dynamic_smem_size": ckDynSmem, "%total_smem_size": ckTotalSmem,
	"%cluster_ctarank": ckClusterCtarank, "%cluster_nctarank": ckClusterNctarank, "%clusterid": ckClusterid,
	"%nclusterid": ckNclusterid, "%cluster_ctaid": ckClusterCtaid, "%cluster_nctaid": ckClusterNctaid,
	"%is_explicit_cluster": ckExplicitCluster,
}

func (d *decoder) special(name string) (int32, bool) {
	base, dim := name, 0
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		switch name[i+1:] {
		case "x":
		case "y":
			dim = 1
		case "z":
			dim = 2
		default:
			return 0, false
		}
		base = name[:i]
	}
	k, ok := specialRegs[base]
	if !ok {
		return 0, false
	}
	key := [2]int{int(k), dim}
	if r, ok := d.spIdx[key]; ok {
		return r, true
	}
	r := d.newReg()
	d.p.consts = append(d.p.consts, constReg{reg: r, kind: k, dim: uint8(dim)})
	d.spIdx[key] = r
	return r, true
}

// symbolAddr is the address of a variable in its own state space, as mov takes it (PTX ISA 8.x,
// section 9.7.9.1 "mov": "the address of a variable … in its state space").
func (d *decoder) symbolAddr(name string) (uint64, uint8, bool) {
	if off, ok := d.p.shared[name]; ok {
		return uint64(off), spShared, true
	}
	if pr, ok := d.p.params[name]; ok {
		return uint64(pr.Offset), spParam, true
	}
	if off, ok := moduleVarOffset(d.mod, name); ok {
		return moduleWindow + uint64(off), spGlobal, true
	}
	return 0, 0, false
}

// src returns the register of a source operand of type t.
func (d *decoder) src(o operand, t ptype) (int32, error) {
	switch o.kind {
	case oImm:
		return d.imm(o, t)
	case oReg:
		if o.not {
			return 0, d.errf("a negated operand !%s is allowed only where a predicate is", o.name)
		}
		if r, ok := d.lookup(o.name); ok {
			if r.pred {
				return 0, d.errf("predicate %s used where a %s value is expected", o.name, t.name)
			}
			if o.off != 0 {
				return 0, d.errf("register %s+%d is not an operand", o.name, o.off)
			}
			return r.idx, nil
		}
		if r, ok := d.special(o.name); ok {
			return r, nil
		}
		if a, _, ok := d.symbolAddr(o.name); ok {
			return d.constant(a + uint64(o.off)), nil
		}
		return 0, d.errf("unknown register or symbol %s", o.name)
	}
	return 0, d.errf("expected a register or constant operand")
}

func (d *decoder) dst(o operand) (int32, error) {
	if o.kind == oSink {
		return d.newReg(), nil // a scratch register nobody reads
	}
	if o.kind != oReg || o.not {
		return 0, d.errf("expected a destination register")
	}
	r, ok := d.lookup(o.name)
	if !ok {
		return 0, d.errf("unknown register %s", o.name)
	}
	if r.pred {
		return 0, d.errf("predicate %s used where a value register is expected", o.name)
	}
	return r.idx, nil
}

func (d *decoder) pred(o operand) (int32, bool, error) {
	if o.kind != oReg {
		return 0, false, d.errf("expected a predicate")
	}
	r, ok := d.lookup(o.name)
	if !ok || !r.pred {
		return 0, false, d.errf("%s is not a predicate register", o.name)
	}
	return r.idx, o.not, nil
}

// predConst returns a predicate operand: a register, or a constant 0/1 (a fresh predicate
// register is not possible, so constants are turned into a comparison at decode time by callers).
func (d *decoder) nargs(in pinst, n int) error {
	if len(in.args) != n {
		return d.errf("takes %d operands, found %d", n, len(in.args))
	}
	return nil
}

func (d *decoder) decode(s pinst) (inst, string, error) {
	d.op = s.op
	in := inst{guard: -1, class: ClassInt}
	if s.opaque {
		return in, "", d.errf("")
	}
	if s.guard != "" {
		g, ok := d.lookup(s.guard)
		if !ok || !g.pred {
			return in, "", &ParseError{s.line, fmt.Sprintf("guard %s is not a predicate register", s.guard)}
		}
		in.guard, in.guardNot = g.idx, s.guardNot
	}
	if s.callee != "" || strings.HasPrefix(s.op, "call") {
		err := d.decodeCall(&in, s)
		return in, "", err
	}
	d.label = ""
	err := d.decodeOp(&in, splitOp(s.op), s)
	return in, d.label, err
}

func (d *decoder) only(m mods, ntypes int, words ...string) error {
	if len(m.types) != ntypes {
		return d.errf("expects %d type suffix(es)", ntypes)
	}
	for _, w := range m.words {
		ok := false
		for _, x := range words {
			if w == x {
				ok = true
			}
		}
		if !ok {
			return d.errf("unknown modifier .%s", w)
		}
	}
	return nil
}

// oneOf returns the first of m's words that is in set, or "".
func oneOf(m mods, set ...string) string {
	for _, w := range m.words {
		for _, s := range set {
			if w == s {
				return w
			}
		}
	}
	return ""
}

func (d *decoder) decodeBar(in *inst, m mods, s pinst) error {
	if strings.HasPrefix(s.op, "barrier.cluster.") {
		return d.decodeBarrierCluster(in, m, s) // cluster.go
	}
	in.class = ClassBarrier
	kind := oneOf(m, "sync", "arrive", "red", "warp")
	switch {
	case m.base == "bar" && kind == "warp":
		// bar.warp.sync membermask: the lanes are already in lockstep where the interpreter
		// reaches it; for the hazard check it orders the lanes it names (racecheck.go)
		if err := d.nargs(s, 1); err != nil {
			return err
		}
		var err error
		in.a, err = d.src(s.args[0], parseType("b32"))
		in.exec = execWarpSync
		return err
	case kind == "sync" || kind == "arrive" || (m.base == "barrier" && kind == ""):
	default:
		return d.errf("only bar.sync / barrier.sync, bar.arrive / barrier.arrive (and bar.warp.sync) are supported")
	}
	for _, w := range m.words {
		if w != "sync" && w != "arrive" && w != "aligned" {
			return d.errf("unknown modifier .%s", w)
		}
	}
	if len(s.args) < 1 || len(s.args) > 2 {
		return d.errf("needs a barrier number and an optional thread count (bar.sync 0; bar.sync 1, 64)")
	}
	if kind == "arrive" || len(s.args) == 2 || s.args[0].kind != oImm {
		return d.decodeNamedBar(in, s, kind == "arrive") // namedbar.go
	}
	in.barID = int32(s.args[0].bits)
	if in.barID < 0 || in.barID > 15 {
		return d.errf("barrier %d out of range 0..15", in.barID)
	}
	in.ctl = ctlBar
	return nil
}

func (d *decoder) decodeMov(in *inst, m mods, s pinst) error {
	if err := d.only(m, 1); err != nil {
		return err
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	t := m.types[0]
	dst, src := s.args[0], s.args[1]
	if src.kind == oReg && timerRegs[src.name] != 0 {
		return d.decodeTimer(in, dst, src)
	}
	if t.kind == 'p' {
		return d.decodePredLogic(in, mods{base: "mov", types: m.types}, s)
	}
	// packing and unpacking (PTX ISA 8.x, section 9.7.9.1 "mov": vector operands of a .b32/.b64 mov)
	if dst.kind == oVec || src.kind == oVec {
		if t.kind != 'b' {
			return d.errf("packing needs a .b type")
		}
		vec := src
		unpack := dst.kind == oVec
		if unpack {
			vec = dst
		}
		n := len(vec.elems)
		if n != 2 && n != 4 || t.size%n != 0 {
			return d.errf("cannot split .%s into %d parts", t.name, n)
		}
		part := ptype{fmt.Sprintf("b%d", t.size*8/n), t.size / n, 'b', true}
		for i, e := range vec.elems {
			var r int32
			var err error
			if unpack {
				r, err = d.dst(e)
			} else {
				r, err = d.src(e, part)
			}
			if err != nil {
				return err
			}
			in.vec[i] = r
		}
		in.nvec = uint8(n)
		in.size = uint8(part.size)
		if unpack {
			a, err := d.src(src, t)
			if err != nil {
				return err
			}
			in.a = a
			in.exec = execUnpack
		} else {
			r, err := d.dst(dst)
			if err != nil {
				return err
			}
			in.d = r
			in.exec = execPack
		}
		return nil
	}
	r, err := d.dst(dst)
	if err != nil {
		return err
	}
	a, err := d.src(src, t)
	if err != nil {
		return err
	}
	in.d, in.a = r, a
	mask := sizeMask(t.size)
	in.f = func(a, _, _ uint64) uint64 { return a & mask }
	in.exec = execMov
	return nil
}

func sizeMask(size int) uint64 {
	if size >= 8 {
		return math.MaxUint64
	}
	return 1<<(8*uint(size)) - 1
}

func (d *decoder) decodeLdSt(in *inst, m mods, s pinst) error {
	store := m.base == "st"
	if len(m.types) != 1 {
		return d.errf("expects one type suffix")
	}
	for _, w := range m.words {
		if w != "L2" && !strings.HasPrefix(w, "L1") && w != "aligned" {
			return d.errf("unknown modifier .%s", w)
		}
	}
	t := m.types[0]
	if t.kind == 'p' || t.size > 8 {
		return d.errf("cannot load or store .%s", t.name)
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	addrOp, valOp := s.args[1], s.args[0]
	if store {
		addrOp, valOp = s.args[0], s.args[1]
	}
	if addrOp.kind != oAddr {
		return d.errf("expects an address operand [..]")
	}
	in.space = m.space
	in.size = uint8(t.size)
	in.signed = t.kind == 's'
	in.nvec = uint8(m.vec)
	if store {
		in.class = ClassStore
	} else {
		in.class = ClassLoad
	}
	if err := d.address(in, addrOp, m.space); err != nil {
		return err
	}
	if m.vec > 1 {
		if valOp.kind != oVec || len(valOp.elems) != m.vec {
			return d.errf(".v%d needs a vector of %d registers", m.vec, m.vec)
		}
	} else if valOp.kind == oVec {
		return d.errf("a vector operand needs .v2 or .v4")
	}
	elems := []operand{valOp}
	if m.vec > 1 {
		elems = valOp.elems
	}
	for i, e := range elems {
		var r int32
		var err error
		if store {
			r, err = d.src(e, t)
		} else {
			r, err = d.dst(e)
		}
		if err != nil {
			return err
		}
		in.vec[i] = r
	}
	ldStExec(in, m, s.op, store)
	return nil
}

// ldStExec sets in's executor and memory-order semantics. Strong operations (PTX ISA 8.x,
// section 8 "Memory Consistency Model": .volatile, .relaxed, .acquire, .release) do not form data
// races with atomics of other CTAs: on global memory they read and write whole words atomically.
func ldStExec(in *inst, m mods, op string, store bool) {
	if store {
		in.exec = execSt
	} else {
		in.exec = execLd
	}
	in.sem = semOf(op) // in every state space: the cluster's synchronisations (dsmemrace.go)
	for _, q := range []string{".volatile", ".relaxed", ".acquire", ".release"} {
		if strings.Contains(op, q) && (m.space == spGlobal || m.space == spGeneric) {
			in.strong = true
			if store {
				in.exec = execStStrong
			} else {
				in.exec = execLdStrong
			}
		}
	}
}

// address decodes [reg+off], [sym+off] or [imm] into in.a (-1: none) and in.off.
func (d *decoder) address(in *inst, o operand, sp uint8) error {
	in.a = -1
	in.off = o.off
	if o.name == "" {
		return nil
	}
	if r, ok := d.lookup(o.name); ok {
		if r.pred {
			return d.errf("a predicate cannot be an address")
		}
		in.a = r.idx
		if r.frame {
			// a .local variable or call-sequence .param: its register holds its local address
			switch sp {
			case spLocal, spParam, spGeneric:
				in.space = spLocal
			default:
				return d.errf("%s is a .local or .param variable, accessed as .%s", o.name, spaceNames[sp])
			}
		}
		return nil
	}
	addr, ssp, ok := d.symbolAddr(o.name)
	if !ok {
		return d.errf("unknown address %s", o.name)
	}
	// a variable named in a generic access stands for its generic address (PTX ISA 8.x, 6.4.1)
	if sp == spGeneric {
		switch ssp {
		case spShared:
			addr += sharedWindow
		case spLocal:
			addr += localWindow
		case spParam:
			return d.errf("a kernel parameter has no generic address here; use ld.param")
		}
	} else if ssp != sp && !(sp == spConst && ssp == spGlobal) && !(sp == spDsmem && ssp == spShared) {
		return d.errf("%s is a .%s variable, accessed as .%s", o.name, spaceNames[ssp], spaceNames[sp])
	}
	in.off += int64(addr)
	return nil
}

func (d *decoder) decodeCvta(in *inst, m mods, s pinst) error {
	to := oneOf(m, "to") == "to"
	if err := d.only(m, 1, "to"); err != nil {
		return err
	}
	if !m.hasSp || m.space == spParam && to {
		return d.errf("needs a state space")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	r, err := d.dst(s.args[0])
	if err != nil {
		return err
	}
	t := m.types[0]
	var a int32
	if s.args[1].kind == oReg {
		if _, ok := d.lookup(s.args[1].name); !ok {
			// cvta.shared.u64 %rd, sym: the symbol's address in its space
			addr, _, ok := d.symbolAddr(s.args[1].name)
			if !ok {
				return d.errf("unknown symbol %s", s.args[1].name)
			}
			a = d.constant(addr + uint64(s.args[1].off))
		}
	}
	if a == 0 {
		if a, err = d.src(s.args[1], t); err != nil {
			return err
		}
	}
	in.d, in.a = r, a
	var base uint64
	switch m.space {
	case spShared:
		base = sharedWindow
	case spLocal:
		base = localWindow
	case spParam:
		base = paramWindow
	}
	mask := sizeMask(t.size)
	// PTX ISA 8.x, section 9.7.9.19 "cvta": generic ↔ state-space address. The global and const
	// windows are the identity here (their state-space addresses are their generic ones).
	if to {
		in.f = func(a, _, _ uint64) uint64 { return (a - base) & mask }
	} else {
		in.f = func(a, _, _ uint64) uint64 { return (a + base) & mask }
	}
	in.exec = execALU
	return nil
}
