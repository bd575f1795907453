package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/simt"
	"gopkg.in/yaml.v3"
)

// SIMTSpec is a parsed `simt` cell, which runs the ladder in the SIMT emulator:
//
//	kernels: [naive, coalesced, smem, regblock]   # emulated versions of the cuda-* kernels
//	n: 128                                        # square n×n×n, at most 512
//	gpu: H100 SXM                                 # whose datasheet the modelled time uses
//	block: [32, 8]                                # naive and coalesced (default as in matmul.cu)
//	tile: 32                                      # smem: 8, 16 or 32 (default 32); regblock is fixed
//	watch: true                                   # n ≤ 32: frames of the first kernel's warps
type SIMTSpec struct {
	Kernels []string
	N       int
	GPU     simt.GPU
	Shape   simt.Shape
	Watch   bool
}

// MaxWatchN is the largest n a simt cell can watch, and MaxWatchFrames the frames it sends.
const (
	MaxWatchN      = 32
	MaxWatchFrames = 300
)

// WarpFrame is one global-memory warp instruction of block (0,0) of a watched kernel: which element
// of which matrix each active lane touched, and in which of the instruction's 32-byte sectors.
type WarpFrame struct {
	Kernel string `json:"kernel"`
	// N is the matrices' size (n×n).
	N    int `json:"n"`
	Warp int `json:"warp"`
	// Kind is "global load" or "global store"; Matrix is "A", "B" or "C".
	Kind   string `json:"kind"`
	Matrix string `json:"matrix"`
	// Lanes lists [lane, row, col, sector] per active lane; sector numbers the instruction's distinct
	// sectors from 0.
	Lanes   [][4]int `json:"lanes"`
	Sectors int      `json:"sectors"`
}

// MaxSIMTN bounds emulated sizes: emulation costs about a microsecond per thread-FMA on one core.
const MaxSIMTN = 512

// ParseSIMT reads a `simt` cell. Errors are *SpecError values with line numbers.
func ParseSIMT(src string) (SIMTSpec, error) {
	s := SIMTSpec{GPU: simt.GPUs[0]}
	var kernelsNode *yaml.Node
	err := eachKey(src, "kernels, n, gpu, block, tile, watch", func(key, val *yaml.Node) error {
		var err error
		switch key.Value {
		case "kernels":
			kernelsNode, err = val, decode(val, &s.Kernels, "a list of kernel names, like [naive, coalesced]")
		case "n":
			if err = decode(val, &s.N, "a whole number"); err == nil && (s.N < 1 || s.N > MaxSIMTN) {
				err = errAt(val, "n is %d; the emulator takes 1 to %d (it runs every thread on the CPU)", s.N, MaxSIMTN)
			}
		case "block":
			var b []int
			if err = decode(val, &b, "[x, y] threads, like [32, 8]"); err == nil {
				if len(b) < 1 || len(b) > 2 || b[0] < 1 || (len(b) == 2 && b[1] < 1) {
					err = errAt(val, "block is [x, y] with positive sizes")
				} else {
					s.Shape.Block = simt.Dim3{X: b[0], Y: 1, Z: 1}
					if len(b) == 2 {
						s.Shape.Block.Y = b[1]
					}
					if s.Shape.Block.Size() > 1024 {
						err = errAt(val, "a block of %d threads is too many: CUDA allows 1024", s.Shape.Block.Size())
					}
				}
			}
		case "tile":
			if err = decode(val, &s.Shape.Tile, "8, 16 or 32"); err == nil && s.Shape.Tile != 8 && s.Shape.Tile != 16 && s.Shape.Tile != 32 {
				err = errAt(val, "tile is %d; use 8, 16 or 32 (a tile×tile block of at most 1024 threads)", s.Shape.Tile)
			}
		case "watch":
			err = decode(val, &s.Watch, "true or false")
		case "gpu":
			var name string
			if err = decode(val, &name, "a GPU name"); err == nil {
				if s.GPU, err = simt.LookupGPU(name); err != nil {
					err = errAt(val, "%v", err)
				}
			}
		default:
			err = errAt(key, "unknown key %q; known keys: kernels, n, gpu, block, tile, watch", key.Value)
		}
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return SIMTSpec{}, err
	}
	if len(s.Kernels) == 0 || s.N == 0 {
		return SIMTSpec{}, &SpecError{Line: 1, Msg: "a simt cell needs `kernels: [...]` and `n: N`"}
	}
	for i, k := range s.Kernels {
		if _, err := simt.LadderKernel(k); err != nil {
			return SIMTSpec{}, errAt(kernelsNode.Content[i], "%v", err)
		}
	}
	if s.Watch && s.N > MaxWatchN {
		return SIMTSpec{}, &SpecError{Line: 1, Msg: fmt.Sprintf("watch shows n ≤ %d (every element on screen); use a smaller n or drop watch", MaxWatchN)}
	}
	return s, nil
}

// SIMTResult is one emulated kernel: what the hardware would count, whether the result is right, and
// a modelled time for the spec's GPU. Its JSON form is the body of the websocket `simt` message.
type SIMTResult struct {
	Kernel string `json:"kernel"`
	N      int    `json:"n"`
	FLOPs  int64  `json:"flops"`
	// GlobalRequests are warp-level global loads and stores; Sectors the 32-byte sectors they move;
	// BytesMoved = 32 × Sectors (no caches); Coalescing = bytes used / bytes moved.
	GlobalRequests int64   `json:"global_requests"`
	Sectors        int64   `json:"sectors"`
	BytesMoved     int64   `json:"bytes_moved"`
	Coalescing     float64 `json:"coalescing"`
	SharedRequests int64   `json:"shared_requests"`
	BankConflicts  int64   `json:"bank_conflicts"`
	Barriers       int64   `json:"barriers"`
	// Correct reports C equal to gonum's product within float32 tolerance.
	Correct bool `json:"correct"`
	// GPU, ModelledSeconds and Bound are the model: max(FLOPs / peak FP32, BytesMoved / DRAM
	// bandwidth) from GPU's datasheet. Modelled, never measured.
	GPU             string  `json:"gpu"`
	ModelledSeconds float64 `json:"modelled_seconds"`
	Bound           string  `json:"bound"`
	// EmulationSeconds is how long the emulation took on this CPU (measured).
	EmulationSeconds float64 `json:"emulation_seconds"`
	// MeasuredSeconds, where the server has a GPU, is the median time of MeasuredKernel (the cuda-*
	// kernel of matmul.cu, with its own launch shape) at the same n on MeasuredOn.
	MeasuredSeconds float64 `json:"measured_seconds,omitempty"`
	MeasuredKernel  string  `json:"measured_kernel,omitempty"`
	MeasuredOn      string  `json:"measured_on,omitempty"`
}

// RunSIMT emulates each kernel of s on fresh random inputs and passes each result to emit. With
// s.Watch, the first kernel's global warp instructions in block (0,0) go to watch first (at most
// MaxWatchFrames; nil watch skips them).
func RunSIMT(ctx context.Context, s SIMTSpec, emit func(SIMTResult), watch func(WarpFrame)) error {
	n := s.N
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	a, b := make([]float32, n*n), make([]float32, n*n)
	kernels.Random(rng, a)
	kernels.Random(rng, b)
	ref, err := reference(ctx, a, b, n)
	if err != nil {
		return err
	}
	for i, name := range s.Kernels {
		m, _ := simt.LadderKernel(name)
		A, B, C := simt.NewGlobal("A", a), simt.NewGlobal("B", b), simt.NewGlobal("C", make([]float32, n*n))
		grid, block, k := m.Launch(A, B, C, n, s.Shape)
		cfg := simt.Config{Grid: grid, Block: block}
		if s.Watch && watch != nil && i == 0 {
			cfg.Trace = watcher(name, n, watch, A, B, C)
		}
		start := time.Now()
		c, err := simt.Launch(ctx, cfg, k)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		model := simt.ModelTime(c, s.GPU)
		emit(SIMTResult{
			Kernel: name, N: n, FLOPs: c.FLOPs,
			GlobalRequests: c.GlobalLoads + c.GlobalStores, Sectors: c.LoadSectors + c.StoreSectors,
			BytesMoved: c.BytesMoved(), Coalescing: c.CoalescingEfficiency(),
			SharedRequests: c.SharedLoads + c.SharedStores, BankConflicts: c.BankConflicts, Barriers: c.Barriers,
			Correct: kernels.RelFrobenius(C.Data, ref) <= kernels.Tolerance("float32"),
			GPU:     s.GPU.Name, ModelledSeconds: model.Seconds, Bound: model.Bound,
			EmulationSeconds: time.Since(start).Seconds(),
		})
	}
	return nil
}

// watcher turns block (0,0)'s global warp instructions into frames (blocks run in parallel, but only
// block (0,0)'s goroutine gets past the first test, in order).
func watcher(kernel string, n int, watch func(WarpFrame), bufs ...*simt.Global[float32]) func(simt.WarpInstruction) {
	sent := 0
	return func(wi simt.WarpInstruction) {
		if wi.Block != (simt.Dim3{}) || sent >= MaxWatchFrames || !strings.HasPrefix(wi.Kind, "global") {
			return
		}
		f := WarpFrame{Kernel: kernel, N: n, Warp: wi.Warp, Kind: wi.Kind, Sectors: wi.Sectors}
		sectors := map[int64]int{}
		for lane, active := range wi.Active {
			if !active {
				continue
			}
			for _, g := range bufs {
				if idx, ok := g.Index(wi.Addr[lane]); ok {
					sec := wi.Addr[lane] / simt.SectorBytes
					if _, seen := sectors[sec]; !seen {
						sectors[sec] = len(sectors)
					}
					f.Matrix = g.Name
					f.Lanes = append(f.Lanes, [4]int{lane, idx / n, idx % n, sectors[sec]})
				}
			}
		}
		sent++
		watch(f)
	}
}
