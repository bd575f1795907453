package tpucore

import (
	"context"
	"sort"
)

// Copy is one DMA between HBM and VMEM: What it moves ("A", "B", "A+B" into VMEM; "C" out), its
// start and end in seconds from the kernel's start, and its size in bytes.
type Copy struct {
	What  string  `json:"what"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Bytes int64   `json:"bytes"`
	// For is the grid step the copy serves, and I, J, K its block: the step whose inputs it brings
	// into VMEM (a step's Next copy serves the step after it), or whose output block it writes out.
	For int64 `json:"for"`
	I   int   `json:"i"`
	J   int   `json:"j"`
	K   int   `json:"k"`
}

// Step is one grid step of the pipeline, for the timeline: its index and block coordinates (I along
// m, J along n, K along k), the copy of the next step's inputs it overlaps (issued as its compute
// starts; nil on the last step), its compute (Start to MXUEnd on the MXUs, to End with the VPU's
// epilogue) in seconds, and, on a block's last k step, the output copy to HBM.
type Step struct {
	Step   int64   `json:"step"`
	I      int     `json:"i"`
	J      int     `json:"j"`
	K      int     `json:"k"`
	Next   *Copy   `json:"next,omitempty"`
	Start  float64 `json:"start"`
	MXUEnd float64 `json:"mxu_end"`
	End    float64 `json:"end"`
	Out    *Copy   `json:"out,omitempty"`
	// First is the prologue's copy of step 0's inputs (step 0 only).
	First *Copy `json:"first,omitempty"`
}

// Part is one share of the modelled time, in seconds.
type Part struct {
	Label   string
	Seconds float64
}

// Result is a modelled matmul: its time, the bytes moved at each level and where the time went.
// Modelled from published figures, never measured.
type Result struct {
	// Seconds is the modelled time of the whole kernel.
	Seconds float64
	Steps   int64
	// FLOPs is the useful work, 2·m·n·k.
	FLOPs float64
	// PaddedM, PaddedK and PaddedN are the dimensions rounded up to whole blocks.
	PaddedM, PaddedK, PaddedN int
	// HBMToVMEM and VMEMToHBM are the bytes copied each way; VMEMToMXU the operand bytes fed to the
	// MXUs (LHS rows once per weight tile, the weight tiles once each); Accumulator the bytes the VPU
	// reads and writes of the f32 accumulator in VMEM.
	HBMToVMEM, VMEMToHBM, VMEMToMXU, Accumulator int64
	// Utilisation is FLOPs / (Seconds × the dtype's peak): the share of the MXUs' peak the product
	// reached.
	Utilisation float64
	// Parts split Seconds: useful MXU work, padding, MXU fill/drain and idle MXUs, the VPU beyond the
	// MXUs, and waiting for HBM, largest first.
	Parts []Part
	// DMABusy is the seconds the DMA queue moved bytes; Core the seconds the MXUs and VPU computed.
	DMABusy, Core float64
}

// Dominant says what bounds the kernel: PartCopies when the DMA queue is busy longer than the core
// computes (memory-bound: the copies set the pace even where compute overlaps them), else the
// largest of the core's parts.
func (r Result) Dominant() string {
	if r.DMABusy > r.Core || len(r.Parts) == 0 {
		return PartCopies
	}
	return r.Parts[0].Label
}

// Labels of Result.Parts.
const (
	PartUseful   = "useful MXU work"
	PartPadding  = "padding (blocks past the matrix's edge)"
	PartFill     = "MXU fill, drain and idle MXUs"
	PartVPU      = "VPU (accumulate, epilogue) beyond the MXUs"
	PartWaitHBM  = "waiting for HBM copies"
	PartCopies   = "HBM↔VMEM copies (memory-bound)"
	checkEvery   = 1 << 12
	defaultLimit = 1 << 22
)

// MaxSteps bounds the grid steps Simulate walks.
const MaxSteps = defaultLimit

// PeakFor is the core's peak rate for the dtype in FLOP/s: bf16's, a third of it for f32 (3 passes),
// the int8 rate for int8.
func (p Matmul) PeakFor() float64 {
	if p.DType.Name == "int8" {
		return p.Gen.PeakInt8
	}
	return p.Gen.PeakBF16 / float64(p.DType.Passes)
}

// dmaQueue is the one queue of copies between HBM and VMEM.
type dmaQueue struct {
	free, busy, bw float64
}

func (q *dmaQueue) copy(what string, issue float64, bytes int64) *Copy {
	start := max(issue, q.free)
	d := float64(bytes) / q.bw
	q.free, q.busy = start+d, q.busy+d
	return &Copy{What: what, Start: start, End: q.free, Bytes: bytes}
}

// Simulate models p (which must pass Check) step by step in grid order (k innermost), calling frame,
// if not nil, with each step. It returns ctx's error when cancelled.
func Simulate(ctx context.Context, p Matmul, frame func(Step)) (Result, error) {
	if err := p.Check(); err != nil {
		return Result{}, err
	}
	gm, gn, gk := p.Grid()
	clock := p.Gen.ClockHz()
	mxu, acc, epi := float64(p.BlockCycles())/clock, float64(p.vregCycles())/clock, float64(p.EpilogueCycles())/clock
	eb, ob := int64(p.DType.Bytes), int64(p.DType.OutBytes)
	aBytes, bBytes, cBytes := int64(p.BM)*int64(p.BK)*eb, int64(p.BK)*int64(p.BN)*eb, int64(p.BM)*int64(p.BN)*ob
	q := &dmaQueue{bw: p.Gen.HBM}
	res := Result{Steps: p.Steps(), FLOPs: 2 * float64(p.M) * float64(p.N) * float64(p.K), PaddedM: gm * p.BM, PaddedK: gk * p.BK, PaddedN: gn * p.BN}
	first := q.copy("A+B", 0, aBytes+bBytes) // step 0's, block (0, 0, 0)
	res.HBMToVMEM = first.Bytes
	inEnd, prevEnd := first.End, 0.0
	var s int64
	var core, vpuExtra float64
	for i := range gm {
		for j := range gn {
			for k := range gk {
				if s%checkEvery == 0 {
					if err := cancelled(ctx); err != nil {
						return Result{}, err
					}
				}
				st := Step{Step: s, I: i, J: j, K: k, Start: max(inEnd, prevEnd)}
				if s == 0 {
					st.First = first
				}
				if what, bytes, ni, nj, nk := nextInputs(i, j, k, gn, gk, aBytes, bBytes); s+1 < res.Steps {
					st.Next = q.copy(what, st.Start, bytes)
					st.Next.For, st.Next.I, st.Next.J, st.Next.K = s+1, ni, nj, nk
					res.HBMToVMEM += bytes
					inEnd = st.Next.End
				}
				st.MXUEnd = st.Start + mxu
				st.End = st.Start + max(mxu, acc)
				vpuExtra += max(mxu, acc) - mxu
				if k == gk-1 {
					st.End += epi
					vpuExtra += epi
					st.Out = q.copy("C", st.End, cBytes)
					st.Out.For, st.Out.I, st.Out.J, st.Out.K = s, i, j, k
					res.VMEMToHBM += cBytes
				}
				core += st.End - st.Start
				prevEnd = st.End
				if frame != nil {
					frame(st)
				}
				s++
			}
		}
	}
	res.Seconds = max(prevEnd, q.free)
	res.DMABusy, res.Core = q.busy, core
	p.account(&res, mxu, core, vpuExtra)
	return res, nil
}

// nextInputs is what the step after (i, j, k), block (ni, nj, nk), copies in: A's block (ni, nk)
// unless its index is unchanged, B's block (nk, nj) likewise.
func nextInputs(i, j, k, gn, gk int, aBytes, bBytes int64) (what string, bytes int64, ni, nj, nk int) {
	ni, nj, nk = i, j, k+1
	if nk == gk {
		nk, nj = 0, j+1
		if nj == gn {
			nj, ni = 0, i+1
		}
	}
	aSame, bSame := ni == i && nk == k, nk == k && nj == j
	switch {
	case aSame && bSame:
		return "", 0, ni, nj, nk
	case aSame:
		return "B", bBytes, ni, nj, nk
	case bSame:
		return "A", aBytes, ni, nj, nk
	}
	return "A+B", aBytes + bBytes, ni, nj, nk
}

// account fills res's utilisation, byte counts at the MXU and accumulator, and the parts of its time.
func (p Matmul) account(res *Result, mxu, core, vpuExtra float64) {
	peak := p.PeakFor()
	res.Utilisation = res.FLOPs / (res.Seconds * peak)
	padded := 2 * float64(res.PaddedM) * float64(res.PaddedN) * float64(res.PaddedK)
	useful := res.FLOPs / peak
	padding := (padded - res.FLOPs) / peak
	fill := float64(res.Steps)*mxu - padded/peak
	wait := res.Seconds - core
	res.Parts = []Part{{PartUseful, useful}, {PartPadding, padding}, {PartFill, max(fill, 0)}, {PartVPU, vpuExtra}, {PartWaitHBM, max(wait, 0)}}
	sort.SliceStable(res.Parts, func(a, b int) bool { return res.Parts[a].Seconds > res.Parts[b].Seconds })
	opBytes := int64(p.DType.Bytes)
	if p.DType.Name == "f32" {
		opBytes = 2 // three passes over bf16 pieces
	}
	tiles := int64(p.BK/MXUSize) * int64(p.BN/MXUSize) * int64(p.DType.Passes)
	res.VMEMToMXU = res.Steps * tiles * (int64(p.BM)*MXUSize + MXUSize*MXUSize) * opBytes
	res.Accumulator = res.Steps * 2 * 4 * int64(p.BM) * int64(p.BN)
}
