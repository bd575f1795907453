package vgpu

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/golden"
)

// goldenFile, when set, makes TestGoldenLaunches record (the file is missing) or check (it exists)
// a digest of every count, result and cache and trace stream of the ladder kernels' launches: the
// guard for changes to the interpreter that must not change any result or count (a speed-up).
// Run it before the change with a new file and after it with the same file:
//
//	go test ./vgpu -run TestGoldenLaunches -golden /tmp/golden.txt
var goldenFile = flag.String("golden", "", "record or check the launches' digests in this file")

// goldenCase is one launch of the golden set.
type goldenCase struct {
	kernel   string
	arch, n  int
	poisoned bool
	l1       int // the L1 share in bytes; 0: no cache model
	trace    bool
	workers  int
}

func (g goldenCase) String() string {
	return fmt.Sprintf("%s arch=%d n=%d poisoned=%v l1=%d trace=%v workers=%d", g.kernel, g.arch, g.n, g.poisoned, g.l1, g.trace, g.workers)
}

// goldenCases are every ladder kernel on every embedded architecture at ragged and tile-multiple
// sizes, with and without the initcheck, the cache model (an L1 that evicts and one that does not),
// tracing and parallel workers.
func goldenCases() []goldenCase {
	var out []goldenCase
	for _, arch := range nvidia.PTXArchs {
		for _, k := range nvidia.Kernels() {
			if k.Entry == "" || arch < k.MinCC {
				continue
			}
			for _, n := range []int{33, 64, 130} {
				out = append(out,
					goldenCase{kernel: k.Name, arch: arch, n: n, workers: 1},
					goldenCase{kernel: k.Name, arch: arch, n: n, poisoned: true, l1: 30 << 10, workers: 2},
					goldenCase{kernel: k.Name, arch: arch, n: n, poisoned: true, l1: 4 << 10, trace: true, workers: 1})
			}
		}
	}
	for _, k := range []string{"cuda-naive", "cuda-smem", "cuda-regblock"} {
		out = append(out, goldenCase{kernel: k, arch: 80, n: 256, poisoned: true, l1: 30 << 10, workers: 2})
	}
	return out
}

// goldenDigest launches g and returns a digest of its counts (as JSON), its output bytes, and the
// streams of L2 accesses and trace events it produced, or of its error.
func goldenDigest(t *testing.T, m map[int]*Module, g goldenCase) string {
	t.Helper()
	k, _ := nvidia.LookupKernel(g.kernel)
	l := k.LaunchFor(g.n, g.arch, "float32")
	_, prec := k.On(g.arch, "float32")
	rng := rand.New(rand.NewPCG(uint64(g.n), uint64(g.arch)))
	input := func(name string) *Buffer {
		x := randomMatrix(rng, l.N)
		if prec == "bf16" || prec == "f16" {
			u := make([]uint16, len(x))
			for i, v := range x {
				u[i] = roundBF16(float64(v), rmNearest, 0)
				if prec == "f16" {
					u[i] = roundF16(float64(v), rmNearest, 0)
				}
			}
			return Uint16Buffer(name, u)
		}
		return Float32Buffer(name, x)
	}
	A, B := input("A"), input("B")
	C := NewBuffer("C", 4*l.N*l.N)
	if g.poisoned {
		C = NewOutput("C", 4*l.N*l.N, Poisoned)
	}
	h := sha256.New()
	cfg := LaunchConfig{Grid: l.Grid, Block: l.Block, Buffers: []*Buffer{A, B, C}, Workers: g.workers,
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(int32(l.N)), S32(int32(l.N)), S32(int32(l.N))}}
	if g.l1 != 0 {
		cfg.Cache = &CacheConfig{L1Bytes: g.l1, L2Bytes: 1 << 20, L2Access: func(pos, buffer int, sector int64, store bool) {
			fmt.Fprintf(h, "L2 %d %d %d %v\n", pos, buffer, sector, store)
		}}
	}
	if g.trace {
		cfg.Trace = func(e TraceEvent) {
			b, _ := json.Marshal(e)
			h.Write(b)
		}
		cfg.TraceBlocks = [][3]int{{0, 0, 0}, {1, 0, 0}}
	}
	c, err := Launch(context.Background(), m[g.arch], l.Entry, cfg)
	if err != nil {
		fmt.Fprintf(h, "error %v\n", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	h.Write(b)
	h.Write(C.Data)
	binary.Write(h, binary.LittleEndian, int64(len(C.Data)))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestGoldenLaunches(t *testing.T) {
	if *goldenFile == "" {
		t.Skip("no -golden file")
	}
	m := map[int]*Module{}
	for _, arch := range nvidia.PTXArchs {
		m[arch] = loadPTX(t, arch)
	}
	var got []string
	for _, g := range goldenCases() {
		got = append(got, g.String()+" "+goldenDigest(t, m, g))
	}
	golden.Check(t, *goldenFile, got)
}
