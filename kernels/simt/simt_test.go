package simt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/kernels"
)

// One warp loads 32 float32s. Row-contiguous: 128 bytes = 4 sectors. Column-strided (stride 64
// floats = 256 bytes): every lane its own sector = 32.
func TestSectorsOfKnownPatterns(t *testing.T) {
	for _, tt := range []struct {
		name          string
		stride        int
		sectors, used int64
	}{
		{"row-contiguous", 1, 4, 128},
		{"column-strided", 64, 32, 128},
		{"stride 2", 2, 8, 128},
		{"broadcast", 0, 1, 4}, // every lane reads the same word: one sector, 4 of its 32 bytes used
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGlobal("X", make([]float32, 32*64))
			c, err := Launch(context.Background(), Config{Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}, func(th *Thread) {
				g.Load(th, th.ThreadIdx.X*tt.stride)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.GlobalLoads != 1 || c.LoadSectors != tt.sectors || c.BytesUsed != tt.used {
				t.Errorf("got %d requests, %d sectors, %d bytes used; want 1, %d, %d", c.GlobalLoads, c.LoadSectors, c.BytesUsed, tt.sectors, tt.used)
			}
			if want := float64(tt.used) / float64(32*tt.sectors); c.CoalescingEfficiency() != want {
				t.Errorf("efficiency %g, want %g", c.CoalescingEfficiency(), want)
			}
		})
	}
}

// Shared memory: stride 1 hits 32 different banks (no conflict); stride 32 puts all 32 lanes on bank
// 0 at different words (32-way); all lanes reading one word is a broadcast (no conflict).
func TestBankConflictsOfKnownPatterns(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stride    int
		ways      int64
		conflicts int64
	}{{"stride 1", 1, 1, 0}, {"stride 2", 2, 2, 1}, {"stride 32", 32, 32, 31}, {"broadcast", 0, 1, 0}, {"stride 33", 33, 1, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Launch(context.Background(), Config{Block: Dim3{32, 1, 1}}, func(th *Thread) {
				s := SharedArray[float32](th, "S", 32*33)
				s.Load(th, th.ThreadIdx.X*tt.stride)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.SharedLoads != 1 || c.MaxConflictWays != tt.ways || c.BankConflicts != tt.conflicts {
				t.Errorf("got %d requests, %d-way, %d extra; want 1, %d-way, %d extra", c.SharedLoads, c.MaxConflictWays, c.BankConflicts, tt.ways, tt.conflicts)
			}
		})
	}
}

func TestBarrierMismatchIsAnErrorNotAHang(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := Launch(context.Background(), Config{Block: Dim3{64, 1, 1}}, func(th *Thread) {
			if th.ThreadIdx.X < 40 { // a barrier only some threads reach
				th.SyncThreads()
			}
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "barrier mismatch") || !strings.Contains(err.Error(), "40 threads wait") {
			t.Errorf("got %v, want a barrier mismatch with 40 threads waiting", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hung on a barrier mismatch")
	}
}

func TestOutOfBoundsIsAnError(t *testing.T) {
	g := NewGlobal("A", make([]float32, 10))
	_, err := Launch(context.Background(), Config{Block: Dim3{32, 1, 1}}, func(th *Thread) { g.Load(th, th.ThreadIdx.X) })
	if err == nil || !strings.Contains(err.Error(), "out-of-bounds global load A[10]") || !strings.Contains(err.Error(), "thread (10,0,0)") {
		t.Errorf("got %v, want the first out-of-bounds thread named", err)
	}
}

func TestBarriersAndSharedMemoryAreCoherent(t *testing.T) {
	// Every thread writes its index, waits, then reads its neighbour's: only right with a real barrier.
	out := NewGlobal("out", make([]float32, 256))
	c, err := Launch(context.Background(), Config{Grid: Dim3{2, 1, 1}, Block: Dim3{128, 1, 1}}, func(th *Thread) {
		s := SharedArray[float32](th, "s", 128)
		s.Store(th, th.ThreadIdx.X, float32(th.ThreadIdx.X))
		th.SyncThreads()
		out.Store(th, th.BlockIdx.X*128+th.ThreadIdx.X, s.Load(th, (th.ThreadIdx.X+1)%128))
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out.Data {
		if want := float32((i%128 + 1) % 128); v != want {
			t.Fatalf("out[%d] = %g, want %g", i, v, want)
		}
	}
	if c.Barriers != 2 || c.Blocks != 2 || c.Warps != 8 || c.Threads != 256 {
		t.Errorf("got %+v", c)
	}
}

// The emulated ladder computes the same product as gonum, on even and ragged sizes.
func TestLadderMatchesGonum(t *testing.T) {
	for _, n := range []int{1, 7, 32, 33, 70, 130} {
		a, b, ref := problem(t, n, uint64(n))
		for _, m := range Ladder() {
			t.Run(fmt.Sprintf("%s/n=%d", m.Name, n), func(t *testing.T) {
				C := NewGlobal("C", make([]float32, n*n))
				grid, block, k := m.Launch(NewGlobal("A", a), NewGlobal("B", b), C, n, Shape{})
				c, err := Launch(context.Background(), Config{Grid: grid, Block: block}, k)
				if err != nil {
					t.Fatal(err)
				}
				if rel := kernels.RelFrobenius(C.Data, ref); rel > 1e-5 {
					t.Errorf("relative error %g", rel)
				}
				if c.FLOPs != 2*int64(n)*int64(n)*int64(n) && m.Name != "smem" && m.Name != "regblock" {
					t.Errorf("FLOPs %d, want 2n³ = %d", c.FLOPs, 2*n*n*n)
				}
			})
		}
	}
}

// The ladder's counts tell the lesson's story at n = 64: coalescing cuts sectors, tiling cuts global
// requests, register blocking cuts shared-memory requests per FLOP.
func TestLadderCountsTellTheStory(t *testing.T) {
	const n = 64
	counts := map[string]Counts{}
	for _, m := range Ladder() {
		A, B, C := NewGlobal("A", make([]float32, n*n)), NewGlobal("B", make([]float32, n*n)), NewGlobal("C", make([]float32, n*n))
		grid, block, k := m.Launch(A, B, C, n, Shape{})
		c, err := Launch(context.Background(), Config{Grid: grid, Block: block}, k)
		if err != nil {
			t.Fatal(err)
		}
		counts[m.Name] = c
	}
	naive, coal, smem, reg := counts["naive"], counts["coalesced"], counts["smem"], counts["regblock"]
	if !(naive.CoalescingEfficiency() < 0.2 && coal.CoalescingEfficiency() > 0.5) {
		t.Errorf("coalescing efficiency naive %.2f, coalesced %.2f", naive.CoalescingEfficiency(), coal.CoalescingEfficiency())
	}
	if !(smem.GlobalLoads*8 < coal.GlobalLoads && smem.BankConflicts == 0) {
		t.Errorf("global load requests coalesced %d, smem %d (conflicts %d)", coal.GlobalLoads, smem.GlobalLoads, smem.BankConflicts)
	}
	perFLOP := func(c Counts) float64 { return float64(c.SharedLoads) / float64(c.FLOPs) }
	if reg.BankConflicts != 0 {
		t.Errorf("regblock has %d bank conflicts (max %d-way): the A-tile padding or strided B columns regressed", reg.BankConflicts, reg.MaxConflictWays)
	}
	if !(perFLOP(reg)*2 < perFLOP(smem)) {
		t.Errorf("shared loads per FLOP smem %.4f, regblock %.4f", perFLOP(smem), perFLOP(reg))
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	A := NewGlobal("A", make([]float32, 64*64))
	grid, block, k := Ladder()[0].Launch(A, A, NewGlobal("C", make([]float32, 64*64)), 64, Shape{})
	if _, err := Launch(ctx, Config{Grid: grid, Block: block}, k); err != context.Canceled {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// BenchmarkNaive256 is the speed target: the naive kernel at n = 256 with full tracing in ≤ 5 s on
// 2 cores. go test -run '^$' -bench Naive256 -benchtime 3x ./kernels/simt
func BenchmarkNaive256(b *testing.B) {
	const n = 256
	rng := rand.New(rand.NewPCG(1, 1))
	a, bb := make([]float32, n*n), make([]float32, n*n)
	kernels.Random(rng, a)
	kernels.Random(rng, bb)
	A, B, C := NewGlobal("A", a), NewGlobal("B", bb), NewGlobal("C", make([]float32, n*n))
	grid, block, k := Ladder()[0].Launch(A, B, C, n, Shape{})
	for b.Loop() {
		if _, err := Launch(context.Background(), Config{Grid: grid, Block: block}, k); err != nil {
			b.Fatal(err)
		}
	}
}

func TestModelTime(t *testing.T) {
	g, err := LookupGPU("h100 sxm")
	if err != nil {
		t.Fatal(err)
	}
	mem := ModelTime(Counts{FLOPs: 2e6, LoadSectors: 1e6}, g) // 32 MB, 2 MFLOP: memory bound
	if mem.Bound != "memory" || mem.Seconds != 32e6/3.35e12 {
		t.Errorf("got %+v", mem)
	}
	cmp := ModelTime(Counts{FLOPs: 2e12, LoadSectors: 1}, g)
	if cmp.Bound != "compute" || cmp.Seconds != 2e12/67e12 {
		t.Errorf("got %+v", cmp)
	}
	if _, err := LookupGPU("V100"); err == nil || !strings.Contains(err.Error(), "H100 SXM, A100 SXM, T4, RTX 4080") {
		t.Errorf("got %v", err)
	}
}

// Shapes change the launch, not the result: other blocks and tiles still compute A·B.
func TestShapes(t *testing.T) {
	const n = 48
	a, b, ref := problem(t, n, 9)
	for _, tt := range []struct {
		kernel string
		shape  Shape
	}{{"naive", Shape{Block: Dim3{16, 16, 1}}}, {"coalesced", Shape{Block: Dim3{8, 32, 1}}}, {"smem", Shape{Tile: 16}}, {"smem", Shape{Tile: 8}}} {
		m, _ := LadderKernel(tt.kernel)
		C := NewGlobal("C", make([]float32, n*n))
		grid, block, k := m.Launch(NewGlobal("A", a), NewGlobal("B", b), C, n, tt.shape)
		if _, err := Launch(context.Background(), Config{Grid: grid, Block: block}, k); err != nil {
			t.Fatal(err)
		}
		if rel := kernels.RelFrobenius(C.Data, ref); rel > 1e-5 {
			t.Errorf("%s %+v: relative error %g", tt.kernel, tt.shape, rel)
		}
	}
}

// problem draws random n×n inputs and their product from gonum, widened to float64.
func problem(t *testing.T, n int, seed uint64) (a, b []float32, ref []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 6))
	a, b = make([]float32, n*n), make([]float32, n*n)
	kernels.Random(rng, a)
	kernels.Random(rng, b)
	want := make([]float32, n*n)
	if err := kernels.Gonum(context.Background(), want, a, b, n, n, n, kernels.Options{}); err != nil {
		t.Fatal(err)
	}
	ref = make([]float64, len(want))
	for i, v := range want {
		ref[i] = float64(v)
	}
	return a, b, ref
}
