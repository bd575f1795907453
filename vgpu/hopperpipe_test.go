package vgpu

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// hopperPipe is a warp-specialised Hopper GEMM tile, C (64×64, f32) = A (64×256) · Bᵀ (B 64×256),
// bf16 inputs: warp 0's elected thread loads 64×64 tiles of A and B with 2-D TMA copies (128-byte
// swizzle) into a ring of 2 stages, waiting on each stage's "empty" barrier and announcing the
// bytes on its "full" barrier; warpgroup 1 (warps 4–7) waits on "full", runs 4 wgmma.m64n64k16
// per tile from the swizzled stage, commits, waits for the group and arrives on "empty", and
// stores its accumulators after the K loop. bug 1 waits only after the loop (a stage is released
// while its wgmma may still read it); bug 2 never waits for the last tile's group.
const hopperPipe = tmaAsm + `
__device__ unsigned long long desc(unsigned a) { // K-major, 128-byte swizzle: 8-row atoms 1024 bytes apart
	return ((a & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}
extern "C" __global__ void __launch_bounds__(256) k(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, float* C, int bug) {
	__shared__ alignas(1024) unsigned short sA[2][64 * 64], sB[2][64 * 64];
	__shared__ unsigned long long full[2], empty[2];
	int t = threadIdx.x, warp = t / 32;
	if (t == 0) for (int s = 0; s < 2; s++) { mb_init(smem(&full[s]), 1); mb_init(smem(&empty[s]), 128); }
	__syncthreads();
	if (warp == 0) {
		if (t == 0) for (int kt = 0; kt < 4; kt++) {
			int s = kt % 2;
			mb_wait_parity(smem(&empty[s]), ((kt / 2) & 1) ^ 1);
			mb_arrive_tx(smem(&full[s]), 2 * 64 * 64 * 2);
			tma_2d(smem(sA[s]), &ta, 64 * kt, 0, smem(&full[s]));
			tma_2d(smem(sB[s]), &tb, 64 * kt, 0, smem(&full[s]));
		}
		return;
	}
	if (warp < 4) return;
	float d[32];
	for (int j = 0; j < 32; j++) d[j] = 0;
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
	for (int kt = 0; kt < 4; kt++) {
		int s = kt % 2;
		mb_wait_parity(smem(&full[s]), (kt / 2) & 1);
		for (int ks = 0; ks < 4; ks++) {
			unsigned long long da = desc(smem(sA[s]) + 32 * ks), db = desc(smem(sB[s]) + 32 * ks);
			asm volatile("{ wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
				"{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
				"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0; }"
				: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
				  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
				  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
				  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
				: "l"(da), "l"(db) : "memory");
		}
		asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
		if (bug == 0 || (bug == 2 && kt < 3)) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
		mb_arrive(smem(&empty[s]));
	}
	if (bug == 1) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
	int wq = warp - 4, g = (t % 32) / 4, tt = t % 4;
	for (int j = 0; j < 32; j++) {
		int row = 16 * wq + g + 8 * ((j >> 1) & 1), col = 8 * (j >> 2) + 2 * tt + (j & 1);
		C[row * 64 + col] = d[j];
	}
}
`

func runHopperPipe(t *testing.T, m *Module, bug int) ([]float32, []float32, Counts, error) {
	t.Helper()
	const K = 256
	af, ah := halfInputs(64*K, 3, false)
	bf, bh := halfInputs(64*K, 4, false)
	A, B, C := Uint16Buffer("A", ah), Uint16Buffer("B", bh), NewOutput("C", 4*64*64, Poisoned)
	tm := func(b *Buffer) Arg {
		return TensorMapArg(TensorMap{Buffer: b, ElemBytes: 2, Dims: []int{K, 64}, Strides: []int64{2 * K}, Box: []int{64, 64}, Swizzle: Swizzle128B})
	}
	cnt, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{256},
		Params: []Arg{tm(A), tm(B), Ptr(C), S32(int32(bug))}, Buffers: []*Buffer{A, B, C}})
	want := make([]float32, 64*64)
	for i := range 64 {
		for j := range 64 {
			for k := range K {
				want[i*64+j] += af[i*K+k] * bf[j*K+k]
			}
		}
	}
	return C.Float32s(), want, cnt, err
}

// The correct pipeline matches the CPU with no fault and no note (the accumulators chain across
// waits); forgetting the wait before releasing a stage lets the producer's TMA refill overwrite a
// tile a wgmma may still read (a hazard at the copy naming the wgmma), and leaving the last group
// unwaited stores stale accumulators (a hazard at the store naming the wgmma).
func TestHopperWarpSpecialisedGEMM(t *testing.T) {
	m := compileSM90(t, hopperPipe)
	got, want, c, err := runHopperPipe(t, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("C[%d][%d] = %v, want %v", i/64, i%64, got[i], want[i])
		}
	}
	if len(c.Notes) != 0 || c.TMARequests != 8 || c.TMABytes != 8*8192 || c.GmmaInstructions != 4*16 {
		t.Errorf("notes %v, TMA requests %d, bytes %d, gmma %d; want none, 8, 65536, 64", c.Notes, c.TMARequests, c.TMABytes, c.GmmaInstructions)
	}
	for bug, at := range map[int]string{1: "cp.async.bulk.tensor", 2: "st.global"} {
		_, _, _, err := runHopperPipe(t, m, bug)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Instr, at) || !strings.Contains(f.OtherInstr, "wgmma.mma_async") {
			t.Errorf("bug %d: %v, want a hazard at %s naming the wgmma", bug, err, at)
		}
	}
}

// A counted barrier orders wgmma's shared operands as an mbarrier does: warps 1–3 write a stage of
// A after a bar.sync 1, 224 that warpgroup 1 reaches after its wgmma.wait_group and C stores (an
// FA3-style epilogue staging through shared memory): no hazard, the product still right. (Found by
// review: the counted barrier ordered the racecheck but not the wgmma-operand clocks.)
func TestNamedBarrierOrdersWgmmaOperands(t *testing.T) {
	src := strings.Replace(hopperPipe, "		return;\n	}\n	if (warp < 4) return;", `		return;
	}
	if (warp < 4) {
		asm volatile("bar.sync 1, 224;" ::: "memory");
		sA[0][t] = 7;
		return;
	}`, 1)
	src = strings.Replace(src, "		C[row * 64 + col] = d[j];\n	}\n", "		C[row * 64 + col] = d[j];\n	}\n	asm volatile(\"bar.sync 1, 224;\" ::: \"memory\");\n", 1)
	if strings.Count(src, "bar.sync 1, 224") != 2 {
		t.Fatal("the kernel's text moved: the test's edits did not apply")
	}
	m := compileSM90(t, src)
	if _, _, _, err := runHopperPipe(t, m, 0); err != nil {
		t.Fatalf("got %v, want no fault", err)
	}
}
