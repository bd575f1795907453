package harness

import (
	"context"
	"runtime/metrics"
	"testing"

	"github.com/gpuplayground/playground/kernels"
)

// Small points in a row force no full GC cycle each (a server's run of 25 sizes × 8 kernels forced
// 200, 10 ms of CPU each): the heap is far from its goal, so no cycle could start during their timed
// calls anyway.
func TestSmallPointsForceFewCollections(t *testing.T) {
	sizes := make([]int, 25)
	for i := range sizes {
		sizes[i] = i + 1
	}
	s := Spec{Kernels: []string{"naive", "ikj"}, Sizes: sizes, DType: "float32", Repeats: 1, Threads: 1}
	before := forcedCycles()
	if err := Run(context.Background(), s, Env{Kernels: kernels.CPU()}, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if got, most := forcedCycles()-before, uint64(len(sizes)); got >= most {
		t.Errorf("%d points forced %d GC cycles, want fewer than %d", 2*len(sizes), got, most)
	}
}

// The heap past three quarters of its goal (a cycle under way, or one that the timed calls'
// allocations could start) is collected before timing; below, not.
func TestHeapNearGoal(t *testing.T) {
	for _, tt := range []struct {
		objects, goal uint64
		want          bool
	}{{10 << 20, 40 << 20, false}, {30 << 20, 40 << 20, false}, {31 << 20, 40 << 20, true}, {39 << 20, 40 << 20, true}, {50 << 20, 40 << 20, true}} {
		if got := heapNearGoal(tt.objects, tt.goal); got != tt.want {
			t.Errorf("heapNearGoal(%d MiB, %d MiB) = %v, want %v", tt.objects>>20, tt.goal>>20, got, tt.want)
		}
	}
}

// forcedCycles is how many GC cycles runtime.GC has forced in this process.
func forcedCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
