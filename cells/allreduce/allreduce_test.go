package allreduce

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
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

// The result is a grid: one row per link, one column per GPU count, in the spec's order, for the
// time and for the bus bandwidth.
func TestAllReduceRunIsALinkByGPUGrid(t *testing.T) {
	r, err := New(cells.Env{}).Parse(cells.Cell{ID: "c", Source: "gradient_mb: 1000\ngpus: [2, 8, 1024]\nlinks: {fast: 100, slow: 10}\nlatency_us: 0"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := r.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Tables) != 2 {
		t.Fatalf("got %d tables, want model and busbw", len(rec.Tables))
	}
	var labels []string
	for _, c := range rec.Tables[0].Columns {
		labels = append(labels, c.Label+"/"+c.Unit)
	}
	if got, want := strings.Join(labels, ","), "link/,2 GPUs/ms,8 GPUs/ms,1,024 GPUs/ms"; got != want {
		t.Errorf("model columns %s, want %s", got, want)
	}
	rows := rec.RowsOf("model")
	if len(rows) != 2 || rows[0].Values[0] != "fast" || rows[1].Values[0] != "slow" || len(rows[1].Values) != 4 {
		t.Fatalf("model rows %v, want fast and slow with 3 times each", rows)
	}
	// slow link, 2 GPUs: 2 steps of 0.5 GB at 10 GB/s = 100 ms.
	if got := fmt.Sprintf("%.4g", rows[1].Values[1]); got != "100" {
		t.Errorf("slow, 2 GPUs: %s ms, want 100", got)
	}
	if bus := rec.RowsOf("busbw"); len(bus) != 2 || len(bus[0].Values) != 4 {
		t.Errorf("busbw rows %v, want 2 rows of 3 values", bus)
	}
}

// The other collectives: an all-gather (or reduce-scatter) of 1 GB over 4 GPUs at 10 GB/s is 3 steps
// of 0.25 GB, 75 ms, half the all-reduce; its bus bandwidth is still the link's.
func TestOtherCollectives(t *testing.T) {
	for _, op := range []string{"all-gather", "reduce-scatter"} {
		s, err := Parse("gradient_mb: 1000\ngpus: [4]\nlinks: {a: 10}\nlatency_us: 0\nop: " + op)
		if err != nil {
			t.Fatal(err)
		}
		pts := Model(s)
		if len(pts) != 1 || math.Abs(pts[0].Seconds-0.075) > 1e-12 || math.Abs(pts[0].BusGBs-10) > 1e-9 {
			t.Errorf("%s: %+v, want 0.075 s at a bus bandwidth of 10 GB/s", op, pts)
		}
	}
	if _, err := Parse("gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\nop: broadcast"); err == nil || !strings.Contains(err.Error(), "line 4: op is all-reduce, tree all-reduce, all-gather or reduce-scatter") {
		t.Errorf("broadcast: %v", err)
	}
}

func FuzzParseAllReduce(f *testing.F) {
	for _, s := range []string{"gradient_mb: 1400\ngpus: [2, 4]\nlinks: {NVLink 4: 450}", "gradient_mb: 1\ngpus: [1, 65536]\nlinks: {a: 1, b: 2}\nlatency_us: 0\nop: all-gather", "gradient_mb: 10\ngpus: [8]\nlinks: {x: 1e6}\nop: reduce-scatter"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var se *cells.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *cells.SpecError", src, err)
			}
			return
		}
		// A valid spec models a finite, non-negative time for every link and GPU count, zero for one GPU.
		pts := Model(s)
		if len(pts) != len(s.Links)*len(s.GPUs) {
			t.Fatalf("%q: %d points", src, len(pts))
		}
		for _, p := range pts {
			if !(p.Seconds >= 0) || math.IsInf(p.Seconds, 0) || (p.GPUs == 1) != (p.Seconds == 0) {
				t.Fatalf("%q: %+v", src, p)
			}
		}
	})
}

// The tree op models the double binary tree: at 1,024 GPUs and a small message it beats the ring,
// whose latency grows with the GPUs; the table's caption names it.
func TestTreeAllReduce(t *testing.T) {
	src := "gradient_mb: 1\ngpus: [8, 1024]\nlinks: {IB: 50}\nlatency_us: 5\nop: "
	tree, err := Parse(src + "tree all-reduce")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := Parse(src + "all-reduce")
	if err != nil {
		t.Fatal(err)
	}
	tp, rp := Model(tree), Model(ring)
	if got, want := tp[1].Seconds, 2*10*5e-6+2*1e6/50e9; math.Abs(got-want) > 1e-12 {
		t.Errorf("tree at 1,024 GPUs: %g s, want %g", got, want)
	}
	if tp[1].Seconds >= rp[1].Seconds {
		t.Errorf("1 MB on 1,024 GPUs: tree %g s, ring %g s: want the tree faster", tp[1].Seconds, rp[1].Seconds)
	}
	if got := opName(tree.Op); got != "double-binary-tree all-reduce" {
		t.Errorf("caption names %q", got)
	}
}
