package vgpurun

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/internal/golden"
)

// goldenFile, when set, makes TestGoldenRuns record (the file is missing) or check (it exists) a
// digest of the results of the ladder's emulated runs, sampled ones included (their blocks, the
// entries checked and their error): the guard for changes that must not change a result.
//
//	go test ./vgpurun -run TestGoldenRuns -golden /tmp/golden-runs.txt
var goldenFile = flag.String("golden", "", "record or check the runs' digests in this file")

func TestGoldenRuns(t *testing.T) {
	if *goldenFile == "" {
		t.Skip("no -golden file")
	}
	g, err := gpumodel.LookupGPU("H100 SXM")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range Ladder() {
		for _, n := range []int{100, MaxN + 36} {
			r, err := Run(context.Background(), Request{Kernel: "cuda-" + k, N: n, DType: "float32", GPU: g, Seed: 7})
			if err != nil {
				t.Fatalf("%s n=%d: %v", k, n, err)
			}
			r.EmulationSeconds = 0
			notes := make([]string, len(r.Notes))
			for i, f := range r.Notes {
				notes[i] = f.Error()
			}
			r.Notes, r.Counts.Notes = nil, nil
			r.SASS = nil // a function: its address differs between binaries (SASSInstructions stays)
			h := sha256.Sum256(fmt.Appendf(nil, "%v %+v %q %x", err, r, notes, r.RelError))
			got = append(got, fmt.Sprintf("%s n=%d %x", k, n, h))
		}
	}
	golden.Check(t, *goldenFile, got)
}
