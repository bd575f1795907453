package builtin

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

func env() cells.Env {
	return cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), Limits: harness.DefaultLimits()}
}

// Every kind decodes its spec the same strict way: a key written twice, an unknown key, a second
// YAML document, a fraction where a whole number is wanted, an alias, an over-long value, an invalid
// id, a spec over the size cap and an empty cell are line-numbered errors; every kind accepts an
// `id:` key; every kind has a browser module.
func TestEveryKindIsStrict(t *testing.T) {
	// A valid source per kind, and the same with a fraction for a whole-number key (on line 1).
	valid := map[string][2]string{
		"matmul":    {"kernels: [ikj]\nsizes: [8]\n", "sizes: [8.5]\nkernels: [ikj]\n"},
		"simt":      {"kernels: [naive]\nn: 8\n", "n: 8.5\nkernels: [naive]\n"},
		"systolic":  {"array: 4\nm: 4\nn: 4\nk: 4\n", "array: 4.5\nm: 4\nn: 4\nk: 4\n"},
		"allreduce": {"gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\n", "gpus: [2.5]\ngradient_mb: 1\nlinks: {a: 1}\n"},
		"roofline":  {"kernels: [ikj]\nsizes: [8]\n", "sizes: [8.5]\nkernels: [ikj]\n"},
		"budget":    {"flops: 1e9\n", "cluster: [8.5]\nflops: 1e9\n"},
		"cuda":      {"kernel: k\nsizes: [8]\n", "sizes: [8.5]\nkernel: k\n"},
		"wgsl":      {"entry: k\nsizes: [8]\n", "sizes: [8.5]\nentry: k\n"},
		"tpu":       {"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\n", "m: 8.5\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\n"},
		"precision": {"count: 8\n", "count: 8.5\n"},
	}
	kinds := Kinds(env())
	if len(kinds) != len(valid) {
		t.Fatalf("%d kinds, %d in this test: add the new kind here", len(kinds), len(valid))
	}
	for _, k := range kinds {
		src, ok := valid[k.Name()]
		if !ok {
			t.Fatalf("no valid source for kind %s in this test", k.Name())
		}
		body, second := "", "---\n"+src[0]
		if k.Name() == "cuda" { // a YAML header, a line ---, then the kernel: a second document starts "--- …"
			body, second = "---\nk(", "--- {dtype: float64}\n"
		}
		if k.Name() == "wgsl" { // as cuda's
			body, second = "---\nfn k(", "--- {dtype: float32}\n"
		}
		lines := strings.Count(src[0], "\n")
		if _, err := k.Parse(cells.Cell{Source: src[0] + "id: my-cell\n" + body}); err != nil {
			t.Errorf("%s: id key refused: %v", k.Name(), err)
		}
		if k.Script() == "" {
			t.Errorf("%s: no browser module", k.Name())
		}
		first, _, _ := strings.Cut(src[0], "\n")
		for name, tt := range map[string]struct {
			src, want string
			line      int
		}{
			"twice":    {src[0] + first + "\n" + body, "appears twice", lines + 1},
			"unknown":  {src[0] + "speed: 3\n" + body, `unknown key "speed"; known keys: id, `, lines + 1},
			"fraction": {src[1] + body, "is not a whole number", 1},
			"document": {src[0] + second + body, "a cell holds one YAML document", lines + 1},
			"alias":    {src[0] + "x: &a 1\ny: *a\n" + body, "YAML aliases (*a) are not allowed", lines + 2},
			"long":     {src[0] + "id: " + strings.Repeat("x", 300) + "\n" + body, "a key or value of 300 bytes is too long; a cell's keys and values are at most 256 bytes", lines + 1},
			"bad id":   {src[0] + "id: Not_OK\n" + body, `id "Not_OK": use 1 to 64 lower-case letters`, lines + 1},
			"big":      {src[0] + strings.Repeat("# a comment\n", 1500) + body, "a cell's YAML is at most 16384 bytes", 0},
		} {
			_, err := k.Parse(cells.Cell{Source: tt.src})
			var se *cells.SpecError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) || se.Line != tt.line {
				t.Errorf("%s, %s: got %v, want a *cells.SpecError at line %d with %q", k.Name(), name, err, tt.line, tt.want)
			}
		}
		want := "empty"
		if k.Name() == "cuda" || k.Name() == "wgsl" {
			want = "no `---` line"
		}
		if _, err := k.Parse(cells.Cell{Source: ""}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s, empty: got %v, want %q", k.Name(), err, want)
		}
	}
}

// A second YAML document is an error, not silently ignored.
func TestOneDocument(t *testing.T) {
	var v struct {
		A int `yaml:"a"`
	}
	err := cells.Decode("a: 1\n---\na: 2\n", &v)
	var se *cells.SpecError
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(err.Error(), "one YAML document") {
		t.Errorf("got %v, want an error at line 2 (the ---) about one document", err)
	}
}

// Every kind takes a `machine:` key (a class of machine, same characters as an id), and cells.Parse
// adds it to the run's Needs beside what the kind needs.
func TestMachineKey(t *testing.T) {
	kinds := Kinds(env())
	matmul, _ := cells.Lookup(kinds, "matmul")
	r, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj, cublas]\nsizes: [8]\nmachine: lab-a\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cells.NeedsOf(r), (cells.Needs{GPU: true, Machine: "lab-a"}); got != want {
		t.Errorf("needs %+v, want %+v", got, want)
	}
	r, err = cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\n"})
	if err != nil || cells.NeedsOf(r) != (cells.Needs{}) {
		t.Errorf("a CPU cell without machine: needs %+v, %v", cells.NeedsOf(r), err)
	}
	if _, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\nmachine: Lab_A\n"}); err == nil || !strings.Contains(err.Error(), `machine "Lab_A": use 1 to 64 lower-case letters`) {
		t.Errorf("a bad machine class: %v", err)
	}
	// The class picked for the whole page applies where the cell names none; the cell's key wins.
	for _, tt := range []struct{ src, page, want string }{
		{"kernels: [ikj]\nsizes: [8]\n", "lab-b", "lab-b"},
		{"kernels: [ikj]\nsizes: [8]\nmachine: lab-a\n", "lab-b", "lab-a"},
		{"kernels: [ikj]\nsizes: [8]\nmachine: lab-a\n", "", "lab-a"},
	} {
		r, err := cells.Parse(matmul, "", cells.Cell{Source: tt.src, Machine: tt.page})
		if err != nil {
			t.Fatal(err)
		}
		if got := cells.NeedsOf(r).Machine; got != tt.want {
			t.Errorf("%q with the page's class %q: needs class %q, want %q", tt.src, tt.page, got, tt.want)
		}
	}
	if got := (cells.Cell{Source: "kernels: [ikj]\nmachine: lab-a\n", Machine: "lab-b"}).PageClass(); got != "" {
		t.Errorf("the page's class of a cell that names its own: %q, want none", got)
	}
	if got := (cells.Cell{Source: "kernels: [ikj]\n", Machine: "lab-b"}).PageClass(); got != "lab-b" {
		t.Errorf("the page's class of a cell that names none: %q, want lab-b", got)
	}
	if _, err := cells.Parse(matmul, "", cells.Cell{Source: "kernels: [ikj]\nsizes: [8]\n", Machine: "Lab A"}); err == nil || !strings.Contains(err.Error(), `the page's machine class "Lab A": use 1 to 64 lower-case letters`) {
		t.Errorf("a bad class for the page: %v", err)
	}
	for _, k := range kinds {
		src := map[string]string{"matmul": "kernels: [ikj]\nsizes: [8]\n", "simt": "kernels: [naive]\nn: 8\n", "systolic": "array: 4\nm: 4\nn: 4\nk: 4\n",
			"allreduce": "gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\n", "roofline": "kernels: [ikj]\nsizes: [8]\n", "cuda": "kernel: k\nsizes: [8]\n---\nk(",
			"tpu": "m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\n"}[k.Name()]
		switch k.Name() {
		case "cuda":
			src = "kernel: k\nsizes: [8]\nmachine: lab-a\n---\nk("
		case "wgsl":
			src = "entry: k\nsizes: [8]\nmachine: lab-a\n---\nfn k() {}"
		case "budget":
			src = "workload: gpt3-training\nmachine: lab-a\n"
		default:
			src += "machine: lab-a\n"
		}
		if _, err := k.Parse(cells.Cell{Source: src}); err != nil {
			t.Errorf("%s: machine key refused: %v", k.Name(), err)
		}
	}
}
