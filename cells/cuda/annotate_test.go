package cuda

import (
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// Annotate puts each line's counts beside it: requests and their sectors or wavefronts, and the
// bank conflicts, atomic serialisation, predicated-off lanes and divergent branches where any.
func TestAnnotate(t *testing.T) {
	ptx := "ld.shared.v4.f32\nld.shared.f32\natom.global.add.u32\n@%p1 bra L;\nret;"
	lines := []vgpu.LineCount{
		{Line: 1, Thread: 32, SharedRequests: 1, Wavefronts: 4, IdealWavefronts: 4},
		{Line: 2, Thread: 32, SharedRequests: 1, Wavefronts: 2, IdealWavefronts: 1},
		{Line: 3, Thread: 32, Requests: 1, Sectors: 1, AtomicPasses: 32},
		{Line: 4, Thread: 16, PredicatedOff: 16, DivergentBranches: 1},
	}
	got := Annotate(ptx, lines)
	want := "ld.shared.v4.f32\t// 32 thr; 1 req, 4.0 wavefronts/req\n" +
		"ld.shared.f32\t// 32 thr; 1 req, 2.0 wavefronts/req, 1 bank conflicts\n" +
		"atom.global.add.u32\t// 32 thr; 1 req, 1.0 sectors/req, 31 serialised atomic passes\n" +
		"@%p1 bra L;\t// 16 thr; 16 lanes predicated off; 1 divergent\n" +
		"ret;"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
