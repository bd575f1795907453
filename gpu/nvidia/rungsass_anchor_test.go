package nvidia

import (
	"reflect"
	"testing"
)

// A block's copies are counted from its anchors' own opcode only: ptxas puts three never-executed
// placeholders (@!PT LDS) and a register move on a cp.async's line beside its one LDGSTS, which is
// one copy, not five (cuda_mma_swizzle's loaders, 0.82× Nsight Compute's count when the whole line
// was counted); a loop body ptxas unrolled four times has four FFMAs on its fma line, and its
// add.s32 lines, eight instructions, are charged two a run.
func TestAnchorCountsAreTheAnchorsOpcode(t *testing.T) {
	ptx := "$L__BB0_1:\n" + // 1
		"add.s32 %r3, %r1, %r2;\n" + // 2
		"cp.async.cg.shared.global [%r3], [%rd1], 16, %r4;\n" + // 3
		"@%p1 bra $L__BB0_2;\n" + // 4
		"$L__BB0_2:\n" + // 5
		"fma.rn.f32 %f1, %f2, %f3, %f1;\n" + // 6
		"add.s32 %r5, %r5, 1;\n" + // 7
		"@%p2 bra $L__BB0_2;\n" // 8
	listing := `	.section	.text.k,"ax",@progbits
	//## File "matmul.ptx", line 2
        /*0000*/                   IADD3 R3, R1, R2, RZ ;
	//## File "matmul.ptx", line 3
        /*0010*/                   @!PT LDS RZ, [RZ] ;
        /*0020*/                   @!PT LDS RZ, [RZ] ;
        /*0030*/                   @!PT LDS RZ, [RZ] ;
        /*0040*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR10][R16.64], P1 ;
        /*0050*/                   IMAD.MOV.U32 R16, RZ, RZ, R27 ;
	//## File "matmul.ptx", line 6
        /*0060*/                   FFMA R1, R2, R3, R1 ;
        /*0070*/                   FFMA R1, R2, R4, R1 ;
        /*0080*/                   @P0 FFMA R1, R2, R5, R1 ;
        /*0090*/                   FFMA R1, R2, R6, R1 ;
	//## File "matmul.ptx", line 7
        /*00a0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*00b0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*00c0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*00d0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*00e0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*00f0*/                   IADD3 R5, R5, 0x4, RZ ;
        /*0100*/                   IADD3 R5, R5, 0x4, RZ ;
        /*0110*/                   IADD3 R5, R5, 0x4, RZ ;
`
	counts := []int{0, 1, 5, 0, 0, 4, 8, 0, 0}
	anchors := anchorCounts(ptx, listing, len(counts))
	if want := []int{0, 0, 1, 0, 0, 4, 0, 0, 0}; !reflect.DeepEqual(anchors, want) {
		t.Errorf("anchor counts %v, want %v", anchors, want)
	}
	copies := blockCopies(ptx, counts, anchors)
	s := PTXLineSASS{Counts: counts, Copies: copies}
	for line, want := range map[int]float64{2: 1, 3: 5, 6: 1, 7: 2} {
		if got := s.PerLine(line); got != want {
			t.Errorf("line %d: %g SASS a run, want %g (copies %v)", line, got, want, copies)
		}
	}
}
