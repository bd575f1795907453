package allreduce

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
)

func TestAllReduceCell(t *testing.T) {
	s, err := Parse("gradient_mb: 1000\ngpus: [1, 2, 8]\nlinks: {fast: 100, slow: 10}\nlatency_us: 0")
	if err != nil {
		t.Fatal(err)
	}
	pts := Model(s)
	if len(pts) != 6 || pts[0].Link != "fast" || pts[3].Link != "slow" || pts[0].Seconds != 0 {
		t.Fatalf("got %+v", pts)
	}
	// slow link, 2 GPUs: 2 steps of 0.5 GB at 10 GB/s = 0.1 s.
	if got := pts[4].Seconds; got < 0.0999 || got > 0.1001 {
		t.Errorf("slow, 2 GPUs: %g s, want 0.1", got)
	}
	for src, want := range map[string]string{
		"gpus: [2]\nlinks: {a: 1}":                                                                 "needs gradient_mb, gpus and links",
		"gradient_mb: 1\ngpus: [0]\nlinks: {a: 1}":                                                 "line 2: 0 GPUs",
		"gradient_mb: 1\ngpus: [2]\nlinks: {a: -1}":                                                `line 3: link "a"`,
		"gradient_mb: 1\ngpus: [2]\nlinks: [a]":                                                    "links is a map",
		"gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\nwires: 2":                                       `unknown key "wires"`,
		"gradient_mb: 1\ngpus: [" + strings.Repeat("2, ", 40) + "2]\nlinks: {a: 1}":                "line 2: 41 GPU counts; a cell models at most 32",
		"gradient_mb: 1\ngpus: [2]\nlinks: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1}": "line 3: 9 links; a cell models at most 8",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}
