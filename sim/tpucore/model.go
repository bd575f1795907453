package tpucore

import (
	"context"
	"fmt"
	"math"
)

// DType is the input element type of a matmul.
type DType struct {
	// Name is "bf16", "f32" or "int8".
	Name string
	// Bytes is an input element's size; OutBytes an output element's (bf16 out for bf16 in, f32 for
	// f32, int32 for int8).
	Bytes, OutBytes int
	// Passes is how many MXU passes one tile takes (3 for f32 at Precision.HIGH).
	// Int8 tiles stream at the generation's int8 rate (PeakInt8 / PeakBF16 times bf16's).
	Passes int
}

// DTypes are the input types the model knows.
var DTypes = []DType{{"bf16", 2, 2, 1}, {"f32", 4, 4, 3}, {"int8", 1, 4, 1}}

// LookupDType finds a dtype by name.
func LookupDType(name string) (DType, error) {
	for _, d := range DTypes {
		if d.Name == name {
			return d, nil
		}
	}
	return DType{}, fmt.Errorf("unknown dtype %q; known: bf16, f32, int8", name)
}

// Epilogues are the epilogues the model knows, with their VPU operations per output element beyond
// the cast: "none" 0, "relu" 1 (max), "bias_relu" 2 (add, max).
var Epilogues = map[string]int{"none": 0, "relu": 1, "bias_relu": 2}

// Matmul is one modelled product: C (M×N) = A (M×K) · B (K×N) in DType on Gen, tiled into blocks
// of BM×BK (A), BK×BN (B) and BM×BN (C), with Epilogue applied to C.
type Matmul struct {
	Gen        Generation
	DType      DType
	M, K, N    int
	BM, BK, BN int
	Epilogue   string
}

// Grid is the number of blocks along m, n and k (dimensions padded up to whole blocks).
func (p Matmul) Grid() (gm, gn, gk int) {
	return ceilDiv(p.M, p.BM), ceilDiv(p.N, p.BN), ceilDiv(p.K, p.BK)
}

// Steps is the number of grid steps, gm·gn·gk.
func (p Matmul) Steps() int64 {
	gm, gn, gk := p.Grid()
	return int64(gm) * int64(gn) * int64(gk)
}

// VMEMBytes is what the pipeline holds in VMEM, in bytes: two buffers of each input block and of the
// output block (double-buffering) and the f32 accumulator, 2·(bm·bk + bk·bn)·in + 2·bm·bn·out +
// 4·bm·bn. VMEMArithmetic writes the sum out.
func (p Matmul) VMEMBytes() int64 {
	bm, bk, bn := int64(p.BM), int64(p.BK), int64(p.BN)
	return 2*(bm*bk+bk*bn)*int64(p.DType.Bytes) + 2*bm*bn*int64(p.DType.OutBytes) + 4*bm*bn
}

// VMEMArithmetic is VMEMBytes written out, for errors and notes.
func (p Matmul) VMEMArithmetic() string {
	return fmt.Sprintf("2×(%d×%d + %d×%d)×%d B for the input blocks + 2×%d×%d×%d B for the output block + %d×%d×4 B for the f32 accumulator = %s",
		p.BM, p.BK, p.BK, p.BN, p.DType.Bytes, p.BM, p.BN, p.DType.OutBytes, p.BM, p.BN, MiB(p.VMEMBytes()))
}

// MiB formats bytes as MiB.
func MiB(b int64) string { return fmt.Sprintf("%.4g MiB", float64(b)/mib) }

// CheckError is why a Matmul cannot run: Field names what is wrong ("m", "bm", "bk", "bn", "dtype",
// "epilogue", "blocks" for the VMEM footprint, "grid" for too many steps).
type CheckError struct {
	Field string
	Msg   string
}

func (e *CheckError) Error() string { return e.Msg }

func checkErr(field, format string, args ...any) error {
	return &CheckError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Check reports why p cannot run, as a *CheckError: sizes not positive, block sizes that are not whole
// vregs (bm a multiple of 8 sublanes, bk and bn of 128 lanes, which is also the MXU's width), int8 on a
// generation without it, an unknown epilogue, a grid of more than MaxSteps steps, or blocks that do
// not fit the core's VMEM (with the arithmetic).
func (p Matmul) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"m", p.M}, {"k", p.K}, {"n", p.N}, {"bm", p.BM}, {"bk", p.BK}, {"bn", p.BN}} {
		if f.v < 1 {
			return checkErr(f.name, "%s is %d: m, k, n, bm, bk and bn must be positive", f.name, f.v)
		}
	}
	if p.BM%Sublanes != 0 {
		return checkErr("bm", "bm is %d: a block's second-last dimension spans the %d sublanes of a vreg, so bm must be a multiple of %d", p.BM, Sublanes, Sublanes)
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"bk", p.BK}, {"bn", p.BN}} {
		if b.v%Lanes != 0 {
			return checkErr(b.name, "%s is %d: a block's last dimension spans the %d lanes of a vreg and the MXU is %d wide, so %s must be a multiple of %d",
				b.name, b.v, Lanes, MXUSize, b.name, Lanes)
		}
	}
	if p.DType.Name == "int8" && p.Gen.PeakInt8 == 0 {
		return checkErr("dtype", "TPU %s has no published int8 rate; use bf16 or f32", p.Gen.Name)
	}
	if _, ok := Epilogues[p.Epilogue]; !ok {
		return checkErr("epilogue", "unknown epilogue %q; known: none, relu, bias_relu", p.Epilogue)
	}
	if s := p.Steps(); s > MaxSteps {
		return checkErr("grid", "the grid has %d steps; the model walks at most %d: use bigger blocks or a smaller matrix", s, MaxSteps)
	}
	if v := p.VMEMBytes(); v > p.Gen.VMEM {
		return checkErr("blocks", "these blocks do not fit in VMEM: %s, more than the %s of VMEM of a TPU %s TensorCore; use smaller blocks",
			p.VMEMArithmetic(), MiB(p.Gen.VMEM), p.Gen.Name)
	}
	return nil
}

// streamCycles is the cycles one weight tile's r LHS rows take to stream through an MXU: r for bf16
// and f32 (whose 3 passes are counted as 3 tiles), r scaled by the bf16/int8 rate ratio for int8.
func (p Matmul) streamCycles() int64 {
	r := int64(p.BM)
	if p.DType.Name == "int8" {
		return int64(math.Ceil(float64(r) * p.Gen.PeakBF16 / p.Gen.PeakInt8))
	}
	return r
}

// TileRunCycles is the cycles one MXU of side n takes for t weight tiles of r rows each, streamed
// back to back: n to load the first tile's weights, then max(r, n) per further tile (its weights load
// while the previous tile streams), then r + 2n − 2 to stream, fill and drain the last. For t = 1 it
// is sim/systolicarray's count for one tile, n + r + 2n − 2.
func TileRunCycles(n, r, t int64) int64 {
	if t <= 0 {
		return 0
	}
	return n + (t-1)*max(r, n) + r + 2*n - 2
}

// BlockCycles is the MXU cycles of one grid step: the block's (bk/128)·(bn/128)·passes weight tiles
// shared out over the MXUs, timed by the busiest MXU (TileRunCycles).
func (p Matmul) BlockCycles() int64 {
	tiles := int64(p.BK/MXUSize) * int64(p.BN/MXUSize) * int64(p.DType.Passes)
	perMXU := (tiles + int64(p.Gen.MXUs) - 1) / int64(p.Gen.MXUs)
	return TileRunCycles(MXUSize, p.streamCycles(), perMXU)
}

// vregCycles is the VPU cycles of one pass over a bm×bn f32 block: one 8×128 vreg per cycle.
func (p Matmul) vregCycles() int64 {
	return int64(ceilDiv(p.BM, Sublanes)) * int64(p.BN/Lanes)
}

// EpilogueCycles is the VPU cycles of the epilogue on one output block: the cast plus the epilogue's
// operations, one vreg pass each.
func (p Matmul) EpilogueCycles() int64 {
	return int64(1+Epilogues[p.Epilogue]) * p.vregCycles()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// errCancelled wraps ctx's error.
func cancelled(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tpu model: %w", err)
	}
	return nil
}
